// Replays the seeds of the ShouldRateLimit request fuzz target (fuzz/corpus/envoy_request, where
// inputs that once broke it are kept) through its harness in the normal build, plus a few
// hand-made edge cases: a broken invariant aborts the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "envoy_request_harness.h"

namespace rl::fuzz {
namespace {

TEST(EnvoyRequestFuzzReplay, Seeds) {
  size_t files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(FUZZ_CORPUS_DIR) + "/envoy_request")) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream data;
    data << in.rdbuf();
    SCOPED_TRACE(entry.path().string());
    RunEnvoyRequest(data.str());
    ++files;
  }
  EXPECT_GE(files, 6u);
}

TEST(EnvoyRequestFuzzReplay, EdgeCases) {
  RunEnvoyRequest("");
  RunEnvoyRequest(std::string("\x0a\xff\xff\xff\x0f", 5));  // a length past the end
}

}  // namespace
}  // namespace rl::fuzz

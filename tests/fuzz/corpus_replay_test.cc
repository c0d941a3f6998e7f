// Replays the seed corpora of the fuzz targets in fuzz/ (where inputs that once broke a harness
// are kept as regression cases) through the same harnesses in the normal build: a broken
// invariant aborts the test. The fuzzers themselves run in tools/fuzz-smoke.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "config_harness.h"
#include "snapshot_file_harness.h"
#include "snapshot_import_harness.h"

namespace rl::fuzz {
namespace {

// Runs `harness` on every file of corpus/`name`; returns how many.
template <typename Harness>
size_t Replay(const std::string& name, Harness harness) {
  size_t files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(FUZZ_CORPUS_DIR) + "/" + name)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream data;
    data << in.rdbuf();
    SCOPED_TRACE(entry.path().string());
    harness(data.str());
    ++files;
  }
  return files;
}

TEST(FuzzCorpusReplay, SnapshotImport) {
  EXPECT_GE(Replay("snapshot_import", [](const std::string& d) { RunSnapshotImport(d); }), 4u);
}

TEST(FuzzCorpusReplay, SnapshotFile) {
  EXPECT_GE(Replay("snapshot_file", [](const std::string& d) { RunSnapshotFile(d); }), 3u);
}

TEST(FuzzCorpusReplay, Config) {
  EXPECT_GE(Replay("config", [](const std::string& d) { RunConfig(d); }), 6u);
}

}  // namespace
}  // namespace rl::fuzz

// Replays the fuzzer's seed corpus (resp/fuzz/corpus, where inputs that once crashed the fuzz
// target are kept as regression cases) through the normal build: each input must give the same
// outcome in one piece, split at every byte, and one byte at a time, under the limits its first
// byte selects (the same encoding as resp/fuzz/parser_fuzz.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "parse_util.h"

namespace resp {
namespace {

using testing::ParseBytewise;
using testing::ParseInPieces;
using testing::ParseWhole;

ParserLimits PickLimits(uint8_t control) {
  switch (control & 3) {
    case 0:
      return ParserLimits{};
    case 1:
      return ParserLimits::Unauthenticated();
    case 2:
      return ParserLimits{16, 4, 8, false};
    default:
      return ParserLimits{64, 16, 64, (control & 4) != 0};
  }
}

TEST(FuzzCorpus, EveryInputIsSplitInvariant) {
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(RESP_CORPUS_DIR)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream data;
    data << in.rdbuf();
    const std::string bytes = data.str();
    if (bytes.empty()) continue;
    ++files;
    const ParserLimits limits = PickLimits(static_cast<uint8_t>(bytes[0]));
    const std::string input = bytes.substr(1);
    const auto whole = ParseWhole(input, limits);
    for (size_t cut = 0; cut <= input.size(); ++cut) {
      ASSERT_EQ(ParseInPieces(input, {cut}, limits), whole) << entry.path() << " cut " << cut;
    }
    EXPECT_EQ(ParseBytewise(input, limits), whole) << entry.path();
  }
  EXPECT_GE(files, 30u);
}

}  // namespace
}  // namespace resp

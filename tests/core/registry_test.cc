// The algorithm registry: every row's name, traits and shape are what the parser, the validators
// and the stores use; state tags keep the values stored states were named by and stay apart for
// ids past the old three bits; the encoding's version 3 carries any registered id.
#include "registry.h"

#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "rl/key_state.h"
#include "rl/limit.h"
#include "step.h"

namespace rl {
namespace {

TEST(Registry, RowsNameEveryAlgorithmOnceInIdOrder) {
  ASSERT_EQ(Algorithms().size(), internal::kAlgorithmCount);
  std::set<std::string_view> names;
  for (size_t i = 0; i < Algorithms().size(); ++i) {
    const Algorithm a = Algorithms()[i];
    EXPECT_EQ(static_cast<size_t>(a), i);
    EXPECT_TRUE(names.insert(AlgorithmName(a)).second) << AlgorithmName(a);
    EXPECT_EQ(ParseAlgorithm(AlgorithmName(a)), a);
    const internal::AlgorithmRow& row = internal::RowOf(a);
    // A two- or three-word row has its step functions; the parser takes BURST exactly where the
    // row says.
    const bool two = row.shape == internal::StateShape::kTwoWord;
    const bool three = row.shape == internal::StateShape::kThreeWord;
    EXPECT_EQ(row.two_word_check != nullptr && row.two_word_adjust != nullptr, two);
    EXPECT_EQ(row.three_word_check != nullptr && row.three_word_adjust != nullptr, three);
    if (a == Algorithm::kConcurrency) continue;
    const std::string spec = std::string(AlgorithmName(a)) + " 10 1m BURST 20";
    EXPECT_EQ(ParsePolicy("p", spec).ok(), internal::HasBurst(a)) << spec;
  }
  EXPECT_EQ(AlgorithmName(static_cast<Algorithm>(internal::kAlgorithmCount)), "UNKNOWN");
  EXPECT_FALSE(ParseAlgorithm("UNKNOWN").has_value());
}

TEST(Registry, ValueWithoutRowIsRefusedEverywhere) {
  for (int v : {static_cast<int>(internal::kAlgorithmCount), 7, 8, 100, 255}) {
    if (v < static_cast<int>(internal::kAlgorithmCount)) continue;
    const Limit bad{static_cast<Algorithm>(v), 10, 60000};
    EXPECT_FALSE(internal::CheckValid({bad}, 1)) << v;
    EXPECT_FALSE(ValidateLimits({bad}).ok()) << v;
    EXPECT_FALSE(internal::ValidatePeek({bad}, 1).ok()) << v;
  }
}

TEST(Registry, StateTagsKeepStoredNamesAndStayApartPastThreeBits) {
  // Ids 0..7: the tag every stored state (rl-server's state keys, snapshots, rl.so's entries)
  // was named by.
  for (int id = 0; id < 8; ++id) {
    for (int64_t w : {int64_t{1}, int64_t{60000}, kMaxWindowMs}) {
      EXPECT_EQ(internal::StateTag(static_cast<Algorithm>(id), w),
                (static_cast<uint64_t>(w) << 3) | static_cast<uint64_t>(id));
    }
  }
  // Every id (uint8_t) with windows at the edges: distinct, and read back.
  std::set<uint64_t> tags;
  for (int id = 0; id < 256; ++id) {
    for (int64_t w : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{1} << 38, kMaxWindowMs}) {
      const uint64_t tag = internal::StateTag(static_cast<Algorithm>(id), w);
      EXPECT_TRUE(tags.insert(tag).second) << id << " " << w;
      EXPECT_EQ(static_cast<int>(internal::TagAlgorithm(tag)), id);
      EXPECT_EQ(internal::TagWindow(tag), w);
      EXPECT_EQ(tag >> 63, 0u) << "the top bit marks rl.so's penalty blocks";
    }
  }
}

// One two-word entry {scope 0, kind, window, expiry, a, b} after a header of `version`.
std::string OneEntry(uint8_t version, uint8_t kind) {
  std::string out;
  auto put = [&](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  put(version, 1);
  put(1, 2);
  put(0, 8);
  put(kind, 1);
  put(60000, 8);
  put(120000, 8);
  put(1000, 8);
  put(1, 8);
  return out;
}

TEST(Registry, EncodingVersionThreeCarriesRegisteredIds) {
  const uint8_t fixed = static_cast<uint8_t>(Algorithm::kFixedWindow);
  for (uint8_t version : {1, 2, 3}) {
    absl::StatusOr<KeyState> s = KeyState::Decode(OneEntry(version, fixed));
    ASSERT_TRUE(s.ok()) << int{version} << " " << s.status();
    std::string again;
    s->Encode(&again);
    EXPECT_EQ(again, OneEntry(1, fixed)) << "written in the lowest version that holds it";
    bool changed = false;
    EXPECT_EQ(s->Check("", {{Algorithm::kFixedWindow, 5, 60000}}, 1, 2000, &changed)->remaining, 3);
  }
  const uint8_t past = static_cast<uint8_t>(internal::kAlgorithmCount);
  EXPECT_FALSE(KeyState::Decode(OneEntry(3, past)).ok()) << "an id with no row";
  EXPECT_FALSE(KeyState::Decode(OneEntry(4, fixed)).ok()) << "a version from the future";
}

}  // namespace
}  // namespace rl

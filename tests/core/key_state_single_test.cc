// rl::GetSingleState / WriteSingleBlock (rl/key_state_single.h), what rl.so's small forms of a
// one-limit key stand on: a state read out and written back is the same state byte for byte, and
// only a lone two-word state (no second state, no log, no lease set, no penalty block) reads out.
#include "rl/key_state_single.h"

#include <string>

#include "gtest/gtest.h"
#include "rl/key_state.h"

namespace rl {
namespace {

std::string Encoded(const KeyState& s) {
  std::string out;
  s.Encode(&out);
  return out;
}

TEST(KeyStateSingle, ReadOutAndWrittenBackIsTheSameState) {
  const Limit limits[][1] = {{Limit{Algorithm::kTokenBucket, 100, 60'000}},
                             {Limit{Algorithm::kGcra, 5, 1000, 9}},
                             {Limit{Algorithm::kFixedWindow, 3, 20'000}},
                             {Limit{Algorithm::kLeakyBucket, 4, 20'000}}};
  for (const auto& limit : limits) {
    KeyState s;
    bool changed = false;
    ASSERT_TRUE(s.Check("policy", limit, 2, 1'700'000'000'000, &changed).ok());
    SingleState single;
    ASSERT_TRUE(GetSingleState(s, &single)) << AlgorithmName(limit[0].algorithm);
    EXPECT_EQ(single.scope_id, ScopeId("policy"));
    EXPECT_EQ(single.algorithm, limit[0].algorithm);
    EXPECT_EQ(single.window_ms, limit[0].window_ms);
    EXPECT_EQ(single.expiry_ms, s.ExpiryMs());
    alignas(16) char buffer[kSingleBlockBytes];
    WriteSingleBlock(buffer, single);
    KeyState copy = KeyState::AdoptBlock(buffer);
    EXPECT_EQ(Encoded(copy), Encoded(s)) << AlgorithmName(limit[0].algorithm);
    EXPECT_EQ(copy.MemoryBytes(), s.MemoryBytes());
    copy.ReleaseBlock();  // the buffer is not the allocator's
  }
}

TEST(KeyStateSingle, OnlyALoneTwoWordStateReadsOut) {
  SingleState single;
  KeyState empty;
  EXPECT_FALSE(GetSingleState(empty, &single));
  bool changed = false;
  const int64_t now = 1'700'000'000'000;
  KeyState two;
  const Limit pair[] = {Limit{Algorithm::kTokenBucket, 100, 60'000},
                        Limit{Algorithm::kTokenBucket, 1000, 3'600'000}};
  ASSERT_TRUE(two.Check("", pair, 1, now, &changed).ok());
  EXPECT_FALSE(GetSingleState(two, &single)) << "two states";
  KeyState window;
  const Limit three_words[] = {Limit{Algorithm::kSlidingWindow, 10, 60'000}};
  ASSERT_TRUE(window.Check("", three_words, 1, now, &changed).ok());
  EXPECT_FALSE(GetSingleState(window, &single)) << "a three-word state";
  KeyState log;
  const Limit logged[] = {Limit{Algorithm::kSlidingLog, 10, 60'000}};
  ASSERT_TRUE(log.Check("", logged, 1, now, &changed).ok());
  EXPECT_FALSE(GetSingleState(log, &single)) << "a log";
  KeyState blocked;
  Limit penalty{Algorithm::kTokenBucket, 1, 60'000};
  penalty.block_ms = 600'000;
  const Limit with_block[] = {penalty};
  ASSERT_TRUE(blocked.Check("", with_block, 1, now, &changed).ok());
  ASSERT_TRUE(blocked.Check("", with_block, 1, now, &changed).ok());  // denied: the block starts
  EXPECT_EQ(blocked.size(), 2u);
  EXPECT_FALSE(GetSingleState(blocked, &single)) << "a state with its penalty block";
}

}  // namespace
}  // namespace rl

// KeyState::Decode with a time shift, what rl.so applies to a state written by a clock ahead of
// its own: every stored time (rates, windows, logs, blocks, leases, debt) moves, so the moved
// state answers at `now` exactly as the original did at `now + shift`; a shift past every window
// saturates into a state that is simply old.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rl/key_state.h"

namespace rl {
namespace {

constexpr int64_t kDay = int64_t{24} * 3600 * 1000;
constexpr int64_t kNow = 1'700'000'000'000;
const Limit kSlots{Algorithm::kConcurrency, 1, 60000};

std::vector<Limit> Limits() {
  return {{Algorithm::kTokenBucket, 2, 60000},
          {Algorithm::kGcra, 2, 60000},
          {Algorithm::kSlidingLog, 2, 60000},
          {Algorithm::kSlidingWindow, 2, 60000},
          {Algorithm::kFixedWindow, 2, 60000},
          {Algorithm::kLeakyBucket, 2, 60000},
          {Algorithm::kSlidingLog, 1, 1000, 0, 5 * 60000}};
}

// One key with every kind of stored time, at its limits, built on a clock at `now` (with a held
// lease when `lease`: its id is random).
KeyState Exhausted(int64_t now, bool lease = true) {
  KeyState s;
  bool changed = false;
  for (const Limit& l : Limits()) {
    for (int i = 0; i < 3; ++i) (void)s.Check("", {l}, 1, now + i, &changed);
  }
  const Limit debt{Algorithm::kTokenBucket, 2, 3600000};
  EXPECT_TRUE(s.Charge("debt", {debt}, 10, now, &changed).ok());
  if (lease) {
    std::string id;
    EXPECT_TRUE(s.Acquire("lease", "k", {kSlots}, 1, now, &id, &changed).ok());
    EXPECT_FALSE(id.empty());
  }
  return s;
}

TEST(KeyStateShift, AMovedStateAnswersAsTheOriginalDidWhereItWasWritten) {
  std::string bytes, a, b;
  Exhausted(kNow + kDay, false).Encode(&bytes);
  KeyState::Decode(bytes, -kDay)->Encode(&a);
  Exhausted(kNow, false).Encode(&b);
  EXPECT_EQ(a, b) << "every time moved by exactly the shift";

  bytes.clear();
  Exhausted(kNow + kDay).Encode(&bytes);
  absl::StatusOr<KeyState> moved = KeyState::Decode(bytes, -kDay);
  ASSERT_TRUE(moved.ok()) << moved.status();
  const Decision busy = *moved->Peek("lease", {kSlots}, 1, kNow + 10);
  EXPECT_FALSE(busy.allowed) << "the lease is still held";
  EXPECT_LE(busy.retry_after_ms, kSlots.window_ms) << "for no longer than its ttl";
  for (const Limit& l : Limits()) {
    const Decision d = *moved->Peek("", {l}, 1, kNow + 10);
    EXPECT_FALSE(d.allowed) << FormatLimit(l);
    EXPECT_LE(d.retry_after_ms, l.block_ms > 0 ? l.block_ms : 2 * l.window_ms) << FormatLimit(l);
  }
  // Unmoved, the same bytes wait a day longer.
  const KeyState as_stored = *KeyState::Decode(bytes);
  EXPECT_GT(as_stored.Peek("", {Limits()[0]}, 1, kNow + 10)->retry_after_ms, kDay);
}

TEST(KeyStateShift, AShiftPastEveryWindowLeavesAnOldState) {
  std::string bytes;
  Exhausted(kNow).Encode(&bytes);
  for (const int64_t shift : {INT64_MIN, -(int64_t{1} << 62), int64_t{-20} * 365 * kDay}) {
    absl::StatusOr<KeyState> moved = KeyState::Decode(bytes, shift);
    ASSERT_TRUE(moved.ok()) << moved.status();
    const size_t states = moved->size();
    EXPECT_EQ(moved->Prune(kNow), states) << "nothing left but fresh states";
    bool changed = false;
    for (const Limit& l : Limits()) {
      EXPECT_TRUE(moved->Check("", {l}, 1, kNow, &changed)->allowed) << FormatLimit(l);
    }
  }
}

}  // namespace
}  // namespace rl

// rl::KeyState as rl.so replicates it (RL.APPLY): a call that reports no change leaves the
// encoded bytes as they were, and replaying every call that reports one (same arguments, same
// time, the lease id the first copy handed out) on a second copy gives the same bytes. Random
// calls of every kind over every algorithm, penalty blocks, leases and two scopes, at times
// that let states end, plus the refusal for too many states after dropping ended ones.
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rl/key_state.h"

namespace rl {
namespace {

std::string Bytes(const KeyState& s) {
  std::string out;
  s.Encode(&out);
  return out;
}

const std::vector<Limit>& Rates() {
  static const std::vector<Limit> rates = {
      {Algorithm::kSlidingLog, 3, 300},           {Algorithm::kSlidingLog, 5, 2000},
      {Algorithm::kTokenBucket, 4, 1000},         {Algorithm::kGcra, 3, 500, 5},
      {Algorithm::kFixedWindow, 2, 400, 0, 1000}, {Algorithm::kSlidingWindow, 3, 1000},
      {Algorithm::kLeakyBucket, 2, 1000},
  };
  return rates;
}

enum class Op { kCheck, kAcquire, kRelease, kRefund, kCharge, kReset };

struct Call {
  Op op;
  std::string scope;
  std::vector<Limit> limits;
  int64_t cost = 0;
  std::string lease_id;
};

// Runs `c` at `now`; `*lease_id` receives an acquire's id (AcquireAs replays `c.lease_id`).
bool RunCall(KeyState& s, const Call& c, int64_t now, bool replay, std::string* lease_id) {
  bool changed = false;
  switch (c.op) {
    case Op::kCheck:
      (void)s.Check(c.scope, c.limits, c.cost, now, &changed);
      break;
    case Op::kAcquire:
      if (replay) {
        (void)s.AcquireAs(c.scope, "key", c.limits, c.cost, now, c.lease_id, &changed);
      } else {
        (void)s.Acquire(c.scope, "key", c.limits, c.cost, now, lease_id, &changed);
      }
      break;
    case Op::kRelease:
      (void)s.Release("key", c.lease_id, now, &changed);
      break;
    case Op::kRefund:
      (void)s.Refund(c.scope, c.limits, c.cost, now, &changed);
      break;
    case Op::kCharge:
      (void)s.Charge(c.scope, c.limits, c.cost, now, &changed);
      break;
    case Op::kReset:
      changed = s.Reset(c.scope, c.limits) > 0;
      break;
  }
  return changed;
}

TEST(KeyStateReplay, ReplayingTheChangesGivesTheSameBytes) {
  std::mt19937_64 rng(20);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  KeyState primary, replica;
  std::vector<std::string> leases;
  int64_t now = 1'000'000;
  int replayed = 0, unchanged = 0;
  for (int step = 0; step < 20000; ++step) {
    now += static_cast<int64_t>(pick(120));
    Call c;
    c.op = static_cast<Op>(pick(6));
    c.scope = pick(2) == 0 ? "" : "pol";
    c.cost = static_cast<int64_t>(pick(4));
    const size_t a = pick(Rates().size()), b = pick(Rates().size());
    c.limits.push_back(Rates()[a]);
    if (b != a && pick(2) == 0) c.limits.push_back(Rates()[b]);
    if (c.op == Op::kAcquire)
      c.limits.insert(c.limits.begin(), Limit{Algorithm::kConcurrency, 2, 700});
    if (c.op == Op::kRelease && !leases.empty()) c.lease_id = leases[pick(leases.size())];
    const std::string before = Bytes(primary);
    std::string lease_id;
    const bool changed = RunCall(primary, c, now, /*replay=*/false, &lease_id);
    if (!changed) {
      ASSERT_EQ(Bytes(primary), before)
          << "step " << step << ": op " << static_cast<int>(c.op) << " (" << c.limits.size()
          << " limits, first " << FormatLimit(c.limits[0]) << ", cost " << c.cost
          << ") changed the state unreported";
      ++unchanged;
      continue;
    }
    if (!lease_id.empty()) leases.push_back(lease_id);
    c.lease_id = c.op == Op::kAcquire ? lease_id : c.lease_id;
    std::string unused;
    RunCall(replica, c, now, /*replay=*/true, &unused);
    ASSERT_EQ(Bytes(replica), Bytes(primary)) << "step " << step << " op " << int(c.op);
    ++replayed;
  }
  EXPECT_GT(replayed, 1000);
  EXPECT_GT(unchanged, 1000);
}

// A check refused for too many states may first have dropped ended ones: that is a change, and
// its replay drops them too.
TEST(KeyStateReplay, RefusalAfterDroppingEndedStatesIsAChange) {
  KeyState primary, replica;
  bool changed = false;
  for (int64_t i = 0; i < static_cast<int64_t>(KeyState::kMaxStates); ++i) {
    const Limit limit{Algorithm::kFixedWindow, 5, i == 0 ? 100 : 3'600'000 + i};
    for (KeyState* s : {&primary, &replica}) {
      ASSERT_TRUE(s->Check("", absl::MakeConstSpan(&limit, 1), 1, 1000, &changed).ok());
    }
  }
  const Limit two[] = {{Algorithm::kGcra, 5, 1000}, {Algorithm::kTokenBucket, 5, 1000}};
  const std::string before = Bytes(primary);
  EXPECT_FALSE(primary.Check("", two, 1, 5000, &changed).ok());
  EXPECT_TRUE(changed);
  EXPECT_NE(Bytes(primary), before);
  EXPECT_FALSE(replica.Check("", two, 1, 5000, &changed).ok());
  EXPECT_EQ(Bytes(replica), Bytes(primary));

  // An acquire refused the same way took no lease: its replay has no id, and drops the same.
  const Limit ended{Algorithm::kFixedWindow, 5, 200};
  for (KeyState* s : {&primary, &replica}) {
    ASSERT_TRUE(s->Check("", absl::MakeConstSpan(&ended, 1), 1, 5000, &changed).ok());
  }
  const Limit acquire[] = {{Algorithm::kConcurrency, 2, 60'000}, {Algorithm::kGcra, 5, 1000}};
  std::string id;
  EXPECT_FALSE(primary.Acquire("", "key", acquire, 1, 9000, &id, &changed).ok());
  EXPECT_TRUE(changed);
  EXPECT_TRUE(id.empty());
  EXPECT_FALSE(replica.AcquireAs("", "key", acquire, 1, 9000, id, &changed).ok());
  EXPECT_TRUE(changed);
  EXPECT_EQ(Bytes(replica), Bytes(primary));
}

// An acquire replayed without a lease id (the primary took none) never takes one.
TEST(KeyStateReplay, AcquireAsWithoutAnIdTakesNoLease) {
  KeyState s;
  bool changed = false;
  const Limit concurrency[] = {{Algorithm::kConcurrency, 2, 60'000}};
  EXPECT_FALSE(s.AcquireAs("", "key", concurrency, 1, 1000, "", &changed).ok());
  EXPECT_FALSE(changed);
  EXPECT_TRUE(s.empty());
  std::string id;
  KeyState other;
  ASSERT_TRUE(other.Acquire("pol", "key", concurrency, 1, 1000, &id, &changed).ok());
  EXPECT_FALSE(s.AcquireAs("", "key", concurrency, 1, 1000, id, &changed).ok()) << "scope";
  EXPECT_FALSE(s.AcquireAs("pol", "other", concurrency, 1, 1000, id, &changed).ok()) << "key";
  ASSERT_TRUE(s.AcquireAs("pol", "key", concurrency, 1, 1000, id, &changed).ok());
  EXPECT_EQ(Bytes(s), Bytes(other));
  EXPECT_TRUE(*s.Release("key", id, 1001, &changed));
}

}  // namespace
}  // namespace rl

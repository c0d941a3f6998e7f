// Concurrency leases (Limiter::Acquire / Release, rl::Lease): at most N held, RAII release,
// abandoned leases that end by themselves, all-or-nothing with rate limits ("at most 3 exports at
// once and 20 per hour"), 8 racing threads for 3 slots, lease ids that are unguessable and tied
// to their key, bad input that changes nothing, policies, snapshots and eviction.
#include <atomic>
#include <cctype>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rl/limiter.h"

namespace rl {
namespace {

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;

Limit Slots(int64_t n, int64_t lease_ms = kMinute) {
  return Limit{Algorithm::kConcurrency, n, lease_ms};
}

bool IsLeaseId(const std::string& id) {
  if (id.size() != 40) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

class LeaseTest : public ::testing::Test {
 protected:
  Lease Acquire(const std::vector<Limit>& limits, std::string_view key = "exports",
                int64_t cost = 1) {
    absl::StatusOr<Lease> lease = limiter_.Acquire("", key, limits, cost);
    EXPECT_TRUE(lease.ok()) << lease.status();
    return lease.ok() ? *std::move(lease) : Lease();
  }
  Decision Peek(const std::vector<Limit>& limits, std::string_view key = "exports") {
    absl::StatusOr<Decision> d = limiter_.Peek("", key, limits, 0);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : Decision{};
  }

  ManualClock clock_{0, 1'700'000'000'000};
  Limiter limiter_{LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_}};
};

TEST_F(LeaseTest, AtMostNHeldAndReleaseFreesASlot) {
  const Limit slots = Slots(3);
  Lease a = Acquire({slots});
  Lease b = Acquire({slots});
  Lease c = Acquire({slots});
  ASSERT_TRUE(a.held() && b.held() && c.held());
  EXPECT_TRUE(IsLeaseId(a.id())) << a.id();
  EXPECT_NE(a.id(), b.id());
  EXPECT_EQ(a.decision().remaining, 2);
  EXPECT_EQ(c.decision().remaining, 0);
  EXPECT_EQ(c.decision().limit, 3);
  EXPECT_EQ(c.decision().reset_after_ms, kMinute);
  clock_.Advance(10 * kSecond);
  Lease d = Acquire({slots});
  EXPECT_FALSE(d.held());
  EXPECT_TRUE(d.id().empty());
  EXPECT_FALSE(d.decision().allowed);
  EXPECT_EQ(d.decision().remaining, 0);
  EXPECT_EQ(d.decision().retry_after_ms, 50 * kSecond) << "when the soonest lease ends by itself";
  EXPECT_TRUE(b.Release());
  EXPECT_FALSE(b.held());
  EXPECT_FALSE(b.Release()) << "released once";
  Lease e = Acquire({slots});
  EXPECT_TRUE(e.held());
  EXPECT_EQ(limiter_.Stats().lease_sets, 1u);
}

TEST_F(LeaseTest, DestructionReleasesMovingTransfers) {
  const Limit slots = Slots(1);
  {
    Lease a = Acquire({slots});
    ASSERT_TRUE(a.held());
    EXPECT_FALSE(Acquire({slots}).held());
  }
  Lease b = Acquire({slots});
  ASSERT_TRUE(b.held()) << "the destructor released the first lease";
  Lease moved(std::move(b));
  EXPECT_FALSE(b.held());  // NOLINT(bugprone-use-after-move): moved-from holds nothing
  EXPECT_TRUE(moved.held());
  Lease other = Acquire({slots}, "other");
  other = std::move(moved);  // releases "other"'s lease, takes the moved one
  EXPECT_TRUE(other.held());
  EXPECT_TRUE(Acquire({slots}, "other").held());
  EXPECT_FALSE(Acquire({slots}).held());
  EXPECT_TRUE(other.Release());
  EXPECT_TRUE(Acquire({slots}).held());
}

TEST_F(LeaseTest, DetachedLeasesAreReleasedById) {
  const Limit slots = Slots(2);
  std::string id;
  {
    Lease a = Acquire({slots});
    id = a.Detach();
    EXPECT_FALSE(a.held());
  }
  EXPECT_EQ(Peek({slots}).limits[0].remaining, 0) << "one held, one more would take the last";
  EXPECT_EQ(*limiter_.Release("exports", id), true);
  EXPECT_EQ(*limiter_.Release("exports", id), false);
  EXPECT_EQ(Peek({slots}).limits[0].remaining, 1);
}

TEST_F(LeaseTest, AbandonedLeasesEndAfterTheirTtl) {
  const Limit slots = Slots(3, 10 * kSecond);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(Acquire({slots}).Detach());  // holders that died
  EXPECT_FALSE(Acquire({slots}).held());
  clock_.Advance(10 * kSecond - 1);
  EXPECT_FALSE(Acquire({slots}).held());
  clock_.Advance(1);
  Lease fresh = Acquire({slots});
  EXPECT_TRUE(fresh.held());
  EXPECT_EQ(*limiter_.Release("exports", ids[0]), false) << "it had ended by itself";
  // The sweeper drops a lease set once every lease has ended.
  EXPECT_TRUE(fresh.Release());
  limiter_.Sweep();
  EXPECT_EQ(limiter_.KeyCount(), 0u);
}

TEST_F(LeaseTest, LeaseTtlComesFromEachAcquire) {
  Lease a = Acquire({Slots(2, kHour)});
  clock_.Advance(kMinute);
  Lease b = Acquire({Slots(2, kSecond)});
  ASSERT_TRUE(b.held());
  EXPECT_EQ(b.decision().reset_after_ms, kHour - kMinute) << "the longest lease held";
  clock_.Advance(kSecond);
  EXPECT_EQ(Peek({Slots(2)}).limits[0].remaining, 0) << "b ended, a holds, one would be left";
  b.Detach();
}

// "At most 3 exports at once and 20 per hour": one call, all or nothing.
TEST_F(LeaseTest, WithRateLimitsAllOrNothing) {
  const std::vector<Limit> limits = {Slots(3, 10 * kMinute),
                                     Limit{Algorithm::kFixedWindow, 5, kHour}};
  std::vector<Lease> held;
  for (int i = 0; i < 3; ++i) held.push_back(Acquire(limits));
  Lease denied = Acquire(limits);
  EXPECT_FALSE(denied.held());
  EXPECT_EQ(denied.decision().binding, 0);
  EXPECT_EQ(Peek({limits[1]}).remaining, 2) << "the denied acquire took nothing of the hour";
  held.clear();  // all three released
  held.push_back(Acquire(limits));
  held.push_back(Acquire(limits));
  Lease over = Acquire(limits);  // 5 of 5 this hour used: denied by the rate limit
  EXPECT_FALSE(over.held());
  EXPECT_EQ(over.decision().binding, 1);
  EXPECT_EQ(over.decision().retry_after_ms, kHour);
  const Decision p = Peek(limits);
  EXPECT_EQ(p.limits[0].remaining, 0) << "two held: one more would take the last slot";
  // COST applies to the rate limits; the lease is one slot whatever it is.
  limiter_.Reset("", "exports", {limits[1]});
  Lease heavy = Acquire(limits, "exports", 4);
  EXPECT_TRUE(heavy.held());
  EXPECT_EQ(Peek({limits[1]}).remaining, 1);
  Lease free_of_rate = Acquire({Slots(3, 10 * kMinute)}, "exports", 0);
  EXPECT_FALSE(free_of_rate.held()) << "three held";
}

TEST_F(LeaseTest, EightThreadsThreeSlots) {
  const Limit slots = Slots(3);
  for (int round = 0; round < 20; ++round) {
    const std::string key = "race" + std::to_string(round);
    std::vector<Lease> got(8);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        absl::StatusOr<Lease> lease = limiter_.Acquire("", key, {slots}, 1);
        if (lease.ok()) got[t] = *std::move(lease);
      });
    }
    go = true;
    for (auto& th : threads) th.join();
    int held = 0, waits = 0;
    std::set<std::string> ids;
    for (const Lease& l : got) {
      held += l.held();
      waits += !l.held() && l.decision().retry_after_ms > 0;
      if (l.held()) ids.insert(l.id());
    }
    EXPECT_EQ(held, 3) << round;
    EXPECT_EQ(waits, 5) << round;
    EXPECT_EQ(ids.size(), 3u);
  }
}

TEST_F(LeaseTest, LeaseIdsAreUnguessableAndTiedToTheirKey) {
  const Limit slots = Slots(kMaxConcurrency);
  std::set<std::string> ids;
  std::vector<Lease> held;
  for (int i = 0; i < 2000; ++i) {
    held.push_back(Acquire({slots}));
    ASSERT_TRUE(IsLeaseId(held.back().id()));
    ids.insert(held.back().id());
  }
  EXPECT_EQ(ids.size(), 2000u);
  Lease mine = Acquire({Slots(1)}, "alice");
  ASSERT_TRUE(mine.held());
  // Someone else's key: a clear error, and the lease stays held.
  absl::StatusOr<bool> wrong = limiter_.Release("bob", mine.id());
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(wrong.status()));
  EXPECT_EQ(std::string(wrong.status().message()), "lease id was issued for another key");
  EXPECT_FALSE(Acquire({Slots(1)}, "alice").held());
  // Not a lease id at all.
  for (const std::string& bad :
       {std::string(), std::string("nope"), mine.id() + "0", mine.id().substr(1),
        std::string(40, 'g'), std::string(40, '0'), std::string(40, ' ')}) {
    absl::StatusOr<bool> r = limiter_.Release("alice", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(std::string(r.status().message()).find("invalid lease id"), std::string::npos);
  }
  // A well-formed id of this key that was never issued: not held.
  std::string forged = mine.id();
  forged[0] = forged[0] == 'a' ? 'b' : 'a';
  absl::StatusOr<bool> r = limiter_.Release("alice", forged);
  EXPECT_TRUE(!r.ok() || !*r) << "either refused (tag) or not held";
  EXPECT_TRUE(mine.held());
  std::string upper = mine.id();
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(*limiter_.Release("alice", upper), true) << "hex digits in either case";
  mine.Detach();
}

TEST_F(LeaseTest, BadRequestsAreErrorsAndChangeNothing) {
  const Limit slots = Slots(3);
  Lease held = Acquire({slots});
  auto message = [](const absl::Status& s) { return std::string(s.message()); };
  EXPECT_EQ(
      message(limiter_.Acquire("", "exports", {Limit{Algorithm::kGcra, 5, kMinute}}).status()),
      "Acquire (RL.ACQUIRE) needs a CONCURRENCY limit (e.g. CONCURRENCY 3 LEASE 5m)");
  EXPECT_EQ(message(limiter_.Acquire("", "exports", {slots, Slots(4)}).status()),
            "more than one CONCURRENCY limit (one per check)");
  EXPECT_EQ(message(limiter_.Acquire("", "exports", {Slots(0)}).status()),
            "CONCURRENCY must be between 1 and 10000");
  EXPECT_EQ(message(limiter_.Acquire("", "exports", {Slots(kMaxConcurrency + 1)}).status()),
            "CONCURRENCY must be between 1 and 10000");
  EXPECT_EQ(message(limiter_.Acquire("", "exports", {Slots(3, 0)}).status()),
            "LEASE must be between 1ms and 3650d");
  EXPECT_EQ(message(limiter_.Acquire("", "exports", {slots}, -1).status()),
            "cost must not be negative");
  EXPECT_EQ(message(limiter_.Check("", "exports", {slots}).status()),
            "a CONCURRENCY limit holds leases: take one with Acquire (RL.ACQUIRE) and end it with "
            "Release (RL.RELEASE)");
  Limit blocked = slots;
  blocked.block_ms = kMinute;
  EXPECT_EQ(message(limiter_.Acquire("", "exports", {blocked}).status()),
            "BLOCK is not allowed with CONCURRENCY");
  EXPECT_EQ(Peek({slots}).limits[0].remaining, 1) << "one held, nothing else taken";
}

TEST_F(LeaseTest, PeekShowsAndResetEndsEveryLease) {
  const Limit slots = Slots(3);
  Lease a = Acquire({slots});
  Lease b = Acquire({slots});
  const Decision p = Peek({slots});
  EXPECT_TRUE(p.allowed);
  EXPECT_EQ(p.remaining, 0);
  EXPECT_EQ(Peek({Slots(2)}).allowed, false) << "a lowered limit: two held already";
  EXPECT_EQ(limiter_.Reset("", "exports", {slots}), 1u);
  EXPECT_EQ(Peek({slots}).remaining, 2);
  EXPECT_FALSE(a.Release()) << "reset ended it";
  b.Detach();
}

TEST_F(LeaseTest, PoliciesKeepLeasesUnderTheirName) {
  const Policy exports = *ParsePolicy("exports", "CONCURRENCY 1 LEASE 5m FIXED_WINDOW 20 1h");
  absl::StatusOr<Lease> a = limiter_.Acquire(exports, "tenant:7");
  ASSERT_TRUE(a.ok() && a->held());
  EXPECT_FALSE(limiter_.Acquire(exports, "tenant:7")->held());
  EXPECT_TRUE(Acquire({Slots(1)}, "tenant:7").held()) << "inline leases are another state";
  EXPECT_FALSE(limiter_.Check(exports, "tenant:7").ok()) << "a check takes no lease";
  EXPECT_EQ(*limiter_.Release("tenant:7", a->id()), true) << "the id finds the policy's leases";
  a->Detach();
  EXPECT_TRUE(limiter_.Acquire(exports, "tenant:7")->held());
  // Shadow: a denial comes back allowed, without a lease.
  const Policy trial = *ParsePolicy("trial", "CONCURRENCY 1 SHADOW");
  Lease t1 = *limiter_.Acquire(trial, "k");
  Lease t2 = *limiter_.Acquire(trial, "k");
  EXPECT_TRUE(t1.held());
  EXPECT_TRUE(t2.decision().allowed);
  EXPECT_TRUE(t2.decision().shadow_denied);
  EXPECT_FALSE(t2.held());
}

TEST_F(LeaseTest, LeasesSurviveASnapshot) {
  const Limit slots = Slots(2, 10 * kMinute);
  const std::string id = Acquire({slots}).Detach();
  Lease second = Acquire({slots});
  clock_.Advance(kMinute);
  std::string snapshot;
  ASSERT_TRUE(limiter_.ExportState(&snapshot).ok());
  // A new process a minute later: its monotonic clock starts elsewhere.
  ManualClock later(5, clock_.WallMs() + kMinute);
  Limiter restored(LimiterOptions{.sweep_interval_ms = 0, .clock = &later});
  ASSERT_TRUE(restored.ImportState(snapshot).ok());
  absl::StatusOr<Lease> third = restored.Acquire("", "exports", {slots});
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->held()) << "both leases are still held after the restart";
  EXPECT_EQ(third->decision().retry_after_ms, 8 * kMinute);
  EXPECT_EQ(*restored.Release("exports", id), true) << "ids stay valid across the restart";
  EXPECT_TRUE(restored.Acquire("", "exports", {slots})->held());
}

TEST_F(LeaseTest, EvictionNeverDropsLeases) {
  Limiter small(
      LimiterOptions{.shards = 1, .max_keys = 64, .sweep_interval_ms = 0, .clock = &clock_});
  absl::StatusOr<Lease> job = small.Acquire("", "job", {Slots(1)});
  ASSERT_TRUE(job.ok() && job->held());
  const Limit other{Algorithm::kFixedWindow, 100, kHour};
  for (int i = 0; i < 500; ++i) (void)small.Check("", "flood" + std::to_string(i), {other}, 1);
  EXPECT_GT(small.Stats().evictions, 0u);
  EXPECT_FALSE(small.Acquire("", "job", {Slots(1)})->held()) << "the lease is still held";
  EXPECT_TRUE(job->Release());
}

}  // namespace
}  // namespace rl

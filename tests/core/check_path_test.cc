// What a check does not do while it holds its shard or to a state it denies: the clock is read
// before the shard lock is taken (so its cost is not spent holding it), and a denial that changes
// nothing writes nothing to the store's tables (so threads denied on one hot key leave the key's
// cache line shared). Both are invisible in a check's answers; these tests observe them directly.
#include <atomic>
#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "read_only_tables.h"
#include "rl/limiter.h"
#include "store.h"

namespace rl {
namespace {

constexpr int64_t kMinute = 60 * 1000;

// A clock that, when armed, finds out whether its caller holds a shard lock: another thread takes
// every shard's lock (Limiter::Stats) and the clock waits for it. Read before the lock, the clock
// sees that thread finish at once; read under it, that thread waits for the check and the clock
// gives up after kPatience (the check then ends and the thread with it).
class ProbeClock final : public Clock {
 public:
  static constexpr absl::Duration kPatience = absl::Seconds(20);

  int64_t NowMs() const override {
    ++calls_;
    if (limiter_ != nullptr && !probed_) {
      probed_ = true;
      auto done = std::make_shared<absl::Notification>();
      prober_ = std::thread([limiter = limiter_, done] {
        limiter->Stats();
        done->Notify();
      });
      lock_free_ = done->WaitForNotificationWithTimeout(kPatience);
    }
    return 1000;
  }
  int64_t WallMs() const override { return 1'700'000'000'000; }

  void Arm(Limiter* limiter) { limiter_ = limiter; }
  // After the check: waits for the prober and readies the next probe.
  void Join() {
    limiter_ = nullptr;
    if (prober_.joinable()) prober_.join();
    probed_ = false;
  }
  int calls() const { return calls_; }
  bool probed() const { return probed_; }
  bool lock_free() const { return lock_free_; }

 private:
  Limiter* limiter_ = nullptr;
  mutable std::atomic<int> calls_{0};
  mutable bool probed_ = false;
  mutable bool lock_free_ = false;
  mutable std::thread prober_;
};

TEST(CheckPathTest, ClockIsReadOnceBeforeTheShardLock) {
  ProbeClock clock;
  // One shard: the check's shard is the one the prober needs.
  Limiter limiter(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  const Limit minute{Algorithm::kTokenBucket, 10, kMinute};
  const Limit day{Algorithm::kSlidingWindow, 100, 24 * 60 * kMinute};
  ASSERT_TRUE(limiter.Check("", "k", {minute, day}).ok());  // the states exist: a found-state check
  for (const std::string scope : {"", "api"}) {
    clock.Arm(&limiter);
    const int before = clock.calls();
    absl::StatusOr<Decision> d = limiter.Check(scope, "k", {minute, day});
    const bool probed = clock.probed();
    clock.Join();
    ASSERT_TRUE(probed);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->allowed);
    EXPECT_EQ(clock.calls() - before, 1) << "one clock reading per check";
    EXPECT_TRUE(clock.lock_free()) << "the clock was read with the shard locked";
  }
}

// Runs a check of `limit` on `key` in a child process whose table blocks are all read-only: 0 when
// the check was denied, 1 when allowed, -SIGSEGV when the check wrote to a table.
int CheckWithTablesReadOnly(Limiter& limiter, const Limit& limit, const std::string& key) {
  return table_test::InChildWithTablesReadOnly([&] {
    absl::StatusOr<Decision> d = limiter.Check("", key, {limit});
    return !d.ok() ? 3 : d->allowed ? 1 : 0;
  });
}

class DenialTest : public ::testing::TestWithParam<Algorithm> {};

TEST_P(DenialTest, UnchangedDenialWritesNothingToTheTables) {
  internal::SetTableMapHookForTesting(&table_test::Track);
  ManualClock clock(1000);
  {
    Limiter limiter(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
    const Limit limit{GetParam(), 2, kMinute};
    // Enough states that the shard's table is a mapped block.
    for (int i = 0; i < 400; ++i)
      ASSERT_TRUE(limiter.Check("", "k" + std::to_string(i), {limit}).ok());
    if (table_test::Blocks().empty()) {
      internal::SetTableMapHookForTesting(nullptr);
      GTEST_SKIP() << "no mapped table blocks (AddressSanitizer allocates them all from the heap)";
    }
    const std::string hot = "hot";
    ASSERT_TRUE(limiter.Check("", hot, {limit})->allowed);
    ASSERT_TRUE(limiter.Check("", hot, {limit})->allowed);
    // The first denial may record the state's new usage level; later ones change nothing.
    ASSERT_FALSE(limiter.Check("", hot, {limit})->allowed);
    EXPECT_EQ(CheckWithTablesReadOnly(limiter, limit, hot), 0) << "0: denied without a write";
    // The protection covers the state: an allowed check of an existing key does fault.
    EXPECT_EQ(CheckWithTablesReadOnly(limiter, limit, "k7"), -SIGSEGV);
  }
  internal::SetTableMapHookForTesting(nullptr);
  table_test::Blocks().clear();
}

INSTANTIATE_TEST_SUITE_P(Shapes, DenialTest,
                         ::testing::Values(Algorithm::kTokenBucket, Algorithm::kGcra,
                                           Algorithm::kSlidingWindow, Algorithm::kFixedWindow,
                                           Algorithm::kSlidingLog),
                         [](const auto& info) { return std::string(AlgorithmName(info.param)); });

}  // namespace
}  // namespace rl

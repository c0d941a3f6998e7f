// Limiter::Prefetch is a hint: it changes no answer (checks preceded by prefetches of themselves
// and of other keys answer exactly as the same checks on a limiter that gets none), accepts any
// limit list (invalid limits, CONCURRENCY, an empty list) without effect, and writes nothing to
// the store's tables (checked in a child whose table blocks are read-only, as check_path_test.cc
// does for denials).
#include <csignal>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "read_only_tables.h"
#include "rl/limiter.h"
#include "store.h"

namespace rl {
namespace {

using table_test::Blocks;
using table_test::InChildWithTablesReadOnly;
using table_test::Track;

constexpr int64_t kMinute = 60 * 1000;

std::vector<std::vector<Limit>> LimitSets() {
  return {
      {Limit{Algorithm::kTokenBucket, 5, kMinute}},
      {Limit{Algorithm::kGcra, 3, kMinute}},
      {Limit{Algorithm::kSlidingWindow, 3, kMinute},
       Limit{Algorithm::kFixedWindow, 10, 60 * kMinute}},
      {Limit{Algorithm::kSlidingLog, 4, kMinute}},
      {Limit{Algorithm::kLeakyBucket, 2, kMinute}, Limit{Algorithm::kTokenBucket, 6, kMinute},
       Limit{Algorithm::kFixedWindow, 7, kMinute}},
  };
}

TEST(PrefetchTest, ChangesNoAnswer) {
  ManualClock clock(1000);
  Limiter with(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  Limiter without(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  const std::vector<std::vector<Limit>> sets = LimitSets();
  const Limit invalid[] = {Limit{static_cast<Algorithm>(200), 5, kMinute},
                           Limit{Algorithm::kTokenBucket, 0, kMinute},
                           Limit{Algorithm::kConcurrency, 2, kMinute}};
  for (int i = 0; i < 3000; ++i) {
    const std::string key = "k" + std::to_string(i % 61);
    const std::vector<Limit>& limits = sets[i % sets.size()];
    const std::string scope = i % 3 == 0 ? "policy" : "";
    // Its own state, another key's (existing or not) and lists with nothing to load.
    with.Prefetch(scope, key, limits);
    with.Prefetch("", "k" + std::to_string((i * 7) % 97), sets[(i + 1) % sets.size()]);
    with.Prefetch("", key, {invalid[i % 3]});
    with.Prefetch("", key, {});
    absl::StatusOr<Decision> a = with.Check(scope, key, limits);
    absl::StatusOr<Decision> b = without.Check(scope, key, limits);
    ASSERT_TRUE(a.ok() && b.ok()) << i;
    ASSERT_EQ(a->allowed, b->allowed) << i;
    ASSERT_EQ(a->limit, b->limit) << i;
    ASSERT_EQ(a->remaining, b->remaining) << i;
    ASSERT_EQ(a->retry_after_ms, b->retry_after_ms) << i;
    ASSERT_EQ(a->reset_after_ms, b->reset_after_ms) << i;
    clock.Advance(i % 5 == 0 ? 997 : 3);
  }
  EXPECT_EQ(with.KeyCount(), without.KeyCount());
}

TEST(PrefetchTest, WritesNothingToTheTables) {
  internal::SetTableMapHookForTesting(&Track);
  ManualClock clock(1000);
  {
    Limiter limiter(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
    const std::vector<std::vector<Limit>> sets = LimitSets();
    // Enough states of every shape that the shard's tables are mapped blocks.
    for (int i = 0; i < 400; ++i) {
      for (const auto& limits : sets) {
        ASSERT_TRUE(limiter.Check("", "k" + std::to_string(i), limits).ok());
      }
    }
    if (Blocks().empty()) {
      internal::SetTableMapHookForTesting(nullptr);
      GTEST_SKIP() << "no mapped table blocks (AddressSanitizer allocates them all from the heap)";
    }
    EXPECT_EQ(InChildWithTablesReadOnly([&] {
                for (int i = 0; i < 800; ++i) {  // existing keys and new ones
                  for (const auto& limits : sets) {
                    limiter.Prefetch("", "k" + std::to_string(i), limits);
                  }
                }
                return 0;
              }),
              0);
    // The protection covers the tables: a check that stores a new state faults.
    EXPECT_EQ(InChildWithTablesReadOnly([&] {
                (void)limiter.Check("", "new", sets[0]);
                return 0;
              }),
              -SIGSEGV);
  }
  internal::SetTableMapHookForTesting(nullptr);
  Blocks().clear();
}

}  // namespace
}  // namespace rl

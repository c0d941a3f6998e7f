// Snapshots: a restored limiter answers exactly as the original would at the same wall-clock
// time, although its monotonic clock starts elsewhere; fresh states are dropped; corrupt,
// foreign or misplaced snapshots are refused without changing anything.
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rl/lease.h"
#include "rl/limiter.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rl {
namespace {

constexpr int64_t kWall = 1'700'000'000'000;

std::vector<Limit> Limits() {
  return {{Algorithm::kTokenBucket, 10, 60000},  {Algorithm::kGcra, 7, 60000, 9},
          {Algorithm::kSlidingLog, 5, 60000},    {Algorithm::kSlidingWindow, 10, 60000},
          {Algorithm::kFixedWindow, 5, 3600000}, {Algorithm::kLeakyBucket, 10, 60000, 4}};
}

class SnapshotTest : public ::testing::Test {
 protected:
  SnapshotTest() {
    for (int i = 0; i < 3; ++i) {
      for (const Limit& l : Limits()) {
        (void)a_.Check("s", "key" + std::to_string(i), {l}, 2);
      }
      clock_a_.Advance(1234);
    }
    (void)a_.Check("s", "short", {{Algorithm::kTokenBucket, 10, 1000}}, 1);  // fresh in 100 ms
    EXPECT_TRUE(a_.ExportState(&snapshot_).ok());
  }

  ManualClock clock_a_{1000, kWall};
  Limiter a_{LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_a_}};
  std::string snapshot_;
};

TEST_F(SnapshotTest, RestoredLimiterAnswersLikeTheOriginal) {
  // The new process: monotonic clock near zero, 5 s of wall time later.
  ManualClock clock_b(77, kWall + 3 * 1234 + 5000);
  Limiter b(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_b});
  ASSERT_TRUE(b.ImportState(snapshot_).ok());
  EXPECT_EQ(b.KeyCount(), a_.KeyCount() - 1);  // the short state was fresh by import time
  clock_a_.Advance(5000);
  for (int step = 0; step < 40; ++step) {
    for (int i = 0; i < 3; ++i) {
      for (const Limit& l : Limits()) {
        const std::string key = "key" + std::to_string(i);
        const Decision x = *a_.Check("s", key, {l}, 1);
        const Decision y = *b.Check("s", key, {l}, 1);
        ASSERT_EQ(x.allowed, y.allowed) << FormatLimit(l) << " step " << step;
        ASSERT_EQ(x.remaining, y.remaining) << FormatLimit(l);
        ASSERT_EQ(x.retry_after_ms, y.retry_after_ms) << FormatLimit(l);
        ASSERT_EQ(x.reset_after_ms, y.reset_after_ms) << FormatLimit(l);
      }
    }
    clock_a_.Advance(997);
    clock_b.Advance(997);
  }
}

// A state's shard comes from its key, not from the exporter's shard index: a limiter with fewer
// or more shards than the exporter (whose keys it routes with other shares) loads the snapshot and
// answers as the original does.
TEST_F(SnapshotTest, AnyShardCountLoads) {
  for (size_t shards : {1, 2, 1024, 8192}) {
    ManualClock clock_b(0, kWall + 3 * 1234);  // a's wall time
    Limiter b(LimiterOptions{.shards = shards, .sweep_interval_ms = 0, .clock = &clock_b});
    ASSERT_TRUE(b.ImportState(snapshot_).ok()) << shards;
    EXPECT_EQ(b.KeyCount(), a_.KeyCount()) << shards;
    for (int i = 0; i < 3; ++i) {
      for (const Limit& l : Limits()) {
        const std::string key = "key" + std::to_string(i);
        const Decision x = *a_.Check("s", key, {l}, 0);
        const Decision y = *b.Check("s", key, {l}, 0);
        EXPECT_EQ(x.allowed, y.allowed) << FormatLimit(l) << " shards " << shards;
        EXPECT_EQ(x.remaining, y.remaining) << FormatLimit(l) << " shards " << shards;
      }
    }
  }
}

TEST_F(SnapshotTest, BadInputIsRefusedAndChangesNothing) {
  ManualClock clock_b(0, kWall);
  Limiter b(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_b});
  std::string flipped = snapshot_;
  flipped[flipped.size() / 2] ^= 0x40;
  EXPECT_TRUE(absl::IsDataLoss(b.ImportState(flipped)));
  EXPECT_FALSE(b.ImportState(snapshot_.substr(0, snapshot_.size() - 3)).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(b.ImportState("hello, world")));
  EXPECT_FALSE(b.ImportState("").ok());
  EXPECT_EQ(b.KeyCount(), 0u);
  ASSERT_TRUE(b.ImportState(snapshot_).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(b.ImportState(snapshot_)));
}

// Sets the version field of a snapshot and fixes its checksum.
std::string WithVersion(std::string s, uint32_t version) {
  std::memcpy(&s[8], &version, 4);
  const uint64_t sum = XXH64(s.data(), s.size() - 8, 0);
  std::memcpy(&s[s.size() - 8], &sum, 8);
  return s;
}

// Version 3 (before penalty blocks and leases) still loads; a version 3 snapshot holding their
// records is refused with a clear error, changing nothing.
TEST_F(SnapshotTest, VersionThreeStillLoads) {
  ManualClock clock_b(0, kWall);
  Limiter b(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_b});
  ASSERT_TRUE(b.ImportState(WithVersion(snapshot_, 3)).ok());
  EXPECT_EQ(b.KeyCount(), a_.KeyCount());
  Limit blocking{Algorithm::kFixedWindow, 1, 60000};
  blocking.block_ms = 3600000;
  (void)a_.Check("s", "blocked", {blocking});
  (void)a_.Check("s", "blocked", {blocking});
  absl::StatusOr<Lease> lease = a_.Acquire("s", "leased", {{Algorithm::kConcurrency, 2, 60000}});
  ASSERT_TRUE(lease.ok() && lease->held());
  std::string with_both;
  ASSERT_TRUE(a_.ExportState(&with_both).ok());
  Limiter c(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_b});
  const absl::Status st = c.ImportState(WithVersion(with_both, 3));
  EXPECT_TRUE(absl::IsDataLoss(st)) << st;
  EXPECT_EQ(std::string(st.message()), "bad snapshot record");
  EXPECT_EQ(c.KeyCount(), 0u);
  ASSERT_TRUE(c.ImportState(with_both).ok());
  EXPECT_EQ(c.Stats().blocks, 1u);
  EXPECT_EQ(c.Stats().lease_sets, 1u);
}

TEST(Snapshot, EmptyLimiterRoundTrips) {
  Limiter a(LimiterOptions{.sweep_interval_ms = 0});
  std::string s;
  ASSERT_TRUE(a.ExportState(&s).ok());
  Limiter b(LimiterOptions{.sweep_interval_ms = 0});
  EXPECT_TRUE(b.ImportState(s).ok());
  EXPECT_EQ(b.KeyCount(), 0u);
}

// A snapshot saved by a machine whose wall clock was ahead (or read after the clock was stepped
// back) holds sliding-log requests "in the future". The import treats them as made now: before,
// the next request stored a negative offset, which wrapped to a request 2^40 ms (35 years)
// ahead, and the limiter's own export could not be imported any more (found by
// fuzz/snapshot_import_fuzz).
TEST(Snapshot, LogRequestsFromTheFutureCountAsNow) {
  const Limit log{Algorithm::kSlidingLog, 5, 60000};
  ManualClock ahead(1000, kWall + 30000);  // the saving process's wall clock: 30 s ahead
  Limiter a(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &ahead});
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a.Check("s", "k", {log}, 1)->allowed);
    ahead.Advance(100);
  }
  std::string snapshot;
  ASSERT_TRUE(a.ExportState(&snapshot).ok());

  ManualClock clock(5000, kWall);
  Limiter b(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(b.ImportState(snapshot).ok());
  Decision d = *b.Check("s", "k", {log}, 1);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 1);  // the three saved requests count
  EXPECT_LE(d.reset_after_ms, 60000);
  std::string again;
  ASSERT_TRUE(b.ExportState(&again).ok());
  Limiter c(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  EXPECT_TRUE(c.ImportState(again).ok()) << "the limiter's own export loads";
  // A window later everything has left it: no request was stored decades ahead.
  clock.Advance(60000);
  d = *b.Check("s", "k", {log}, 5);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
}

// A snapshot saved by a clock a day ahead (or loaded after the wall clock was set back a day: a
// VM restored from a snapshot, a start before time sync) loads as if no time had passed since the
// save: every state waits at most what its own limit, charges, block or lease explained then, not
// a day more. The limiter's own next export keeps that time base, so a third limiter on the true
// clock reads it the same way.
TEST(Snapshot, SavedByAClockADayAheadWaitsNoLongerThanItsLimits) {
  constexpr int64_t kDay = int64_t{24} * 3600 * 1000;
  const Limit bucket{Algorithm::kTokenBucket, 2, 60000};
  const Limit gcra{Algorithm::kGcra, 2, 60000};
  const Limit leaky{Algorithm::kLeakyBucket, 2, 60000};
  const Limit window{Algorithm::kSlidingWindow, 2, 60000};
  const Limit fixed{Algorithm::kFixedWindow, 2, 60000};
  const Limit blocked{Algorithm::kSlidingLog, 1, 60000, 0, 5 * 60000};
  const Limit lease{Algorithm::kConcurrency, 1, 60000};
  ManualClock ahead(1000, kWall + kDay);
  Limiter a(LimiterOptions{.sweep_interval_ms = 0, .clock = &ahead});
  for (const Limit& l : {bucket, gcra, leaky, window, fixed, blocked}) {
    for (int i = 0; i < 3; ++i) (void)a.Check("", "k", {l}, 1);
    ASSERT_FALSE(a.Check("", "k", {l}, 1)->allowed) << FormatLimit(l);
  }
  ASSERT_TRUE(a.Charge("", "debt", {bucket}, 10).ok());  // into debt: answered as denied
  const int64_t debt_wait = a.Check("", "debt", {bucket}, 1)->retry_after_ms;
  ASSERT_GT(debt_wait, 60000);
  Lease held = *a.Acquire("", "lease", {lease});
  ASSERT_TRUE(held.held());
  held.Detach();
  // What each wait was at the save (a sliding window's may pass its window: the previous
  // window's weight).
  std::vector<int64_t> saved;
  for (const Limit& l : {bucket, gcra, leaky, window, fixed, blocked}) {
    saved.push_back(a.Peek("", "k", {l}, 1)->retry_after_ms);
    EXPECT_LE(saved.back(), l.block_ms > 0 ? l.block_ms : 2 * l.window_ms) << FormatLimit(l);
  }
  std::string snapshot;
  ASSERT_TRUE(a.ExportState(&snapshot).ok());

  const auto expect_bounded = [&](Limiter& b, const char* when) {
    size_t i = 0;
    for (const Limit& l : {bucket, gcra, leaky, window, fixed, blocked}) {
      const Decision d = *b.Peek("", "k", {l}, 1);
      EXPECT_FALSE(d.allowed) << when << " " << FormatLimit(l) << ": the saved state holds";
      EXPECT_GT(d.retry_after_ms, 0) << when << " " << FormatLimit(l);
      EXPECT_LE(d.retry_after_ms, saved[i++]) << when << " " << FormatLimit(l);
    }
    const Decision debt = *b.Peek("", "debt", {bucket}, 1);
    EXPECT_FALSE(debt.allowed) << when;
    EXPECT_LE(debt.retry_after_ms, debt_wait) << when << ": the debt";
    const Decision busy = *b.Peek("", "lease", {lease}, 1);
    EXPECT_FALSE(busy.allowed) << when << ": the lease is still held";
    EXPECT_LE(busy.retry_after_ms, lease.window_ms) << when << ": the lease";
  };
  ManualClock behind(5, kWall);
  Limiter b(LimiterOptions{.sweep_interval_ms = 0, .clock = &behind});
  ASSERT_TRUE(b.ImportState(snapshot).ok());
  expect_bounded(b, "loaded a day behind");

  behind.Advance(1000);
  std::string again;
  ASSERT_TRUE(b.ExportState(&again).ok());
  Limiter c(LimiterOptions{.sweep_interval_ms = 0, .clock = &behind});
  ASSERT_TRUE(c.ImportState(again).ok());
  expect_bounded(c, "its own export, loaded on the same clock");
}

// Two runs of one millisecond (a count past a run's 24-bit field starts a second one) are a
// valid log, and the limiter's export of it loads again.
TEST(Snapshot, LogRunsOfTheSameMillisecondRoundTrip) {
  const Limit log{Algorithm::kSlidingLog, int64_t{1} << 30, 60000};
  ManualClock clock(1000, kWall);
  Limiter a(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(a.Check("s", "k", {log}, (int64_t{1} << 24) - 2)->allowed);
  ASSERT_TRUE(a.Check("s", "k", {log}, 5)->allowed);
  std::string snapshot;
  ASSERT_TRUE(a.ExportState(&snapshot).ok());
  Limiter b(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(b.ImportState(snapshot).ok());
  EXPECT_EQ(b.Peek("s", "k", {log}, 0)->remaining, a.Peek("s", "k", {log}, 0)->remaining);
}

// A record whose count word is negative is refused: no algorithm writes one, and the token
// bucket would shift by its top bits (undefined behaviour; found by fuzz/snapshot_import_fuzz).
TEST(Snapshot, NegativeStateValuesAreRefused) {
  ManualClock clock(1000, kWall);
  Limiter a(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(a.Check("s", "k", {{Algorithm::kTokenBucket, 10, 60000}}, 1)->allowed);
  std::string snapshot;
  ASSERT_TRUE(a.ExportState(&snapshot).ok());
  // Header (magic, version, shards, seed, wall: 32 bytes), then one record: kind, key, shard,
  // expiry (21 bytes), a, b.
  ASSERT_EQ(snapshot.size(), 32u + 21 + 16 + 8);
  const int64_t negative = -8212165486440104696;
  std::memcpy(snapshot.data() + 32 + 21 + 8, &negative, 8);
  const uint64_t sum = XXH64(snapshot.data(), snapshot.size() - 8, 0);
  std::memcpy(snapshot.data() + snapshot.size() - 8, &sum, 8);
  Limiter b(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  absl::Status st = b.ImportState(snapshot);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(b.KeyCount(), 0u);
}

// A sliding-window count beyond what the engine's slot keeps (2^60, where charges saturated before
// the counts were packed into 56 bits) loads as the largest it keeps, which decides the same: far
// in debt.
TEST(Snapshot, HugeSlidingWindowCountsLoadSaturated) {
  const Limit sw{Algorithm::kSlidingWindow, 10, 60000};
  ManualClock clock(1000, kWall);
  Limiter a(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(a.Check("s", "k", {sw}, 1)->allowed);
  std::string snapshot;
  ASSERT_TRUE(a.ExportState(&snapshot).ok());
  // Header (32 bytes), record head (21), window start, previous count, then the current count.
  ASSERT_EQ(snapshot.size(), 32u + 21 + 24 + 8);
  const size_t cur_at = 32 + 21 + 16;
  int64_t cur = 0;
  std::memcpy(&cur, snapshot.data() + cur_at, 8);
  ASSERT_EQ(cur, 1);
  cur = int64_t{1} << 60;
  std::memcpy(snapshot.data() + cur_at, &cur, 8);
  const uint64_t sum = XXH64(snapshot.data(), snapshot.size() - 8, 0);
  std::memcpy(snapshot.data() + snapshot.size() - 8, &sum, 8);

  Limiter b(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(b.ImportState(snapshot).ok());
  const Decision d = *b.Peek("s", "k", {sw}, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  std::string again;
  ASSERT_TRUE(b.ExportState(&again).ok());
  ASSERT_EQ(again.size(), snapshot.size());
  std::memcpy(&cur, again.data() + cur_at, 8);
  EXPECT_EQ(cur, (int64_t{1} << 56) - 1);
}

// A log run older than the longest window is outside every window: the import leaves it out.
// Kept, a time near INT64_MIN became the log's base and the next request's offset overflowed
// (found by fuzz/snapshot_import_fuzz).
TEST(Snapshot, LogRunsOlderThanEveryWindowAreDropped) {
  const Limit log{Algorithm::kSlidingLog, 5, 60000};
  ManualClock clock(1000, kWall);
  Limiter a(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(a.Check("s", "k", {log}, 1)->allowed);
  clock.Advance(250);
  ASSERT_TRUE(a.Check("s", "k", {log}, 1)->allowed);
  std::string snapshot;
  ASSERT_TRUE(a.ExportState(&snapshot).ok());
  // Header (32 bytes), record head (21), run count (4), then the first run's time.
  const int64_t ancient = INT64_MIN + 1'000'000;
  std::memcpy(snapshot.data() + 32 + 21 + 4, &ancient, 8);
  const uint64_t sum = XXH64(snapshot.data(), snapshot.size() - 8, 0);
  std::memcpy(snapshot.data() + snapshot.size() - 8, &sum, 8);

  Limiter b(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(b.ImportState(snapshot).ok());
  EXPECT_EQ(b.Peek("s", "k", {log}, 0)->remaining, 4);  // only the recent request
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(b.Check("s", "k", {log}, 1)->allowed);
  EXPECT_FALSE(b.Check("s", "k", {log}, 1)->allowed);
  std::string again;
  ASSERT_TRUE(b.ExportState(&again).ok());
  Limiter c(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(c.ImportState(again).ok());
  EXPECT_EQ(c.Peek("s", "k", {log}, 0)->remaining, 0);
}

// A fixed window restored with a count near 2^63 (no check writes one; a corrupt file can) stays
// exhausted: count + cost overflowed and wrapped to an allow (found by fuzz/snapshot_import_fuzz).
TEST(Snapshot, HugeRestoredCountDenies) {
  const Limit window{Algorithm::kFixedWindow, 5, 3600000};
  ManualClock clock(1000, kWall);
  Limiter a(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(a.Check("s", "k", {window}, 1)->allowed);
  std::string snapshot;
  ASSERT_TRUE(a.ExportState(&snapshot).ok());
  const int64_t huge = INT64_MAX;
  std::memcpy(snapshot.data() + 32 + 21 + 8, &huge, 8);  // the record's count word
  const uint64_t sum = XXH64(snapshot.data(), snapshot.size() - 8, 0);
  std::memcpy(snapshot.data() + snapshot.size() - 8, &sum, 8);
  Limiter b(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(b.ImportState(snapshot).ok());
  const Decision d = *b.Check("s", "k", {window}, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
}

// The count an export reports is the records it wrote, even while checks add keys meanwhile
// (the server logs and shows this count; a count taken before the export disagreed with the
// file), and an import reports the records it read.
TEST(Snapshot, CountsAreTheRecordsWrittenWhileChecksRun) {
  ManualClock clock(1000, kWall);  // shared and never advanced: nothing expires
  Limiter a(LimiterOptions{.shards = 4, .sweep_interval_ms = 0, .clock = &clock});
  const Limit limit{Algorithm::kFixedWindow, 5, 3600000};
  for (int i = 0; i < 50000; ++i) (void)a.Check("s", "base" + std::to_string(i), {limit}, 1);
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; !stop; ++i) {
        (void)a.Check("s", "w" + std::to_string(w) + ":" + std::to_string(i), {limit}, 1);
      }
    });
  }
  for (int round = 0; round < 5; ++round) {
    std::string snapshot;
    uint64_t written = 0;
    ASSERT_TRUE(a.ExportState(&snapshot, &written).ok());
    Limiter b(LimiterOptions{.shards = 4, .sweep_interval_ms = 0, .clock = &clock});
    uint64_t read = 0;
    ASSERT_TRUE(b.ImportState(snapshot, &read).ok());
    EXPECT_EQ(read, written);
    EXPECT_EQ(b.KeyCount(), written);
  }
  stop = true;
  for (auto& t : writers) t.join();
}

}  // namespace
}  // namespace rl

// The tables' memory (store.h): a table that grows gives its old block back to the system, so the
// resident set grows by what the tables hold, not by that plus every block they outgrew left behind
// as heap fragments; a sliding-window slot packs its two counts into 14 bytes (32-byte slots) and
// keeps every count the algorithm can reach.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/config.h"
#include "algorithms.h"
#include "gtest/gtest.h"
#include "rl/limiter.h"
#include "store.h"

namespace rl {
namespace {

int64_t RssBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

void* volatile sink;

TEST(TableMemoryTest, OutgrownBlocksLeaveTheResidentSet) {
#ifdef ABSL_HAVE_ADDRESS_SANITIZER
  GTEST_SKIP() << "under AddressSanitizer every table block comes from the heap";
#endif
  // Freeing a 16 MiB block that glibc mapped raises its mmap threshold to 16 MiB, as a server's
  // tables do for one another once the first of them outgrow their blocks: from then on blocks
  // below that come from the heap, where an outgrown block stays resident.
  sink = std::malloc(size_t{16} << 20);
  std::free(sink);
  ManualClock clock(0);
  const int64_t before = RssBytes();
  Limiter limiter(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  const Limit limit{Algorithm::kTokenBucket, 100, 60000};
  for (int i = 0; i < 150000; ++i) {
    ASSERT_TRUE(limiter.Check("", "key" + std::to_string(i), {limit}).ok());
  }
  const int64_t grown = RssBytes() - before;
  const int64_t held = static_cast<int64_t>(limiter.Stats().memory_bytes);
  // One table of 262143 slots (7 MiB); the blocks it outgrew add up to as much again.
  EXPECT_LE(grown, held + held / 4 + (int64_t{1} << 20)) << "held " << held;
}

using internal::kMaxWindowCount;
using internal::Slot3;

TEST(TableMemoryTest, SlidingWindowSlotKeepsBothCounts) {
  const int64_t values[] = {0,
                            1,
                            255,
                            256,
                            65535,
                            int64_t{1} << 40,
                            (int64_t{1} << 48) + 12345,
                            kMaxWindowCount - 1,
                            kMaxWindowCount};
  for (int64_t b : values) {
    for (int64_t c : values) {
      const Slot3 s(0x0123456789ABCDEFull, 77, -5, b, c);
      EXPECT_EQ(s.previous(), b) << b << " " << c;
      EXPECT_EQ(s.current(), c) << b << " " << c;
      EXPECT_EQ(s.rel_time(), -5);
      EXPECT_EQ(s.key, 0x0123456789ABCDEFull);
      EXPECT_EQ(s.expiry, 77u);
      s.set_counts(c, b);  // rewritten in place, the neighbour's bytes included
      EXPECT_EQ(s.previous(), c);
      EXPECT_EQ(s.current(), b);
    }
  }
  // Counts from elsewhere (an older snapshot) are clamped into the range; below zero means zero to
  // the algorithm, as above the range means "far in debt".
  EXPECT_EQ(Slot3::ClampCount(-7), 0);
  EXPECT_EQ(Slot3::ClampCount(int64_t{1} << 60), kMaxWindowCount);
  EXPECT_EQ(Slot3::ClampCount(12345), 12345);
}

// Charges saturate a sliding window at the largest count its slot keeps, so the limiter stores
// exactly what the algorithm computed.
TEST(TableMemoryTest, SlidingWindowChargesSaturateAtTheSlotsRange) {
  const Limit l{Algorithm::kSlidingWindow, 10, 60000};
  internal::ThreeWordState s{0, 0, kMaxWindowCount - 3};
  const internal::Step<internal::ThreeWordState> step =
      internal::SlidingWindowAdjust(&s, l, 1, kMaxLimit, internal::AdjustOp::kCharge);
  EXPECT_EQ(step.state.current, kMaxWindowCount);
  EXPECT_FALSE(step.result.allowed);

  ManualClock clock(0);
  Limiter limiter(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  for (int i = 0; i < 70000; ++i) ASSERT_TRUE(limiter.Charge("", "k", {l}, kMaxLimit).ok());
  std::string snapshot;
  ASSERT_TRUE(limiter.ExportState(&snapshot).ok());
  // The exported count is the saturated one, read back from the packed slot.
  const internal::ThreeWordState expect{0, 0, kMaxWindowCount};
  const Decision d = *limiter.Peek("", "k", {l}, 1);
  const internal::Step<internal::ThreeWordState> want = internal::SlidingWindow(&expect, l, 0, 1);
  EXPECT_EQ(d.allowed, want.result.allowed);
  EXPECT_EQ(d.retry_after_ms, want.result.retry_after_ms);
  EXPECT_EQ(d.reset_after_ms, want.result.reset_after_ms);
  Limiter restored(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(restored.ImportState(snapshot).ok());
  const Decision r = *restored.Peek("", "k", {l}, 1);
  EXPECT_EQ(r.retry_after_ms, d.retry_after_ms);
  EXPECT_EQ(r.reset_after_ms, d.reset_after_ms);
}

}  // namespace
}  // namespace rl

// A snapshot exported by the previous round's engine (before the unequal shard shares and the
// byte-ring sliding log) loads into this one and answers with its counts: the state keys, the
// record layout and the log runs mean the same, whatever the shard routing or the log's memory
// format became.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rl/limiter.h"

namespace rl {
namespace {

constexpr int64_t kWall = 1'700'000'000'000;

// Exported by the previous round's engine (d13b63d, snapshot version 4, 256 shards) from a
// ManualClock(1000, kWall): 7 checks of ("", "user:42") with kLimits, 3 of ("api", "user:7")
// with kLimits[0] only.
const std::string kVersionFour(
    "\x52\x4c\x53\x4e\x41\x50\x00\x00\x04\x00\x00\x00\x00\x01\x00\x00\xd3\x00\x25\x4a\x7d\xc7\x15"
    "\x47\x00\x68\xe5\xcf\x8b\x01\x00\x00\x00\x5c\x2d\x18\x53\x7e\x6c\xa2\x12\x19\x00\x00\x00\x00"
    "\x58\x1c\xd0\x8b\x01\x00\x00\x00\x68\xe5\xcf\x8b\x01\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00"
    "\x22\xc4\x70\x21\xe6\xcc\xa0\xf6\x67\x7d\x00\x00\x00\x00\x54\xe6\xcf\x8b\x01\x00\x00\x01\x00"
    "\x00\x00\x00\x68\xe5\xcf\x8b\x01\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x20\xe6\xe1\x67\xbe"
    "\xd0\x7a\x24\x9c\xb0\x00\x00\x00\x00\xb0\xe5\xcf\x8b\x01\x00\x00\x00\x68\xe5\xcf\x8b\x01\x00"
    "\x00\xa0\x68\x06\x00\x00\x00\x00\x00\x20\x04\xda\xf2\x36\xca\x75\x8c\xd1\xdd\x00\x00\x00\x00"
    "\x10\xe6\xcf\x8b\x01\x00\x00\x00\x68\xe5\xcf\x8b\x01\x00\x00\x20\xbf\x02\x00\x00\x00\x00\x00"
    "\x29\x81\x71\x6f\x57\x73\xd3\x54",
    192);
const std::vector<Limit> kLimits = {{Algorithm::kTokenBucket, 10, 60000},
                                    {Algorithm::kFixedWindow, 100, 3600000},
                                    {Algorithm::kSlidingLog, 20, 60000}};

uint32_t VersionOf(const std::string& snapshot) {
  uint32_t v = 0;
  std::memcpy(&v, snapshot.data() + 8, 4);
  return v;
}

void ExpectTheSavedCounts(Limiter& b) {
  Decision d = *b.Check("", "user:42", kLimits);
  ASSERT_EQ(d.count, 3);
  EXPECT_EQ(d.limits[0].remaining, 10 - 8);
  EXPECT_EQ(d.limits[1].remaining, 100 - 8);
  EXPECT_EQ(d.limits[2].remaining, 20 - 8);
  EXPECT_EQ(b.Check("api", "user:7", {kLimits[0]})->remaining, 10 - 4);
}

TEST(PreviousRoundSnapshotTest, LoadsAndAnswersWithItsCounts) {
  ASSERT_EQ(VersionOf(kVersionFour), 4u);
  ManualClock clock(1000, kWall);
  Limiter b(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(b.ImportState(kVersionFour).ok());
  EXPECT_EQ(b.KeyCount(), 4u);
  ExpectTheSavedCounts(b);
  // Its own export loads again, into another shard count, and finds the same states.
  std::string again;
  ASSERT_TRUE(b.ExportState(&again).ok());
  Limiter c(LimiterOptions{.shards = 8, .sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(c.ImportState(again).ok());
  Decision d = *c.Check("", "user:42", kLimits);
  EXPECT_EQ(d.limits[0].remaining, 10 - 9);
  EXPECT_EQ(c.KeyCount(), 4u) << "no state was created beside the loaded ones";
}

}  // namespace
}  // namespace rl

// rl::RemoteLimiter with ALIGNED_WINDOW (envoyproxy/ratelimit's window) against the real
// rl-server: inline and server-side policies count one state, and the window is the wall clock's
// hour, so reset_after_ms counts to the end of that hour and X-RateLimit-Reset falls on it.
#include <chrono>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "remote_limiter_fixture.h"
#include "rl/headers.h"
#include "rl/limit.h"
#include "rl/remote_limiter.h"

namespace rl {
namespace {

using remote_test::MakePolicy;
using remote_test::RemoteLimiterTest;
using std::chrono::milliseconds;

constexpr int64_t kHourMs = 3'600'000;

int64_t WallMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST_F(RemoteLimiterTest, AlignedWindowCountsTheWallClocksHourInBothPolicyModes) {
  ASSERT_EQ(Raw({"RL.POLICY", "SET", "hourly", "ALIGNED_WINDOW", "3", "1h"}).str, "OK");
  const Policy hourly = MakePolicy("hourly", "ALIGNED_WINDOW 3 1h");
  auto inline_client = Connect(milliseconds(2000));
  auto named_client =
      Connect(milliseconds(2000), 2, "", RemoteLimiterOptions::PolicyMode::kServerPolicy);
  const int64_t before = WallMs();
  absl::StatusOr<Decision> d = inline_client->Check(hourly, "tenant");
  const int64_t after = WallMs();
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->remaining, 2);
  // The window ends at the wall clock's next full hour (this machine's clock is the server's).
  const int64_t end = d->reset_after_ms;
  const int64_t hour_end = (before / kHourMs + 1) * kHourMs;
  if (after / kHourMs == before / kHourMs) {  // no hour began during the call
    EXPECT_GE(end, hour_end - after - 1'000);
    EXPECT_LE(end, hour_end - before + 1'000);
  }
  d = named_client->Check(hourly, "tenant");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->remaining, 1) << "one state whichever mode asks";
  // X-RateLimit-Reset (Unix seconds) falls on the end of the hour: a multiple of 3600, give or
  // take the call's time and the rounding up.
  bool seen = false;
  for (const HeaderField& h : HeaderValues(*d, "hourly", WallMs())) {
    if (h.name != "X-RateLimit-Reset") continue;
    seen = true;
    const int64_t off = std::stoll(h.value) % 3600;
    EXPECT_TRUE(off <= 2 || off >= 3598) << h.value;
  }
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace rl

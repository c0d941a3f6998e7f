// rl::RemoteLimiter::ChargeWithin against the real rl-server: RL.CHECK ... MAXWAIT in both policy
// modes on one state (two tokens now, then waiters queued 30 and 60 minutes out, then a refusal
// that takes nothing), MAXWAIT 0ms as a plain check, and bad input refused before sending.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "remote_limiter_fixture.h"
#include "rl/remote_limiter.h"

namespace rl {
namespace {

using remote_test::MakePolicy;
using std::chrono::milliseconds;

class RemoteMaxWaitTest : public remote_test::RemoteLimiterTest {};

TEST_F(RemoteMaxWaitTest, QueuesWithinTheWaitInBothPolicyModes) {
  ASSERT_EQ(Raw({"RL.POLICY", "SET", "q", "TOKEN_BUCKET", "2", "1h"}).str, "OK");
  auto limiter = Connect(milliseconds(2000));
  auto named = Connect(milliseconds(2000), 1, "", RemoteLimiterOptions::PolicyMode::kServerPolicy);
  const Policy inline_q = MakePolicy("q", "TOKEN_BUCKET 2 1h");
  Policy by_name;
  by_name.name = "q";
  const int64_t hour = 3600 * 1000;
  for (int64_t wait_min : {0, 0, 30, 60}) {  // a token every 30 minutes
    // The server's definition (by name) and the caller's (inline) count on one state.
    absl::StatusOr<Decision> d = wait_min == 30 ? named->ChargeWithin(by_name, "k", 1, hour)
                                                : limiter->ChargeWithin(inline_q, "k", 1, hour);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->allowed) << wait_min;
    EXPECT_EQ(d->decided_by, DecidedBy::kLimiter);
    EXPECT_LE(std::llabs(d->retry_after_ms - wait_min * 60000), 1000) << d->retry_after_ms;
  }
  // 90 minutes away: refused, nothing taken (the raw peek sees the same wait).
  absl::StatusOr<Decision> refused = limiter->ChargeWithin(inline_q, "k", 1, hour);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_FALSE(refused->allowed);
  EXPECT_LE(std::llabs(refused->retry_after_ms - 90 * 60000), 1000);
  test::Reply peek = Raw({"RL.PEEK", "k", "POLICY", "q"});
  ASSERT_EQ(peek.elements.size(), 5u) << peek.str;
  EXPECT_LE(std::llabs(peek.elements[3].integer - 90 * 60000), 1000);
  EXPECT_EQ(limiter->Stats().checks, 4u);
}

TEST_F(RemoteMaxWaitTest, ZeroWaitIsAPlainCheckAndBadInputIsRefused) {
  auto limiter = Connect(milliseconds(2000));
  const Policy one = MakePolicy("one", "GCRA 1 1h");
  absl::StatusOr<Decision> d = limiter->ChargeWithin(one, "z", 1, 0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  d = limiter->ChargeWithin(one, "z", 1, 0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->allowed);
  EXPECT_GT(d->retry_after_ms, 0);
  d = limiter->ChargeWithin(one, "z", 1, -1);
  EXPECT_TRUE(absl::IsInvalidArgument(d.status())) << d.status();
  d = limiter->ChargeWithin(MakePolicy("jobs", "CONCURRENCY 3"), "z", 1, 1000);
  EXPECT_TRUE(absl::IsInvalidArgument(d.status())) << d.status();
  EXPECT_EQ(limiter->Stats().failed_open + limiter->Stats().failed_closed, 0u);
}

}  // namespace
}  // namespace rl

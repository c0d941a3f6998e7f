// rl::RemoteLimiter without a server: option and request validation, the failure decisions, and
// that an unreachable server is decided by the policy (fast, counted, reported) — never an error.
#include <chrono>

#include "gtest/gtest.h"
#include "rl/limit.h"
#include "rl/remote_limiter.h"
#include "subprocess.h"

namespace rl {
namespace {

RemoteLimiterOptions UnreachableOptions() {
  RemoteLimiterOptions options;
  options.port = static_cast<uint16_t>(rl_test::FreeLoopbackPort());  // nothing listens
  options.timeout = std::chrono::milliseconds(30);
  return options;
}

TEST(RemoteLimiterOfflineTest, RejectsBadOptions) {
  RemoteLimiterOptions options;
  options.connections = 0;
  EXPECT_FALSE(RemoteLimiter::Create(options).ok());
  options = RemoteLimiterOptions{};
  options.timeout = std::chrono::milliseconds(0);
  EXPECT_FALSE(RemoteLimiter::Create(options).ok());
  options = RemoteLimiterOptions{};
  options.host = "no such host name.invalid";
  EXPECT_FALSE(RemoteLimiter::Create(options).ok());
}

TEST(RemoteLimiterOfflineTest, FailureDecisionsFollowTheFailureMode) {
  auto limiter = RemoteLimiter::Create(UnreachableOptions());
  ASSERT_TRUE(limiter.ok());
  Policy open = *ParsePolicy("reads", std::string_view("SLIDING_LOG 100 1m FIXED_WINDOW 10 1s"));
  Decision d = (*limiter)->FailureDecision(open, 3);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.limit, 10);  // the tightest limit
  EXPECT_EQ(d.remaining, 7);
  EXPECT_EQ(d.retry_after_ms, 0);
  Policy closed = *ParsePolicy("logins", std::string_view("SLIDING_LOG 5 1m FAIL_CLOSED"));
  d = (*limiter)->FailureDecision(closed, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.retry_after_ms, 1000);
  EXPECT_EQ(d.count, 1);
  EXPECT_EQ(d.limits[0].window_ms, 60'000);
}

TEST(RemoteLimiterOfflineTest, InvalidRequestsAreErrorsWithoutANetworkCall) {
  auto limiter = RemoteLimiter::Create(UnreachableOptions());
  ASSERT_TRUE(limiter.ok());
  Policy policy = *ParsePolicy("reads", std::string_view("SLIDING_LOG 5 1m"));
  EXPECT_TRUE(absl::IsInvalidArgument((*limiter)->Check(policy, "k", -1).status()));
  Policy empty;
  empty.name = "empty";
  EXPECT_TRUE(absl::IsInvalidArgument((*limiter)->Check(empty, "k").status()));
  EXPECT_EQ((*limiter)->Stats().failed_open, 0u);
}

TEST(RemoteLimiterOfflineTest, UnreachableServerIsDecidedFastAndCounted) {
  int reported = 0;
  RemoteLimiterOptions options = UnreachableOptions();
  options.on_failure = [&reported](const Policy&, const absl::Status& why) {
    EXPECT_TRUE(absl::IsUnavailable(why)) << why;
    ++reported;
  };
  auto limiter = RemoteLimiter::Create(options);
  ASSERT_TRUE(limiter.ok());
  Policy open = *ParsePolicy("reads", std::string_view("SLIDING_LOG 5 1m FAIL_OPEN"));
  Policy closed = *ParsePolicy("exports", std::string_view("SLIDING_LOG 5 1m FAIL_CLOSED"));
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<Decision> d = (*limiter)->Check(open, "k");
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->allowed);
    d = (*limiter)->Check(closed, "k");
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d->allowed);
  }
  // A refused connection answers at once, and the back-off makes later calls fail fast: twenty
  // calls take far less than twenty timeouts.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
  RemoteLimiterStats stats = (*limiter)->Stats();
  EXPECT_EQ(stats.failed_open, 10u);
  EXPECT_EQ(stats.failed_closed, 10u);
  EXPECT_EQ(stats.answered, 0u);
  EXPECT_EQ(reported, 20);
  EXPECT_FALSE((*limiter)->Ping().ok());
  EXPECT_FALSE((*limiter)->Peek(open, "k").ok());  // peeks report unavailability as an error
}

}  // namespace
}  // namespace rl

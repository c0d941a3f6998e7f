// rl::RemoteLimiter without a server: option and request validation, the failure decisions (which
// say only what is known), the reconnect back-off on an injected clock, and that an unreachable
// server (or cluster) is decided by the policy (fast, counted, reported) — never an error.
#include <chrono>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rl/clock.h"
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

TEST(RemoteLimiterOfflineTest, FailureDecisionsSayOnlyWhatIsKnown) {
  auto limiter = RemoteLimiter::Create(UnreachableOptions());
  ASSERT_TRUE(limiter.ok());
  Policy open = *ParsePolicy("reads", std::string_view("SLIDING_LOG 100 1m FIXED_WINDOW 10 1s"));
  Decision d = (*limiter)->FailureDecision(open);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.decided_by, DecidedBy::kFailOpen);
  // No limit was evaluated: nothing about the limits or their state is claimed.
  EXPECT_EQ(d.count, 0);
  EXPECT_EQ(d.limit, 0);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.retry_after_ms, 0);
  EXPECT_EQ(d.reset_after_ms, 0);
  EXPECT_FALSE(d.shadow_denied);

  Policy closed = *ParsePolicy("logins", std::string_view("SLIDING_LOG 5 1m FAIL_CLOSED"));
  d = (*limiter)->FailureDecision(closed);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.decided_by, DecidedBy::kFailClosed);
  EXPECT_EQ(d.retry_after_ms, 1000);  // fail_closed_retry_after_ms
  EXPECT_EQ(d.count, 0);
  EXPECT_EQ(d.limit, 0);

  // A name-only policy (kServerPolicy callers need not know the limits) is decided the same way.
  Policy name_only;
  name_only.name = "api";
  name_only.failure_mode = FailureMode::kFailClosed;
  d = (*limiter)->FailureDecision(name_only);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.decided_by, DecidedBy::kFailClosed);

  // A shadow policy never denies, not even for an outage; the denial is reported.
  Policy shadow = *ParsePolicy("trial", std::string_view("GCRA 5 1m SHADOW FAIL_CLOSED"));
  d = (*limiter)->FailureDecision(shadow);
  EXPECT_TRUE(d.allowed);
  EXPECT_TRUE(d.shadow_denied);
  EXPECT_EQ(d.decided_by, DecidedBy::kFailClosed);
  EXPECT_EQ(d.retry_after_ms, 0);
}

// The back-off after a failed connection is measured on the injected clock: while it does not
// move, calls fail at once without touching the network; once it passes, the next call connects
// again. (The connect itself, refused by the kernel, takes real time; nothing here sleeps.)
TEST(RemoteLimiterOfflineTest, ReconnectBackoffFollowsTheInjectedClock) {
  ManualClock clock;
  std::string last_why;
  RemoteLimiterOptions options = UnreachableOptions();
  options.clock = &clock;
  options.connections = 1;
  options.timeout = std::chrono::milliseconds(2000);  // a refused connect answers long before
  options.reconnect_backoff = std::chrono::milliseconds(100);
  options.on_failure = [&last_why](const Policy&, const absl::Status& why) {
    last_why = std::string(why.message());
  };
  auto limiter = RemoteLimiter::Create(options);
  ASSERT_TRUE(limiter.ok());
  Policy open = *ParsePolicy("reads", std::string_view("SLIDING_LOG 5 1m"));

  ASSERT_TRUE((*limiter)->Check(open, "k").ok());
  EXPECT_EQ((*limiter)->Stats().connection_failures, 1u);
  EXPECT_NE(last_why.find("connect"), std::string::npos) << last_why;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE((*limiter)->Check(open, "k").ok());
    EXPECT_NE(last_why.find("back-off"), std::string::npos) << last_why;
  }
  clock.Advance(99);
  ASSERT_TRUE((*limiter)->Check(open, "k").ok());
  EXPECT_EQ((*limiter)->Stats().connection_failures, 1u);  // still within the back-off
  clock.Advance(1);
  ASSERT_TRUE((*limiter)->Check(open, "k").ok());
  EXPECT_EQ((*limiter)->Stats().connection_failures, 2u);  // tried (and failed) again
  EXPECT_NE(last_why.find("connect"), std::string::npos) << last_why;
  EXPECT_EQ((*limiter)->Stats().failed_open, 8u);
  EXPECT_EQ((*limiter)->Stats().timeouts, 0u);
}

TEST(RemoteLimiterOfflineTest, WallTimeComesFromTheInjectedClock) {
  ManualClock clock(0, 1'234'567'000);
  RemoteLimiterOptions options = UnreachableOptions();
  options.clock = &clock;
  auto limiter = RemoteLimiter::Create(options);
  ASSERT_TRUE(limiter.ok());
  EXPECT_EQ((*limiter)->WallNowMs(), 1'234'567'000);
  clock.Advance(5);
  EXPECT_EQ((*limiter)->WallNowMs(), 1'234'567'005);
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

TEST(RemoteLimiterOfflineTest, RejectsBadClusterOptions) {
  for (std::vector<std::string> nodes :
       std::vector<std::vector<std::string>>{{"127.0.0.1"},
                                             {"127.0.0.1:0"},
                                             {"127.0.0.1:7000", ":7001"},
                                             {"no such host name.invalid:7000"}}) {
    RemoteLimiterOptions options;
    options.cluster_nodes = nodes;
    EXPECT_FALSE(RemoteLimiter::Create(options).ok()) << nodes.back();
  }
  RemoteLimiterOptions options;
  options.wait_for_replicas = -1;
  EXPECT_FALSE(RemoteLimiter::Create(options).ok());
  options = RemoteLimiterOptions{};
  options.cluster_nodes = {"127.0.0.1:7000"};
  options.cluster_refresh_interval = std::chrono::milliseconds(0);  // would refresh in a loop
  EXPECT_FALSE(RemoteLimiter::Create(options).ok());
}

// Cluster mode with no node up: every check is decided by its policy, quickly, and Create does
// not wait for the cluster (a service starts while its limiter is down).
TEST(RemoteLimiterOfflineTest, UnreachableClusterIsDecidedByEachPolicy) {
  RemoteLimiterOptions options;
  for (int i = 0; i < 2; ++i) {
    options.cluster_nodes.push_back("127.0.0.1:" + std::to_string(rl_test::FreeLoopbackPort()));
  }
  options.timeout = std::chrono::milliseconds(2000);  // refused connects answer long before
  const auto start = std::chrono::steady_clock::now();
  auto limiter = RemoteLimiter::Create(options);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  Policy open = *ParsePolicy("reads", std::string_view("SLIDING_LOG 5 1m FAIL_OPEN"));
  Policy closed = *ParsePolicy("exports", std::string_view("SLIDING_LOG 5 1m FAIL_CLOSED"));
  const RemoteLimiter::Request requests[] = {{&open, "a"}, {&closed, "b"}, {&open, "c", -1}};
  std::vector<absl::StatusOr<Decision>> results = (*limiter)->CheckMany(requests);
  ASSERT_EQ(results.size(), 3u);
  ASSERT_TRUE(results[0].ok());
  EXPECT_EQ(results[0]->decided_by, DecidedBy::kFailOpen);
  ASSERT_TRUE(results[1].ok());
  EXPECT_EQ(results[1]->decided_by, DecidedBy::kFailClosed);
  EXPECT_FALSE(results[1]->allowed);
  EXPECT_TRUE(absl::IsInvalidArgument(results[2].status()));  // the request itself is wrong
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_FALSE((*limiter)->Ping().ok());
  const RemoteLimiterStats stats = (*limiter)->Stats();
  EXPECT_EQ(stats.nodes, 2u);
  EXPECT_EQ(stats.slot_map_refreshes, 0u);
  EXPECT_EQ(stats.failed_open, 1u);
  EXPECT_EQ(stats.failed_closed, 1u);
}

}  // namespace
}  // namespace rl

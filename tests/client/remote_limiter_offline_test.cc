// rl::RemoteLimiter without a server: option and request validation, the failure decisions (which
// say only what is known), the reconnect back-off on an injected clock, that an unreachable
// server (or cluster) is decided by the policy (fast, counted, reported) — never an error — and
// the local fallback on a manual clock: each instance's share of a limit, real decisions at it,
// and the cases it leaves to the policy's FailureMode.
#include <chrono>
#include <string>
#include <vector>

#include "fallback.h"
#include "gtest/gtest.h"
#include "rl/clock.h"
#include "rl/limit.h"
#include "rl/limiter.h"
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
  options = RemoteLimiterOptions{};
  options.fallback.instances = -1;
  EXPECT_FALSE(RemoteLimiter::Create(options).ok());
  options.fallback.instances = 2;
  options.fallback.max_keys = 0;
  EXPECT_FALSE(RemoteLimiter::Create(options).ok());
}

// A mistake in the request is an error whether or not the server can be reached, with the text
// the in-process Limiter gives: an invalid hand-built policy is never decided by its
// FailureMode during an outage (nor counted as one).
TEST(RemoteLimiterOfflineTest, InvalidRequestsAreErrorsEvenDuringAnOutage) {
  auto limiter = RemoteLimiter::Create(UnreachableOptions());
  ASSERT_TRUE(limiter.ok());
  Limiter local;
  Policy bad;
  bad.name = "api";
  bad.limits.push_back(Limit{Algorithm::kGcra, 0, 60'000});  // limit 0
  bad.failure_mode = FailureMode::kFailOpen;
  absl::StatusOr<Decision> d = (*limiter)->Check(bad, "k");
  ASSERT_FALSE(d.ok()) << "decided by " << static_cast<int>(d->decided_by);
  EXPECT_TRUE(absl::IsInvalidArgument(d.status()));
  EXPECT_EQ(d.status(), local.Check(bad, "k").status());
  EXPECT_EQ(d.status().message(), "limit must be between 1 and 1099511627776");

  const Policy exports = *ParsePolicy("exports", std::string_view("CONCURRENCY 2 LEASE 1m"));
  EXPECT_EQ((*limiter)->Check(exports, "k").status(), local.Check(exports, "k").status());
  const Policy api = *ParsePolicy("api", std::string_view("GCRA 2 1m"));
  EXPECT_EQ((*limiter)->Acquire(api, "k").status(), local.Acquire(api, "k").status());
  EXPECT_EQ((*limiter)->Check(api, "k", -1).status(), local.Check(api, "k", -1).status());
  const RemoteLimiterStats stats = (*limiter)->Stats();
  EXPECT_EQ(stats.failed_open + stats.failed_closed, 0u);
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

// Each of N instances enforces LIMIT / N (and BURST / N), rounded down, never below 1: together
// they admit at most the limit, or one each when the limit is smaller than N.
TEST(LocalShareTest, DividesLimitAndBurstRoundingDownButNeverToZero) {
  using client_internal::LocalShare;
  const Limit log{Algorithm::kSlidingLog, 100, 60'000, 0};
  EXPECT_EQ(LocalShare(log, 10).limit, 10);
  EXPECT_EQ(LocalShare(log, 3).limit, 33);  // 3 x 33 = 99, never above 100
  EXPECT_EQ(LocalShare(log, 1).limit, 100);
  EXPECT_EQ(LocalShare(log, 1000).limit, 1);  // never 0
  EXPECT_EQ(LocalShare(log, 10).window_ms, 60'000);
  EXPECT_EQ(LocalShare(log, 10).algorithm, Algorithm::kSlidingLog);
  const Limit bucket{Algorithm::kTokenBucket, 100, 60'000, 20};
  EXPECT_EQ(LocalShare(bucket, 10).limit, 10);
  EXPECT_EQ(LocalShare(bucket, 10).capacity(), 2);  // BURST 20 / 10
  EXPECT_EQ(LocalShare(bucket, 40).capacity(), 1);  // 20 / 40 rounds to 0: 1
  const Limit gcra{Algorithm::kGcra, 100, 1'000, 0};
  EXPECT_EQ(LocalShare(gcra, 4).capacity(), 25);  // no BURST: the divided limit
  EXPECT_TRUE(ValidateLimits({LocalShare(bucket, 40), LocalShare(log, 1000)}).ok());
}

RemoteLimiterOptions FallbackOptions(ManualClock* clock, int64_t instances) {
  RemoteLimiterOptions options = UnreachableOptions();
  options.clock = clock;
  options.fallback.instances = instances;
  return options;
}

// The server is unreachable and 4 instances share the limits: each check is decided by the local
// limiter at a quarter of them, with real values (fit for headers), per window, per key; fail-open
// policies are limited too (no blanket allow), and every check is still reported as a failure.
TEST(RemoteLimiterFallbackTest, DecidesAtTheInstancesShareWithRealValues) {
  ManualClock clock;
  int reported = 0;
  RemoteLimiterOptions options = FallbackOptions(&clock, 4);
  options.on_failure = [&reported](const Policy&, const absl::Status&) { ++reported; };
  auto limiter = RemoteLimiter::Create(options);
  ASSERT_TRUE(limiter.ok());
  const Policy closed = *ParsePolicy("logins", std::string_view("SLIDING_LOG 20 1m FAIL_CLOSED"));
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<Decision> d = (*limiter)->Check(closed, "k");
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->allowed) << i;
    EXPECT_EQ(d->decided_by, DecidedBy::kFallback);
    EXPECT_EQ(d->limit, 5);
    EXPECT_EQ(d->remaining, 4 - i);
    EXPECT_EQ(d->count, 1);
    EXPECT_EQ(d->limits[0].window_ms, 60'000);
  }
  clock.Advance(1'000);
  absl::StatusOr<Decision> d = (*limiter)->Check(closed, "k");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->decided_by, DecidedBy::kFallback);
  EXPECT_EQ(d->remaining, 0);
  EXPECT_EQ(d->retry_after_ms, 59'000);  // when the first of the five leaves the window
  EXPECT_TRUE((*limiter)->Check(closed, "other-key")->allowed);
  clock.Advance(59'000);
  d = (*limiter)->Check(closed, "k");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->decided_by, DecidedBy::kFallback);

  // Fail-open is limited at the share as well; CheckMany decides each check on its own.
  const Policy open = *ParsePolicy("reads", std::string_view("FIXED_WINDOW 10 1h FAIL_OPEN"));
  const RemoteLimiter::Request requests[] = {
      {&open, "r"}, {&open, "r"}, {&open, "r"}, {&closed, "k"}, {&open, "r", -1}};
  std::vector<absl::StatusOr<Decision>> results = (*limiter)->CheckMany(requests);
  ASSERT_EQ(results.size(), 5u);
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    EXPECT_EQ(results[i]->decided_by, DecidedBy::kFallback) << i;
  }
  EXPECT_TRUE(results[0]->allowed);
  EXPECT_TRUE(results[1]->allowed);  // a share of 10 / 4 = 2
  EXPECT_FALSE(results[2]->allowed);
  EXPECT_EQ(results[2]->limit, 2);
  EXPECT_TRUE(results[3]->allowed);
  EXPECT_TRUE(absl::IsInvalidArgument(results[4].status()));

  const RemoteLimiterStats stats = (*limiter)->Stats();
  EXPECT_EQ(stats.fallback_allowed, 10u);
  EXPECT_EQ(stats.fallback_denied, 2u);
  EXPECT_EQ(stats.failed_open + stats.failed_closed + stats.answered, 0u);
  EXPECT_EQ(stats.fallback_keys, 3u);  // k, other-key, r
  EXPECT_EQ(reported, 12);
}

// What the fallback cannot decide is decided by the policy's FailureMode: a policy without
// limits, a cost the share can never admit (though the policy could), a new key when the local
// limiter is full. A cost above the policy's own capacity is denied for good, as the server
// would; a shadow policy stays shadow.
TEST(RemoteLimiterFallbackTest, FailureModeDecidesWhatTheFallbackCannot) {
  ManualClock clock;
  RemoteLimiterOptions options = FallbackOptions(&clock, 10);
  options.policy_mode = RemoteLimiterOptions::PolicyMode::kServerPolicy;  // allows name-only
  options.fallback.max_keys = 2;
  auto limiter = RemoteLimiter::Create(options);
  ASSERT_TRUE(limiter.ok());
  Policy name_only;
  name_only.name = "stored";
  name_only.failure_mode = FailureMode::kFailClosed;
  absl::StatusOr<Decision> d = (*limiter)->Check(name_only, "k");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->decided_by, DecidedBy::kFailClosed);

  // An export costs 10 of 30 per hour; a tenth of that (3) never admits one.
  const Policy exports =
      *ParsePolicy("exports", std::string_view("TOKEN_BUCKET 30 1h FAIL_CLOSED"));
  d = (*limiter)->Check(exports, "k", 10);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->decided_by, DecidedBy::kFailClosed);
  EXPECT_FALSE(d->allowed);
  d = (*limiter)->Check(exports, "k", 31);  // the server would say never, and so does the share
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->decided_by, DecidedBy::kFallback);
  EXPECT_EQ(d->retry_after_ms, kRetryNever);

  const Policy trial = *ParsePolicy("trial", std::string_view("FIXED_WINDOW 10 1h SHADOW"));
  EXPECT_TRUE((*limiter)->Check(trial, "t")->allowed);
  d = (*limiter)->Check(trial, "t");  // over the share of 1: allowed, and the denial reported
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_TRUE(d->shadow_denied);
  EXPECT_EQ(d->decided_by, DecidedBy::kFallback);

  // Two states at their share: max_keys (2) reached and nothing safe to evict.
  const Policy reads = *ParsePolicy("reads", std::string_view("FIXED_WINDOW 10 1h FAIL_OPEN"));
  EXPECT_EQ((*limiter)->Check(reads, "a")->decided_by, DecidedBy::kFallback);
  ASSERT_EQ((*limiter)->Stats().fallback_keys, 2u);  // "t" and "a"
  d = (*limiter)->Check(reads, "new");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->decided_by, DecidedBy::kFailOpen);
  d = (*limiter)->Check(reads, "a");  // a known key is still decided locally
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->decided_by, DecidedBy::kFallback);
  EXPECT_FALSE(d->allowed);
  const RemoteLimiterStats stats = (*limiter)->Stats();
  EXPECT_EQ(stats.failed_closed, 2u);
  EXPECT_EQ(stats.failed_open, 1u);
  EXPECT_EQ(stats.fallback_allowed, 3u);
  EXPECT_EQ(stats.fallback_denied, 2u);
  EXPECT_EQ(stats.fallback_keys, 2u);
}

}  // namespace
}  // namespace rl

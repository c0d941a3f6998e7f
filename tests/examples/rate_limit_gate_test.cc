// RateLimitGate without HTTP: route overrides and the global default, weighted cost, unlimited
// routes, shadow policies, a route that holds a concurrency lease while it runs, config errors,
// client keys that never carry raw client input, and outages: decisions by a failure mode get no
// rate-limit headers (fail-closed: 503 with a short Retry-After), decisions by the remote limiter's
// local fallback get real ones (a denial is a 429), and the outage log writes one line per episode,
// on a manual clock, counting how the episode's checks were decided.
#include "rate_limit_gate.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rl/clock.h"
#include "rl/limiter.h"
#include "rl/rate_limiter.h"

namespace rl_http {
namespace {

std::string HeaderValue(const GateResult& result, std::string_view name) {
  for (const rl::HeaderField& field : result.headers) {
    if (field.name == name) return field.value;
  }
  return "";
}

class RateLimitGateTest : public ::testing::Test {
 protected:
  RateLimitGateTest() : engine_(rl::LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_}) {}

  RateLimitGate MakeGate(const RouteConfig& config) {
    absl::StatusOr<RateLimitGate> gate = RateLimitGate::Create(config, &limiter_);
    EXPECT_TRUE(gate.ok()) << gate.status();
    return *std::move(gate);
  }

  rl::ManualClock clock_;
  rl::Limiter engine_;
  rl::LocalRateLimiter limiter_{&engine_};
};

TEST_F(RateLimitGateTest, RoutesPickOverridesElseTheDefault) {
  RateLimitGate gate = MakeGate(DefaultRouteConfig());
  int64_t cost = 0;
  EXPECT_EQ(gate.PolicyFor("GET", "/api/products", &cost)->name, "products");
  EXPECT_EQ(cost, 1);
  EXPECT_EQ(gate.PolicyFor("POST", "/v1/exports", &cost)->name, "exports");
  EXPECT_EQ(cost, 10);
  EXPECT_EQ(gate.PolicyFor("POST", "/v1/exports", &cost)->failure_mode,
            rl::FailureMode::kFailClosed);
  EXPECT_EQ(gate.PolicyFor("GET", "/health", &cost), nullptr);
  EXPECT_EQ(gate.PolicyFor("GET", "/api/orders", &cost)->name, "api-default");
  // The method is part of the route: POST /api/products is not the products route.
  EXPECT_EQ(gate.PolicyFor("POST", "/api/products", &cost)->name, "api-default");
}

TEST_F(RateLimitGateTest, ProductsAllowFivePerMinutePerClient) {
  RateLimitGate gate = MakeGate(DefaultRouteConfig());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(gate.Check("GET", "/api/products", "key:a").allowed);
  GateResult denied = gate.Check("GET", "/api/products", "key:a");
  EXPECT_FALSE(denied.allowed);
  ASSERT_TRUE(denied.decision.has_value());
  EXPECT_GT(denied.decision->retry_after_ms, 0);
  bool has_retry_after = false;
  for (const rl::HeaderField& field : denied.headers)
    has_retry_after |= field.name == "Retry-After";
  EXPECT_TRUE(has_retry_after);
  EXPECT_TRUE(gate.Check("GET", "/api/products", "key:b").allowed);
  clock_.Advance(60'000);  // a minute later the window has slid past all five
  EXPECT_TRUE(gate.Check("GET", "/api/products", "key:a").allowed);
}

TEST_F(RateLimitGateTest, UnlimitedRoutesNeverTouchTheLimiter) {
  RateLimitGate gate = MakeGate(DefaultRouteConfig());
  for (int i = 0; i < 1000; ++i) {
    GateResult result = gate.Check("GET", "/health", "key:a");
    EXPECT_TRUE(result.allowed);
    EXPECT_TRUE(result.headers.empty());
  }
  EXPECT_EQ(engine_.KeyCount(), 0u);
}

TEST_F(RateLimitGateTest, ShadowPoliciesCountButNeverBlock) {
  RouteConfig config;
  config.policies = {{"trial", "FIXED_WINDOW 1 1m SHADOW"}};
  config.default_policy = "trial";
  RateLimitGate gate = MakeGate(config);
  EXPECT_TRUE(gate.Check("GET", "/x", "ip:127.0.0.1").allowed);
  GateResult second = gate.Check("GET", "/x", "ip:127.0.0.1");
  EXPECT_TRUE(second.allowed);
  ASSERT_TRUE(second.decision.has_value());
  EXPECT_TRUE(second.decision->shadow_denied);  // the limits' verdict is still reported
}

// Issue 16: /v1/reports takes a lease for the duration of the request: three requests of a client
// hold the three slots, a fourth is a 429 that names the concurrency limit, and the slot is back
// as soon as one of the three results (and so its request) is gone. Another client has its own
// three.
TEST_F(RateLimitGateTest, ReportsHoldALeaseWhileTheRequestRuns) {
  RateLimitGate gate = MakeGate(DefaultRouteConfig());
  int64_t cost = 0;
  ASSERT_EQ(gate.PolicyFor("POST", "/v1/reports", &cost)->name, "reports");
  std::vector<GateResult> running;
  for (int i = 0; i < 3; ++i) {
    running.push_back(gate.Check("POST", "/v1/reports", "key:a"));
    EXPECT_TRUE(running.back().allowed);
    EXPECT_TRUE(running.back().lease.held());
    EXPECT_EQ(running.back().decision->limit, 3);  // the binding limit: the slots
    EXPECT_EQ(running.back().decision->remaining, 2 - i);
  }
  GateResult fourth = gate.Check("POST", "/v1/reports", "key:a");
  EXPECT_FALSE(fourth.allowed);
  EXPECT_FALSE(fourth.unavailable);  // the client's 429, not an outage
  EXPECT_FALSE(fourth.lease.held());
  EXPECT_GT(fourth.decision->retry_after_ms, 0);  // when the soonest lease ends by its ttl
  EXPECT_EQ(HeaderValue(fourth, "X-RateLimit-Limit"), "3");
  EXPECT_TRUE(gate.Check("POST", "/v1/reports", "key:b").allowed);  // its own slots

  running.erase(running.begin());  // one report finished: its lease ends with it
  GateResult next = gate.Check("POST", "/v1/reports", "key:a");
  EXPECT_TRUE(next.allowed);
  EXPECT_TRUE(next.lease.held());
  running.clear();
  // 20 per hour: 4 of them used so far (a denied acquire counts nothing).
  for (int i = 0; i < 16; ++i) {
    EXPECT_TRUE(gate.Check("POST", "/v1/reports", "key:a").allowed) << i;
  }
  GateResult hourly = gate.Check("POST", "/v1/reports", "key:a");
  EXPECT_FALSE(hourly.allowed);
  EXPECT_EQ(hourly.decision->limit, 20);
}

TEST_F(RateLimitGateTest, BadConfigIsRejected) {
  RouteConfig config = DefaultRouteConfig();
  config.overrides.push_back({"GET", "/x", "no-such-policy", 1});
  EXPECT_FALSE(RateLimitGate::Create(config, &limiter_).ok());
  config = DefaultRouteConfig();
  config.policies["products"] = "SLIDING_LOG five 1m";
  EXPECT_FALSE(RateLimitGate::Create(config, &limiter_).ok());
  config = DefaultRouteConfig();
  config.default_policy = "missing";
  EXPECT_FALSE(RateLimitGate::Create(config, &limiter_).ok());
}

// A limiter whose next answer the test sets: stands in for a RemoteLimiter whose server is down.
class ScriptedLimiter final : public rl::RateLimiter {
 public:
  absl::StatusOr<rl::Decision> Check(const rl::Policy&, std::string_view, int64_t) override {
    return next;
  }
  absl::StatusOr<rl::Decision> Refund(const rl::Policy&, std::string_view, int64_t) override {
    return next;
  }
  absl::StatusOr<rl::Decision> Charge(const rl::Policy&, std::string_view, int64_t) override {
    return next;
  }
  // An outage's lease holds nothing (the failure mode decided; a fallback's would be local).
  absl::StatusOr<rl::Lease> Acquire(const rl::Policy&, std::string_view key, int64_t) override {
    return rl::Lease(nullptr, std::string(key), "", next);
  }
  absl::StatusOr<bool> Release(std::string_view, std::string_view) override { return false; }
  int64_t WallNowMs() const override { return 1'700'000'000'000; }
  rl::Decision next;
};

rl::Decision ByFailureMode(bool allowed) {
  rl::Decision d;  // what RemoteLimiter::FailureDecision gives: nothing about the limits known
  d.allowed = allowed;
  d.decided_by = allowed ? rl::DecidedBy::kFailOpen : rl::DecidedBy::kFailClosed;
  d.retry_after_ms = allowed ? 0 : 1000;
  return d;
}

bool HasHeader(const GateResult& result, std::string_view name) {
  for (const rl::HeaderField& field : result.headers) {
    if (field.name == name) return true;
  }
  return false;
}

TEST(RateLimitGateOutageTest, FailureModeDecisionsCarryNoRateLimitHeaders) {
  ScriptedLimiter limiter;
  absl::StatusOr<RateLimitGate> gate = RateLimitGate::Create(DefaultRouteConfig(), &limiter);
  ASSERT_TRUE(gate.ok());

  limiter.next = ByFailureMode(true);
  GateResult open = gate->Check("GET", "/api/products", "key:a");
  EXPECT_TRUE(open.allowed);
  EXPECT_FALSE(open.unavailable);
  EXPECT_TRUE(open.headers.empty());  // no invented X-RateLimit-Remaining or RateLimit t=0

  limiter.next = ByFailureMode(false);
  GateResult closed = gate->Check("POST", "/v1/exports", "key:a");
  EXPECT_FALSE(closed.allowed);
  EXPECT_TRUE(closed.unavailable);  // -> 503, not 429
  ASSERT_EQ(closed.headers.size(), 1u);
  EXPECT_EQ(closed.headers[0].name, "Retry-After");
  EXPECT_EQ(closed.headers[0].value, "1");

  limiter.next.retry_after_ms = 2500;  // rounded up, never early
  EXPECT_EQ(gate->Check("POST", "/v1/exports", "key:a").headers[0].value, "3");

  // A denial the limiter made is still a 429 with its headers.
  limiter.next = rl::Decision{};
  limiter.next.allowed = false;
  limiter.next.limit = 5;
  limiter.next.retry_after_ms = 4000;
  limiter.next.count = 1;
  limiter.next.limits[0] = rl::LimitResult{false, 5, 60'000, 0, 4000, 60'000};
  GateResult limited = gate->Check("GET", "/api/products", "key:a");
  EXPECT_FALSE(limited.allowed);
  EXPECT_FALSE(limited.unavailable);
  EXPECT_TRUE(HasHeader(limited, "X-RateLimit-Limit"));
  EXPECT_TRUE(HasHeader(limited, "Retry-After"));
}

TEST(RateLimitGateOutageTest, OneLogLinePerOutageEpisode) {
  rl::ManualClock clock;
  std::vector<std::string> lines;
  OutageLog log(&clock, [&lines](std::string_view line) { lines.emplace_back(line); });
  ScriptedLimiter limiter;
  absl::StatusOr<RateLimitGate> gate = RateLimitGate::Create(DefaultRouteConfig(), &limiter, &log);
  ASSERT_TRUE(gate.ok());
  int64_t cost = 0;
  const rl::Policy* products = gate->PolicyFor("GET", "/api/products", &cost);
  const rl::Policy* exports = gate->PolicyFor("POST", "/v1/exports", &cost);

  limiter.next = rl::Decision{};  // answered: no episode, nothing logged
  gate->Check("GET", "/api/products", "key:a");
  EXPECT_TRUE(lines.empty());

  // An outage of 100 checks (RemoteLimiter calls on_failure -> Failure for each, then the gate
  // gets its decision -> Decided): one line.
  const absl::Status why = absl::UnavailableError("connect to rl-server: Connection refused");
  for (int i = 0; i < 100; ++i) {
    const bool closed = i % 4 == 0;
    log.Failure(closed ? *exports : *products, why);
    limiter.next = ByFailureMode(!closed);
    gate->Check(closed ? "POST" : "GET", closed ? "/v1/exports" : "/api/products", "key:a");
    clock.Advance(10);
  }
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("rate limiter unavailable"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("Connection refused"), std::string::npos) << lines[0];
  EXPECT_TRUE(log.in_outage());

  // The first answered check ends it: one line with its length and counts.
  limiter.next = rl::Decision{};
  gate->Check("GET", "/api/products", "key:a");
  gate->Check("GET", "/api/products", "key:a");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1],
            "rate limiter available again after 1000 ms; the failure modes decided 100 checks "
            "(75 allowed, 25 denied)");
  EXPECT_FALSE(log.in_outage());

  // A new outage is a new episode with fresh counts.
  log.Failure(*products, why);
  limiter.next = ByFailureMode(true);
  gate->Check("GET", "/api/products", "key:a");
  clock.Advance(250);
  log.Answered();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3],
            "rate limiter available again after 250 ms; the failure modes decided 1 checks "
            "(1 allowed, 0 denied)");
}

// Cluster mode with one master killed: its keys' checks fail while every other check is
// answered (by the other masters), 100 failures in 19 s interleaved with answers. One line when
// the node's outage starts and one when it ends (a failover gave its slots to a replica, so its
// keys are answered again), not a line per failed check; a second node's outage is its own.
TEST(RateLimitGateOutageTest, ClusterOutagesAreTrackedPerNode) {
  rl::ManualClock clock;
  std::vector<std::string> lines;
  OutageLog log(
      &clock, [&lines](std::string_view line) { lines.emplace_back(line); }, 0, true);
  ScriptedLimiter limiter;
  absl::StatusOr<RateLimitGate> gate = RateLimitGate::Create(DefaultRouteConfig(), &limiter, &log);
  ASSERT_TRUE(gate.ok());
  int64_t cost = 0;
  const rl::Policy* products = gate->PolicyFor("GET", "/api/products", &cost);
  // The texts rl::RemoteLimiter gives for a node that is down.
  const std::vector<absl::Status> why = {
      absl::UnavailableError("connect to 127.0.0.1:7001: Connection refused"),
      absl::UnavailableError("127.0.0.1:7001 unreachable (reconnect back-off)"),
      absl::DeadlineExceededError("127.0.0.1:7001 did not answer within 50ms")};
  for (int i = 0; i < 100; ++i) {
    log.Failure(*products, why[i % why.size()]);
    limiter.next = ByFailureMode(true);
    gate->Check("GET", "/api/products", "key:a");
    limiter.next = rl::Decision{};  // another master's key
    gate->Check("GET", "/api/products", "key:b");
    clock.Advance(190);
  }
  ASSERT_EQ(lines.size(), 1u) << lines.back();
  EXPECT_EQ(lines[0].rfind("rate limiter node 127.0.0.1:7001 unavailable (", 0), 0u) << lines[0];
  EXPECT_TRUE(log.in_outage());

  // The failover is done: checks are answered, and once the node has failed nothing for
  // kQuietMs the next answer ends its outage.
  limiter.next = rl::Decision{};
  for (int i = 0; i < 20; ++i) {
    gate->Check("GET", "/api/products", "key:a");
    clock.Advance(100);
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1],
            "rate limiter node 127.0.0.1:7001 available again after 19900 ms; the failure modes "
            "decided 100 checks (100 allowed, 0 denied)");
  EXPECT_FALSE(log.in_outage());

  // Two nodes down at once: an episode each; the one that recovers first ends first.
  const absl::Status a = absl::UnavailableError("connect to 127.0.0.1:7001: Connection refused");
  const absl::Status b = absl::UnavailableError("connect to [::1]:7002: Connection refused");
  log.Failure(*products, a);
  log.Failure(*products, b);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[3].find("node [::1]:7002 unavailable"), std::string::npos) << lines[3];
  clock.Advance(600);
  log.Failure(*products, b);  // b still failing
  clock.Advance(600);
  log.Answered();
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[4].rfind("rate limiter node 127.0.0.1:7001 available again after 1200 ms", 0), 0u)
      << lines[4];
  EXPECT_TRUE(log.in_outage());
  clock.Advance(1000);
  log.Answered();
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[5].rfind("rate limiter node [::1]:7002 available again after 2200 ms", 0), 0u)
      << lines[5];
  EXPECT_FALSE(log.in_outage());
}

// With --fallback-instances 4, an outage is decided by the local fallback at a quarter of each
// policy's limits: real headers (this instance's share), a denial is the client's 429 (not a 503),
// and the log names the fallback and counts its decisions apart from the failure modes'.
TEST(RateLimitGateOutageTest, FallbackDecisionsCarryRealHeadersAndAreLoggedApart) {
  rl::ManualClock clock;
  std::vector<std::string> lines;
  OutageLog log(
      &clock, [&lines](std::string_view line) { lines.emplace_back(line); }, 4);
  ScriptedLimiter limiter;
  absl::StatusOr<RateLimitGate> gate = RateLimitGate::Create(DefaultRouteConfig(), &limiter, &log);
  ASSERT_TRUE(gate.ok());
  int64_t cost = 0;
  const rl::Policy* products = gate->PolicyFor("GET", "/api/products", &cost);
  const absl::Status why = absl::UnavailableError("connect to rl-server: Connection refused");

  rl::Decision share;  // products, 5 per minute / 4 instances = 1, just used
  share.decided_by = rl::DecidedBy::kFallback;
  share.limit = 1;
  share.reset_after_ms = 60'000;
  share.count = 1;
  share.limits[0] = rl::LimitResult{true, 1, 60'000, 0, 0, 60'000};
  log.Failure(*products, why);
  limiter.next = share;
  GateResult allowed = gate->Check("GET", "/api/products", "key:a");
  EXPECT_TRUE(allowed.allowed);
  EXPECT_FALSE(allowed.unavailable);
  EXPECT_EQ(HeaderValue(allowed, "X-RateLimit-Limit"), "1");
  EXPECT_EQ(HeaderValue(allowed, "RateLimit-Policy"), R"("products";q=1;w=60)");

  share.allowed = false;
  share.retry_after_ms = 30'000;
  share.limits[0] = rl::LimitResult{false, 1, 60'000, 0, 30'000, 60'000};
  log.Failure(*products, why);
  limiter.next = share;
  GateResult limited = gate->Check("GET", "/api/products", "key:a");
  EXPECT_FALSE(limited.allowed);
  EXPECT_FALSE(limited.unavailable);  // -> 429: the share is a real limit
  EXPECT_EQ(HeaderValue(limited, "Retry-After"), "30");
  EXPECT_EQ(HeaderValue(limited, "X-RateLimit-Remaining"), "0");

  // What the fallback could not decide (an export costs more than a quarter of its limit).
  log.Failure(*products, why);
  limiter.next = ByFailureMode(false);
  EXPECT_TRUE(gate->Check("POST", "/v1/exports", "key:a").unavailable);

  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("the local fallback decides at each policy's limits / 4"),
            std::string::npos)
      << lines[0];
  clock.Advance(500);
  limiter.next = rl::Decision{};  // answered again
  gate->Check("GET", "/api/products", "key:a");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1],
            "rate limiter available again after 500 ms; the local fallback decided 2 checks (1 "
            "allowed, 1 denied), the failure modes 1 (0 allowed, 1 denied)");
}

TEST(ClientKeyTest, ApiKeysAreHashedAndNeverAppearRaw) {
  const std::string hostile = "abc:def\r\n" + std::string(10'000, 'x');
  const std::string key = ClientKey(hostile, "10.0.0.1");
  EXPECT_EQ(key.size(), 4u + 32u);  // "key:" + 128-bit hex, whatever the input length
  EXPECT_EQ(key.rfind("key:", 0), 0u);
  EXPECT_EQ(key.find("abc"), std::string::npos);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef", 4), std::string::npos);
  EXPECT_EQ(ClientKey(hostile, "10.0.0.2"), key);  // the key, not the address, identifies
  EXPECT_NE(ClientKey("other", "10.0.0.1"), key);
  EXPECT_EQ(ClientKey("", "10.0.0.1"), "ip:10.0.0.1");
}

}  // namespace
}  // namespace rl_http

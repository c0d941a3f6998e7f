// RateLimitGate without HTTP: route overrides and the global default, weighted cost, unlimited
// routes, shadow policies, config errors, and client keys that never carry raw client input.
#include "rate_limit_gate.h"

#include <string>

#include "gtest/gtest.h"
#include "rl/clock.h"
#include "rl/limiter.h"
#include "rl/rate_limiter.h"

namespace rl_http {
namespace {

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

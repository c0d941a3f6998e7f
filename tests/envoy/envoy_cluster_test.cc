// ShouldRateLimit with its state in a Redis Cluster (3 masters loading rl.so, tests/support's
// harness) through rl::RemoteLimiter (--envoy-backend cluster:...): two rl-servers, stateless
// fronts of one count, answer from the same state; a stopped master fails only its own keys'
// calls, with UNAVAILABLE within the backend timeout.
#include <string>

#include "envoy_client.h"
#include "redis_harness.h"

namespace rl::test {
namespace {

using Code = rls::RateLimitResponse;

TEST(EnvoyClusterBackendTest, TwoFrontsShareOneCountInTheCluster) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server / redis-cli not installed";
  RedisCluster cluster(
      RedisOptions().LoadModule(RL_MODULE_PATH).With("cluster-require-full-coverage no"), 3, 0);
  ASSERT_TRUE(cluster.Start());
  std::string nodes;
  for (size_t i = 0; i < cluster.size(); ++i) {
    nodes += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(cluster.node(i).port());
  }
  const std::vector<std::string> flags = {"--envoy-rules",           RL_ENVOY_RULES_DIR,
                                          "--envoy-backend",         "cluster:" + nodes,
                                          "--envoy-backend-timeout", "200ms"};
  EnvoyServer a(flags), b(flags);
  ASSERT_GT(a.port(), 0);
  ASSERT_GT(b.port(), 0);
  // remote_address: 5 per hour, counted in the cluster whichever front answers.
  for (int i = 1; i <= 6; ++i) {
    rls::RateLimitResponse resp;
    grpc::Status st = (i % 2 ? a : b).Call(Request("rl_test", {{{"remote_address", "c1"}}}), &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(resp.overall_code(), i <= 5 ? Code::OK : Code::OVER_LIMIT) << i;
    EXPECT_EQ(resp.statuses(0).limit_remaining(), static_cast<uint32_t>(i <= 5 ? 5 - i : 0));
    EXPECT_EQ(resp.statuses(0).current_limit().requests_per_unit(), 5u);
  }
  // Several descriptors in one call (pipelined per node), other keys unaffected.
  rls::RateLimitResponse resp;
  ASSERT_TRUE(a.Call(Request("rl_test", {{{"remote_address", "c2"}},
                                         {{"remote_address", "c3"}},
                                         {{"remote_address", "c1"}}}),
                     &resp)
                  .ok());
  EXPECT_EQ(resp.statuses(0).limit_remaining(), 4u);
  EXPECT_EQ(resp.statuses(1).limit_remaining(), 4u);
  EXPECT_EQ(resp.statuses(2).code(), Code::OVER_LIMIT);
  // Every master stopped: each call fails fast with a gRPC error, never an invented answer.
  for (size_t i = 0; i < cluster.size(); ++i) cluster.node(i).Stop();
  const auto start = std::chrono::steady_clock::now();
  grpc::Status st = a.Call(Request("rl_test", {{{"remote_address", "c4"}}}), &resp,
                           std::chrono::milliseconds(3000));
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2000));
  EXPECT_EQ(a.Terminate(), 0);
  EXPECT_EQ(b.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

// Real Redis clients against redis-server with rl.so: redis-cli (RESP2, -3, pipes, interactive
// help from COMMAND DOCS), redis-py (threads, pipelines, errors, RESP3) and phpredis / Predis.
// Each runs a script from tests/module/clients/ with the server's port; a script exits 77 when
// its client is not installed (the test is skipped then). redis-cli -c and redis-py's
// RedisCluster run in rl_cluster_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

class RlClientsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
    ASSERT_TRUE(server_.Start());
  }

  void RunScript(const std::vector<std::string>& interpreter, const std::string& script,
                 const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = interpreter;
    argv.push_back(std::string(RL_MODULE_CLIENTS_DIR) + "/" + script);
    argv.push_back(std::to_string(server_.port()));
    argv.insert(argv.end(), extra.begin(), extra.end());
    rl_test::RunResult run = rl_test::Run(argv, std::chrono::seconds(60));
    ASSERT_TRUE(run.exit_status.has_value()) << script << " timed out:\n" << run.output;
    if (*run.exit_status == 77) GTEST_SKIP() << run.output;
    EXPECT_EQ(*run.exit_status, 0) << run.output << "\n" << server_.LogTail();
    std::printf("%s", run.output.c_str());
    EXPECT_TRUE(server_.running());
  }

  RedisServer server_{RlOptions()};
};

// The cli of the server under test (valkey-cli against Valkey).
TEST_F(RlClientsTest, RedisCli) { RunScript({"/bin/bash"}, "redis_cli.sh", {RedisCliPath()}); }

TEST_F(RlClientsTest, RedisPy) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 missing";
  rl_test::RunResult probe =
      rl_test::Run({"/usr/bin/python3", "-c", "import redis"}, std::chrono::seconds(20));
  if (probe.exit_status != 0) GTEST_SKIP() << "python3-redis not installed";
  RunScript({"/usr/bin/python3"}, "redis_py.py");
}

TEST_F(RlClientsTest, PhpRedisAndPredis) { RunScript({"/bin/bash"}, "phpredis.sh"); }

}  // namespace
}  // namespace rl::test

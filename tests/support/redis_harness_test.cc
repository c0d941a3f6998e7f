// Tests of the Redis harness itself with a plain redis-server: start/stop/restart/kill -9 and
// their bounds, the per-server dir and log (shown when a start fails), no process left behind,
// and the replica pair. The cluster helpers are exercised by tests/module/cluster_test.cc.
#include "redis_harness.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>

namespace rl::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

bool ProcessGone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

class HarnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  }
};

TEST_F(HarnessTest, StartsAnswersAndStopsCleanly) {
  RedisServer server;
  ASSERT_TRUE(server.Start());
  EXPECT_TRUE(server.running());
  EXPECT_GT(server.port(), 0);
  EXPECT_EQ(server.Call({"PING"}).str, "PONG");
  EXPECT_EQ(server.InfoField("server", "tcp_port"), std::to_string(server.port()));
  EXPECT_EQ(server.Call({"CONFIG", "GET", "dir"}).elements.at(1).str,
            std::filesystem::canonical(server.dir()).string());
  EXPECT_NE(server.ReadLog().find("Ready to accept connections"), std::string::npos);
  EXPECT_NE(server.LogTail(3).find("Ready to accept connections"), std::string::npos);
  const pid_t pid = server.pid();
  ASSERT_TRUE(server.Stop());
  EXPECT_FALSE(server.running());
  EXPECT_TRUE(ProcessGone(pid));
  EXPECT_TRUE(server.Call({"PING"}).closed());  // refused at once, not after a timeout
  EXPECT_TRUE(server.Stop());                   // stopping a stopped server is fine
}

TEST_F(HarnessTest, RestartKeepsDirAndPortAndSavedData) {
  RedisServer server;
  ASSERT_TRUE(server.Start());
  const int port = server.port();
  ASSERT_EQ(server.Call({"SET", "k", "v"}).str, "OK");
  ASSERT_TRUE(server.Restart(RedisServer::Shutdown::kSave));
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(server.Call({"GET", "k"}).str, "v");
  ASSERT_EQ(server.Call({"SET", "k", "lost"}).str, "OK");
  ASSERT_TRUE(server.Restart(RedisServer::Shutdown::kNoSave));
  EXPECT_EQ(server.Call({"GET", "k"}).str, "v");
}

// A picked port that someone else binds before redis-server does (another test's server or
// connection) costs a retry on another port, not the test.
TEST_F(HarnessTest, APickedPortTakenMeanwhileIsReplaced) {
  RedisServer first;
  ASSERT_TRUE(first.Start());
  int picks = 0;
  RedisOptions options;
  options.pick_port = [&] { return ++picks == 1 ? first.port() : rl_test::FreeLoopbackPort(); };
  RedisServer second(options);
  ASSERT_TRUE(second.Start());
  EXPECT_EQ(picks, 2);
  EXPECT_NE(second.port(), first.port());
  EXPECT_EQ(second.Call({"PING"}).str, "PONG");
  EXPECT_EQ(first.Call({"PING"}).str, "PONG");
}

TEST_F(HarnessTest, KillNineLosesUnsavedDataAndLeavesNoProcess) {
  RedisServer server(RedisOptions().With("appendonly yes").With("appendfsync always"));
  ASSERT_TRUE(server.Start());
  ASSERT_EQ(server.Call({"SET", "k", "durable"}).str, "OK");
  const pid_t pid = server.pid();
  server.Kill9();
  EXPECT_TRUE(ProcessGone(pid));
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(server.Call({"GET", "k"}).str, "durable");  // from the AOF
}

TEST_F(HarnessTest, DestructorKillsTheServerAndRemovesItsDir) {
  pid_t pid = 0;
  std::string dir;
  {
    RedisServer server;
    ASSERT_TRUE(server.Start());
    pid = server.pid();
    dir = server.dir();
  }
  EXPECT_TRUE(ProcessGone(pid));
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST_F(HarnessTest, AFailedStartReportsTheServersOwnWords) {
  RedisServer server(RedisOptions().With("no-such-directive yes"));
  ::testing::AssertionResult started = server.Start();
  EXPECT_FALSE(started);
  EXPECT_NE(std::string(started.message()).find("exited during start"), std::string::npos)
      << started.message();
  EXPECT_NE(std::string(started.message()).find("no-such-directive"), std::string::npos)
      << started.message();
  EXPECT_FALSE(server.running());
}

TEST_F(HarnessTest, ReplicaPairIsLinkedAndWaitCounts) {
  RedisReplicaPair pair{RedisOptions()};
  ASSERT_TRUE(pair.Start());
  ASSERT_EQ(pair.master.Call({"SET", "k", "v"}).str, "OK");
  ASSERT_TRUE(WaitForReplicas(pair.master, 1));
  EXPECT_EQ(pair.replica.Call({"GET", "k"}).str, "v");
  EXPECT_FALSE(WaitForReplicas(pair.master, 2, milliseconds(100)));
}

TEST_F(HarnessTest, ClusterPortsLeaveRoomForTheBus) {
  // Outgoing connections take their source ports from the ephemeral range: a bus port inside it
  // could be taken between the pick and a node's (re)start.
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  const std::vector<int> ports = FreeClusterPorts(6);
  ASSERT_EQ(ports.size(), 6u);
  for (int port : ports) {
    EXPECT_LT(port + 10000, ephemeral_low);
    for (int other : ports) {
      if (other != port) {
        EXPECT_NE(std::abs(other - port), 10000);
      }
    }
  }
}

TEST(HarnessWaitTest, WaitUntilIsBounded) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(WaitUntil([] { return false; }, milliseconds(100)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  int calls = 0;
  EXPECT_TRUE(WaitUntil([&] { return ++calls == 3; }, seconds(5), milliseconds(1)));
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace rl::test

// The probe module in a real Redis Cluster of 3 masters + 3 replicas (redis-cli --cluster
// create): redis-cli -c routes the commands by the key spec's key, readonly commands run on
// replicas after READONLY, MIGRATE of a slot holding a module-type key keeps it, and CLUSTER
// FAILOVER and kill -9 of a master keep what WAIT acknowledged. One cluster serves every test
// (they run in this order and each leaves the cluster healthy for the next); this binary runs
// as a single ctest test for that reason.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "probe_util.h"
#include "redis_harness.h"

namespace rl::test {
namespace {

class ClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!RedisAvailable()) return;
    cluster_ = new RedisCluster(ProbeOptions());
    ::testing::AssertionResult started = cluster_->Start();
    started_ = static_cast<bool>(started);
    start_error_ = started.message();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
    ASSERT_TRUE(started_) << start_error_;
  }

  // PROBE.SET through redis-cli -c entering at `via`; the value's digest from its owner.
  static std::string SetViaCli(const std::string& key, const std::string& value,
                               RedisServer* via = nullptr) {
    rl_test::RunResult run =
        cluster_->Cli({"PROBE.SET", key, value, "PX", "600000", "CREATED", "99"}, true, via);
    EXPECT_EQ(run.exit_status, 0);
    EXPECT_EQ(run.output, "OK\n");
    RedisServer* owner = cluster_->MasterOfKey(key);
    return owner == nullptr ? "" : owner->Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str;
  }

  static inline RedisCluster* cluster_ = nullptr;
  static inline bool started_ = false;
  static inline std::string start_error_;
};

TEST_F(ClusterTest, RedisCliRoutesByKeyAndReplicasServeReads) {
  // "a", "b" and "c" hash to slots 15495, 3300 and 7365: one per master.
  std::set<RedisServer*> owners;
  for (const std::string key : {"a", "b", "c"}) {
    SetViaCli(key, "value-" + key, &cluster_->node(0));
    RedisServer* owner = cluster_->MasterOfKey(key);
    ASSERT_NE(owner, nullptr);
    owners.insert(owner);
    EXPECT_EQ(owner->Call({"PROBE.GET", key}).str, "value-" + key);
    EXPECT_EQ(owner->Call({"TYPE", key}).str, "probe-ABI");
    for (RedisServer* other : cluster_->Masters()) {
      if (other == owner) continue;
      Reply moved = other->Call({"PROBE.GET", key});
      EXPECT_EQ(moved.str.rfind("MOVED " + std::to_string(cluster_->KeySlot(key)), 0), 0u)
          << moved.str;
    }
    // Any entry point works with redirections followed.
    for (RedisServer* via : cluster_->Masters()) {
      EXPECT_EQ(cluster_->Cli({"PROBE.GET", key}, true, via).output, "value-" + key + "\n");
    }
    // A replica serves the readonly command after READONLY, and redirects without it.
    ASSERT_TRUE(WaitForReplicas(*owner, 1));
    auto replicas = cluster_->ReplicasOf(*owner);
    ASSERT_EQ(replicas.size(), 1u);
    auto connection = replicas[0]->Connect();
    EXPECT_EQ(connection->Call({"PROBE.GET", key}).str.rfind("MOVED", 0), 0u);
    ASSERT_EQ(connection->Call({"READONLY"}).str, "OK");
    EXPECT_EQ(connection->Call({"PROBE.GET", key}).str, "value-" + key);
    EXPECT_EQ(connection->Call({"PROBE.SET", key, "x"}).str.rfind("MOVED", 0), 0u);
  }
  EXPECT_EQ(owners.size(), 3u);
  constexpr long long kCluster = 1 << 5;
  EXPECT_TRUE(cluster_->node(0).Call({"PROBE.CTX"}).integer & kCluster);
}

TEST_F(ClusterTest, MovingASlotMigratesTheModuleKey) {
  const std::string key = "migrate-me";
  const std::string digest = SetViaCli(key, "moving");
  const int slot = cluster_->KeySlot(key);
  RedisServer* from = cluster_->MasterOfKey(key);
  ASSERT_NE(from, nullptr);
  RedisServer* to = nullptr;
  for (RedisServer* master : cluster_->Masters()) {
    if (master != from) to = master;
  }
  ASSERT_NE(to, nullptr);
  const long long expire_at = from->Call({"PEXPIRETIME", key}).integer;

  ASSERT_TRUE(cluster_->MoveSlot(slot, *from, *to));
  EXPECT_EQ(to->Call({"PROBE.GET", key}).str, "moving");
  EXPECT_EQ(to->Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str, digest);
  EXPECT_EQ(to->Call({"PROBE.META", key}).elements.at(0).integer, 99);
  // MIGRATE carries the remaining TTL, not the deadline: the absolute expiry may move by the
  // time the transfer took (a millisecond here). Modules must keep their own absolute times.
  EXPECT_NEAR(static_cast<double>(to->Call({"PEXPIRETIME", key}).integer),
              static_cast<double>(expire_at), 2000.0);
  EXPECT_EQ(from->Call({"PROBE.GET", key}).str.rfind("MOVED", 0), 0u);
  EXPECT_EQ(cluster_->Cli({"PROBE.GET", key}, true, from).output, "moving\n");
  EXPECT_TRUE(cluster_->WaitHealthy(/*with_replicas=*/true));
}

TEST_F(ClusterTest, ManualFailoverKeepsTheModuleKey) {
  const std::string key = "fail-over";
  const std::string digest = SetViaCli(key, "kept");
  RedisServer* owner = cluster_->MasterOfKey(key);
  ASSERT_NE(owner, nullptr);
  ASSERT_TRUE(WaitForReplicas(*owner, 1));
  auto replicas = cluster_->ReplicasOf(*owner);
  ASSERT_EQ(replicas.size(), 1u);

  ASSERT_TRUE(cluster_->Failover(*replicas[0]));
  EXPECT_EQ(cluster_->MasterOfKey(key), replicas[0]);
  EXPECT_EQ(replicas[0]->Call({"PROBE.GET", key}).str, "kept");
  EXPECT_EQ(replicas[0]->Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str, digest);
  EXPECT_EQ(cluster_->Cli({"PROBE.GET", key}, true, owner).output, "kept\n");
  SetViaCli(key, "after-failover", owner);
  EXPECT_EQ(replicas[0]->Call({"PROBE.GET", key}).str, "after-failover");
}

// Last: it leaves one shard without a replica.
TEST_F(ClusterTest, KillNineOfAMasterPromotesItsReplicaWithTheKey) {
  const std::string key = "killed";
  const std::string digest = SetViaCli(key, "acknowledged");
  RedisServer* owner = cluster_->MasterOfKey(key);
  ASSERT_NE(owner, nullptr);
  ASSERT_TRUE(WaitForReplicas(*owner, 1));  // what WAIT acknowledged must survive

  RedisServer* promoted = nullptr;
  ASSERT_TRUE(cluster_->KillMaster(*owner, &promoted));
  ASSERT_NE(promoted, nullptr);
  EXPECT_FALSE(owner->running());
  EXPECT_EQ(promoted->Call({"PROBE.GET", key}).str, "acknowledged");
  EXPECT_EQ(promoted->Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str, digest);
  EXPECT_EQ(cluster_->Cli({"PROBE.GET", key}).output, "acknowledged\n");
  SetViaCli(key, "written-after");
  EXPECT_EQ(promoted->Call({"PROBE.GET", key}).str, "written-after");
}

}  // namespace
}  // namespace rl::test

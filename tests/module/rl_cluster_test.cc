// rl.so in a real Redis Cluster of 3 masters + 3 replicas (redis-cli --cluster create): redis-cli
// -c and redis-py's RedisCluster route every RL.* command by its key and keys spread over the
// masters; policies reach every master with `redis-cli --cluster call --cluster-only-masters`
// (and their replicas by replication), and a change on one master reaches every node by itself
// (the cluster bus: within a second, concurrent changes end in one agreed set, a node that was
// down catches up, and so does one that joins); a replica serves RL.PEEK after READONLY; moving a
// slot that holds live state keeps the counts; CLUSTER FAILOVER and kill -9 of a master: the
// promoted replica continues the counts (what WAIT acknowledged is never lost; keys at their limit
// stay denied). One cluster serves every test, in this order; the binary is one ctest test.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "probe_util.h"
#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

using Cmd = std::vector<std::string>;

// Equal decisions `elapsed_ms` apart: the same counts, and waits shorter by the time that
// passed (within a second: the answers are moments apart).
::testing::AssertionResult SameDecision(const Reply& a, const Reply& b, int64_t elapsed_ms = 0) {
  const std::vector<int64_t> x = DecisionOf(a), y = DecisionOf(b);
  auto later = [&](int64_t wait) {
    return wait <= 0 ? wait : std::max<int64_t>(0, wait - elapsed_ms);
  };
  if (x.empty() || y.empty() || x[0] != y[0] || x[1] != y[1] || x[2] != y[2] ||
      std::llabs(later(x[3]) - y[3]) > 1000 || std::llabs(later(x[4]) - y[4]) > 1000) {
    return ::testing::AssertionFailure()
           << Show(a) << " vs " << Show(b) << " " << elapsed_ms << " ms later";
  }
  return ::testing::AssertionSuccess();
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class RlClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!RedisAvailable()) return;
    cluster_ = new RedisCluster(RlOptions());
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

  // redis-cli -c entering at `via` (nullptr: the first running node); its output lines.
  static std::vector<std::string> Cli(const Cmd& args, RedisServer* via = nullptr) {
    rl_test::RunResult run = cluster_->Cli(args, true, via);
    EXPECT_EQ(run.exit_status, 0) << run.output;
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t nl; (nl = run.output.find('\n', start)) != std::string::npos; start = nl + 1) {
      lines.push_back(run.output.substr(start, nl - start));
    }
    return lines;
  }
  static RedisServer& Owner(const std::string& key) {
    RedisServer* owner = cluster_->MasterOfKey(key);
    EXPECT_NE(owner, nullptr) << key;
    return owner != nullptr ? *owner : cluster_->node(0);
  }

  // Puts `key` at its limit (FIXED_WINDOW 3 per hour: 3 allowed, then denied) and part way into a
  // token bucket (10 per hour, 4 used) and a sliding log (5 per hour, 2 used), through redis-cli
  // -c; waits until the owner's replica acknowledged it.
  static void Load(const std::string& key) {
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(Cli({"RL.CHECK", key, "FIXED_WINDOW", "3", "1h"}).at(0), i < 3 ? "1" : "0");
    }
    EXPECT_EQ(Cli({"RL.CHECK", key, "TOKEN_BUCKET", "10", "1h", "COST", "4"}).at(0), "1");
    for (int i = 0; i < 2; ++i) Cli({"RL.CHECK", key, "SLIDING_LOG", "5", "1h"});
    EXPECT_TRUE(WaitForReplicas(Owner(key), 1));
  }
  // COST 0: the state as it stands, so every wait only shrinks as time passes.
  static std::vector<Cmd> Peeks(const std::string& key) {
    return {{"RL.PEEK", key, "FIXED_WINDOW", "3", "1h", "COST", "0"},
            {"RL.PEEK", key, "TOKEN_BUCKET", "10", "1h", "COST", "0"},
            {"RL.PEEK", key, "SLIDING_LOG", "5", "1h", "COST", "0"}};
  }
  struct Answers {
    std::vector<Reply> replies;
    int64_t at_ms = 0;  // steady clock of the test
  };
  static Answers PeekAll(RedisServer& server, const std::string& key) {
    Answers out;
    out.at_ms = NowMs();
    for (const Cmd& peek : Peeks(key)) out.replies.push_back(server.Call(peek));
    return out;
  }
  // `server` now owns `key` and continues its counts: same answers as `before`, the key at its
  // limit denied, the others consuming from where they were.
  static void ExpectContinues(RedisServer& server, const std::string& key, const Answers& before) {
    const Answers now = PeekAll(server, key);
    for (size_t i = 0; i < now.replies.size(); ++i) {
      EXPECT_TRUE(SameDecision(before.replies[i], now.replies[i], now.at_ms - before.at_ms))
          << key << " " << Peeks(key)[i][2];
    }
    EXPECT_EQ(Cli({"RL.CHECK", key, "FIXED_WINDOW", "3", "1h"}).at(0), "0") << "still denied";
    const std::vector<std::string> bucket =
        Cli({"RL.CHECK", key, "TOKEN_BUCKET", "10", "1h", "COST", "4"});
    EXPECT_EQ(bucket.at(0), "1");
    EXPECT_EQ(bucket.at(2), "2") << "10 - 4 - 4, not a fresh bucket";
    EXPECT_EQ(Cli({"RL.CHECK", key, "SLIDING_LOG", "5", "1h"}).at(2), "2");
  }

  // Every node (masters and replicas) satisfies `ok` within 10 s.
  static bool AllNodes(const std::function<bool(RedisServer&)>& ok) {
    return WaitUntil(
        [&] {
          for (size_t i = 0; i < cluster_->size(); ++i) {
            if (!ok(cluster_->node(i))) return false;
          }
          return true;
        },
        std::chrono::seconds(10), std::chrono::milliseconds(5));
  }
  static std::string Get(RedisServer& node, const std::string& policy) {
    return node.Call({"RL.POLICY", "GET", policy}).str;
  }
  // One field of RL.POLICY VERSION on `node`.
  static std::string Field(RedisServer& node, const char* name) {
    const Reply version = node.Call({"RL.POLICY", "VERSION"});
    const Reply* r = version.Get(name);
    if (r == nullptr) return "";
    return r->type == ':' ? std::to_string(r->integer) : r->str;
  }

  static inline RedisCluster* cluster_ = nullptr;
  static inline bool started_ = false;
  static inline std::string start_error_;
};

TEST_F(RlClusterTest, RedisCliRoutesByKeyAndKeysSpreadOverMasters) {
  std::set<RedisServer*> owners;
  for (int i = 0; i < 12; ++i) {
    const std::string key = "rl:user:" + std::to_string(i);
    // Enter at any node: -c follows MOVED to the key's master.
    RedisServer* via = &cluster_->node(i % cluster_->size());
    EXPECT_EQ(Cli({"RL.CHECK", key, "GCRA", "5", "1h"}, via),
              (std::vector<std::string>{"1", "5", "4", "0", "720000"}))
        << key;
    RedisServer& owner = Owner(key);
    owners.insert(&owner);
    EXPECT_EQ(owner.Call({"TYPE", key}).str, "ratelimit");
    for (RedisServer* other : cluster_->Masters()) {
      if (other == &owner) continue;
      const Reply moved = other->Call({"RL.CHECK", key, "GCRA", "5", "1h"});
      EXPECT_EQ(moved.str.rfind("MOVED " + std::to_string(cluster_->KeySlot(key)), 0), 0u)
          << Show(moved);
    }
  }
  EXPECT_EQ(owners.size(), 3u) << "keys spread over the three masters";

  const std::string key = "rl:user:0";
  EXPECT_EQ(Cli({"RL.PEEK", key, "GCRA", "5", "1h"}).at(2), "3");
  EXPECT_EQ(Cli({"-3", "RL.CHECK", key, "GCRA", "5", "1h"}).at(2), "remaining 3");
  EXPECT_EQ(Cli({"RL.RESET", key, "GCRA", "5", "1h"}), (std::vector<std::string>{"1"}));
  EXPECT_EQ(Cli({"CL.THROTTLE", key, "15", "30", "60"}),
            (std::vector<std::string>{"0", "16", "15", "-1", "2"}));
  EXPECT_EQ(cluster_->Cli({"RL.CHECK", key, "GCRA", "0", "1h"})
                .output.rfind("ERR limit must be between 1 and 1099511627776\n", 0),
            0u);
}

TEST_F(RlClusterTest, PoliciesReachEveryMasterWithClusterCall) {
  const std::string entry = "127.0.0.1:" + std::to_string(cluster_->node(0).port());
  rl_test::RunResult run = rl_test::Run(
      {RedisCliPath(), "--cluster", "call", entry, "RL.POLICY", "SET", "api", "SLIDING_WINDOW",
       "100", "1m", "FIXED_WINDOW", "5000", "1d", "--cluster-only-masters"},
      std::chrono::seconds(30));
  ASSERT_EQ(run.exit_status, 0) << run.output;
  for (RedisServer* master : cluster_->Masters()) {
    EXPECT_EQ(master->Call({"RL.POLICY", "GET", "api"}).str,
              "SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d");
    ASSERT_TRUE(WaitForReplicas(*master, 1));
    for (RedisServer* replica : cluster_->ReplicasOf(*master)) {
      EXPECT_EQ(replica->Call({"RL.POLICY", "GET", "api"}).str,
                "SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d")
          << "replicated to " << replica->Describe();
    }
  }
  for (int i = 0; i < 12; ++i) {
    const std::string key = "rl:user:" + std::to_string(i);
    EXPECT_EQ(Cli({"RL.CHECK", key, "POLICY", "api"}).at(2), "99") << key;
  }
  // Without --cluster-only-masters the replicas answer READONLY (the masters replicate it
  // to them anyway): harmless, but noisy. (Needless too: a change reaches every node, below.)
  run = rl_test::Run(
      {RedisCliPath(), "--cluster", "call", entry, "RL.POLICY", "SET", "api2", "GCRA", "1", "1s"},
      std::chrono::seconds(30));
  EXPECT_NE(run.output.find("READONLY"), std::string::npos) << run.output;
  EXPECT_EQ(cluster_->Masters().at(0)->Call({"RL.POLICY", "DEL", "api2"}).integer, 1);
  EXPECT_TRUE(AllNodes([](RedisServer& n) { return Get(n, "api2").empty(); }));
}

// A change on one master reaches every node, masters and replicas, within a second (the master
// sends it over the cluster bus at once; the other masters replicate it), and then every node
// reports the same version, held by all six.
TEST_F(RlClusterTest, APolicyChangeReachesEveryNodeWithinASecond) {
  RedisServer& m0 = *cluster_->Masters().at(0);
  const int64_t start = NowMs();
  ASSERT_EQ(m0.Call({"RL.POLICY", "SET", "bus", "GCRA", "7", "1m"}).str, "OK");
  ASSERT_TRUE(AllNodes([](RedisServer& n) { return Get(n, "bus") == "GCRA 7 1m"; }));
  const int64_t elapsed = NowMs() - start;
  EXPECT_LT(elapsed, 1000);
  std::printf("policy change on every node of 6 after %lld ms\n", static_cast<long long>(elapsed));
  const std::string version = Field(m0, "version");
  EXPECT_TRUE(AllNodes([&](RedisServer& n) {
    return Field(n, "version") == version && Field(n, "agreed") == "1" && Field(n, "nodes") == "6";
  }));
  EXPECT_EQ(m0.InfoField("rl", "rl_policies_agreed"), "1");
  EXPECT_EQ(Cli({"RL.CHECK", "rl:user:3", "POLICY", "bus"}).at(2), "6");
}

// What a master receives over the bus reaches its AOF too (RL.POLICYSET, the whole set).
TEST_F(RlClusterTest, WhatAMasterReceivesReachesItsAof) {
  RedisServer& sender = *cluster_->Masters().at(0);
  RedisServer& receiver = *cluster_->Masters().at(1);
  ASSERT_EQ(receiver.Call({"CONFIG", "SET", "appendfsync", "always"}).str, "OK");
  ASSERT_EQ(receiver.Call({"CONFIG", "SET", "appendonly", "yes"}).str, "OK");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return receiver.InfoField("persistence", "aof_enabled") == "1" &&
               receiver.InfoField("persistence", "aof_rewrite_in_progress") == "0" &&
               receiver.InfoField("persistence", "aof_rewrite_scheduled") == "0";
      },
      std::chrono::seconds(30)));
  ASSERT_EQ(sender.Call({"RL.POLICY", "SET", "aof", "GCRA", "3", "1h"}).str, "OK");
  EXPECT_TRUE(
      WaitUntil([&] { return Get(receiver, "aof") == "GCRA 3 1h"; }, std::chrono::seconds(10)));
  EXPECT_NE(ReadAofFiles(receiver.dir()).find("3:aof9:GCRA 3 1h"), std::string::npos);
  EXPECT_EQ(receiver.Call({"CONFIG", "SET", "appendonly", "no"}).str, "OK");
}

// SET on two masters at once: one agreed set everywhere, the one of the higher version.
TEST_F(RlClusterTest, ConflictingChangesEndInOneAgreedSet) {
  RedisServer& a = *cluster_->Masters().at(0);
  RedisServer& b = *cluster_->Masters().at(1);
  auto ca = a.Connect(), cb = b.Connect();
  std::thread ta([&] { ca->Call({"RL.POLICY", "SET", "race", "GCRA", "1", "1m"}); });
  std::thread tb([&] { cb->Call({"RL.POLICY", "SET", "race", "GCRA", "2", "1m"}); });
  ta.join();
  tb.join();
  std::string version, spec;
  EXPECT_TRUE(AllNodes([&](RedisServer& n) {
    if (&n == &cluster_->node(0)) {
      version = Field(n, "version");
      spec = Get(n, "race");
    }
    return Field(n, "agreed") == "1" && Field(n, "version") == version && Get(n, "race") == spec;
  })) << version
      << " " << spec;
  EXPECT_TRUE(spec == "GCRA 1 1m" || spec == "GCRA 2 1m") << spec;
  // The winner's id ends its version.
  const std::string winner = cluster_->NodeId(spec == "GCRA 1 1m" ? a : b);
  EXPECT_EQ(version.substr(version.size() - winner.size()), winner) << version;
}

// A master that was down during a change (its replica kept from failing over) returns with its
// older stored set and is sent the newer one (the periodic announces), and so is its replica.
TEST_F(RlClusterTest, ANodeThatWasDownConvergesWhenItReturns) {
  RedisServer& down = *cluster_->Masters().at(2);
  RedisServer& m0 = *cluster_->Masters().at(0);
  const std::vector<RedisServer*> replicas = cluster_->ReplicasOf(down);
  ASSERT_EQ(replicas.size(), 1u);
  ASSERT_EQ(replicas[0]->Call({"CONFIG", "SET", "cluster-replica-no-failover", "yes"}).str, "OK");
  ASSERT_TRUE(down.Stop(RedisServer::Shutdown::kSave));
  ASSERT_EQ(m0.Call({"RL.POLICY", "SET", "late", "TOKEN_BUCKET", "3", "1m"}).str, "OK");
  EXPECT_TRUE(WaitUntil([&] { return Field(m0, "agreeing") == "4"; }, std::chrono::seconds(10)));
  EXPECT_EQ(Field(m0, "agreed"), "0") << "one master down, its replica behind";
  EXPECT_EQ(Get(*replicas[0], "late"), "") << "a replica takes sets from its master only";
  ASSERT_TRUE(down.Start());
  EXPECT_TRUE(AllNodes([](RedisServer& n) { return Get(n, "late") == "TOKEN_BUCKET 3 1m"; }));
  EXPECT_TRUE(AllNodes([](RedisServer& n) { return Field(n, "agreed") == "1"; }));
  EXPECT_EQ(replicas[0]->Call({"CONFIG", "SET", "cluster-replica-no-failover", "no"}).str, "OK");
  EXPECT_TRUE(cluster_->WaitHealthy(/*with_replicas=*/true));
}

// A node that joins later (CLUSTER MEET, no data of its own) is sent the set without an operator
// and then counts towards the agreement; it is forgotten again, so later tests see the six.
TEST_F(RlClusterTest, ANodeThatJoinsConverges) {
  const std::vector<int> ports = FreeClusterPorts(1);
  ASSERT_EQ(ports.size(), 1u);
  RedisServer joiner(RlOptions()
                         .With("cluster-enabled yes")
                         .With("cluster-config-file nodes.conf")
                         .With("cluster-node-timeout 2000"),
                     ports[0]);
  ASSERT_TRUE(joiner.Start());
  EXPECT_EQ(Field(joiner, "version"), "0");
  RedisServer& m0 = *cluster_->Masters().at(0);
  ASSERT_EQ(joiner.Call({"CLUSTER", "MEET", "127.0.0.1", std::to_string(m0.port())}).str, "OK");
  const std::string version = Field(m0, "version");
  EXPECT_TRUE(
      WaitUntil([&] { return Field(joiner, "version") == version; }, std::chrono::seconds(10)))
      << Field(joiner, "version") << " vs " << version;
  EXPECT_EQ(Show(joiner.Call({"RL.POLICY", "LIST"})), Show(m0.Call({"RL.POLICY", "LIST"})));
  EXPECT_TRUE(WaitUntil([&] { return Field(m0, "nodes") == "7" && Field(m0, "agreed") == "1"; },
                        std::chrono::seconds(10)));
  const std::string id = cluster_->NodeId(joiner);
  ASSERT_TRUE(joiner.Stop());
  for (size_t i = 0; i < cluster_->size(); ++i) cluster_->node(i).Call({"CLUSTER", "FORGET", id});
  EXPECT_TRUE(AllNodes([&](RedisServer& n) {
    return n.Call({"CLUSTER", "NODES"}).str.find(id) == std::string::npos;
  }));
  EXPECT_TRUE(cluster_->WaitHealthy(/*with_replicas=*/true));
}

// redis-cell's string state adopted by CL.THROTTLE on a master reaches its replica as rl's type.
TEST_F(RlClusterTest, AdoptedRedisCellKeyReachesTheReplica) {
  const std::string key = "cell:user:7";
  RedisServer& owner = Owner(key);
  const int64_t now = TimeMs(owner.Call({"TIME"}));
  ASSERT_EQ(owner.Call({"SET", key, std::to_string((now + 17500) * 1000000), "PX", "17500"}).str,
            "OK");
  EXPECT_EQ(owner.Call({"CL.THROTTLE", key, "9", "10", "60"}).Ints(),
            (std::vector<int64_t>{0, 10, 6, -1, 24}));
  ASSERT_TRUE(WaitForReplicas(owner, 1));
  for (RedisServer* replica : cluster_->ReplicasOf(owner)) {
    auto connection = replica->Connect();
    ASSERT_EQ(connection->Call({"READONLY"}).str, "OK");
    EXPECT_EQ(connection->Call({"TYPE", key}).str, "ratelimit");
    const Reply digest = connection->Call({"DEBUG", "DIGEST-VALUE", key});
    ASSERT_EQ(digest.elements.size(), 1u) << Show(digest);
    EXPECT_EQ(digest.elements[0].str,
              owner.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str);
  }
}

TEST_F(RlClusterTest, ReplicaServesPeekAfterReadonly) {
  for (int i = 0; i < 3; ++i) {
    const std::string key = "rl:user:" + std::to_string(i);
    RedisServer& owner = Owner(key);
    ASSERT_TRUE(WaitForReplicas(owner, 1));
    const std::vector<RedisServer*> replicas = cluster_->ReplicasOf(owner);
    ASSERT_EQ(replicas.size(), 1u);
    auto connection = replicas[0]->Connect();
    const Cmd peek = {"RL.PEEK", key, "POLICY", "api"};
    EXPECT_EQ(connection->Call(peek).str.rfind("MOVED", 0), 0u) << "not without READONLY";
    ASSERT_EQ(connection->Call({"READONLY"}).str, "OK");
    EXPECT_TRUE(SameDecision(connection->Call(peek), owner.Call(peek))) << key;
    EXPECT_EQ(connection->Call({"RL.CHECK", key, "POLICY", "api"}).str.rfind("MOVED", 0), 0u)
        << "writes go to the master";
  }
}

TEST_F(RlClusterTest, RedisPyRedisCluster) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 missing";
  rl_test::RunResult probe =
      rl_test::Run({"/usr/bin/python3", "-c", "from redis.cluster import RedisCluster"},
                   std::chrono::seconds(20));
  if (probe.exit_status != 0) GTEST_SKIP() << "python3-redis with RedisCluster not installed";
  rl_test::RunResult run =
      rl_test::Run({"/usr/bin/python3", std::string(RL_MODULE_CLIENTS_DIR) + "/redis_py_cluster.py",
                    std::to_string(cluster_->node(0).port())},
                   std::chrono::seconds(60));
  EXPECT_EQ(run.exit_status, 0) << run.output;
  std::printf("%s", run.output.c_str());
}

TEST_F(RlClusterTest, MovingASlotKeepsTheCounts) {
  const std::string key = "rl:move";
  Load(key);
  RedisServer& from = Owner(key);
  const Answers before = PeekAll(from, key);
  RedisServer* to = nullptr;
  for (RedisServer* master : cluster_->Masters()) {
    if (master != &from) to = master;
  }
  ASSERT_NE(to, nullptr);
  ASSERT_TRUE(cluster_->MoveSlot(cluster_->KeySlot(key), from, *to));
  EXPECT_EQ(&Owner(key), to);
  EXPECT_EQ(from.Call({"EXISTS", key}).str.rfind("MOVED", 0), 0u);
  EXPECT_GT(to->Call({"PTTL", key}).integer, 3500 * 1000);
  ExpectContinues(*to, key, before);
  EXPECT_TRUE(cluster_->WaitHealthy(/*with_replicas=*/true));
}

TEST_F(RlClusterTest, ManualFailoverContinuesTheCounts) {
  const std::string key = "rl:failover";
  Load(key);
  RedisServer& owner = Owner(key);
  const Answers before = PeekAll(owner, key);
  const std::vector<RedisServer*> replicas = cluster_->ReplicasOf(owner);
  ASSERT_EQ(replicas.size(), 1u);
  ASSERT_TRUE(cluster_->Failover(*replicas[0]));
  EXPECT_EQ(&Owner(key), replicas[0]);
  ExpectContinues(*replicas[0], key, before);
  EXPECT_EQ(replicas[0]->Call({"RL.POLICY", "GET", "api"}).str,
            "SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d");
}

// Last: it leaves one shard without a replica.
TEST_F(RlClusterTest, KillNineOfAMasterPromotedReplicaContinuesTheCounts) {
  const std::string key = "rl:killed";
  Load(key);  // acknowledged by the replica (WAIT)
  RedisServer& owner = Owner(key);
  const Answers before = PeekAll(owner, key);
  RedisServer* promoted = nullptr;
  ASSERT_TRUE(cluster_->KillMaster(owner, &promoted));
  ASSERT_NE(promoted, nullptr);
  EXPECT_FALSE(owner.running());
  EXPECT_EQ(&Owner(key), promoted);
  ExpectContinues(*promoted, key, before);
  EXPECT_EQ(promoted->Call({"RL.POLICY", "GET", "api"}).str,
            "SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d");
  EXPECT_EQ(Cli({"RL.CHECK", "rl:user:1", "POLICY", "api"}).at(0), "1") << "the cluster serves";
}

}  // namespace
}  // namespace rl::test

// The probe's native type through Redis replication: a full sync carries the keys and the aux
// value (rdb_save/aux_save on the master, rdb_load/aux_load on the replica), then the effects
// PROBE.SET replicates keep the replica identical to the master (same creation time, same
// absolute expiry, same DEBUG DIGEST-VALUE), expiry reaches the replica, the replica refuses
// writes, and a replica promoted with REPLICAOF NO ONE carries on.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "probe_util.h"
#include "redis_harness.h"

namespace rl::test {
namespace {

using std::chrono::seconds;

constexpr long long kMaster = 1 << 2, kSlave = 1 << 3, kReadonly = 1 << 4, kReplicaOnline = 1 << 17;

TEST(ReplicationTest, ReplicaHoldsTheMastersStateAndExpiry) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer master(ProbeOptions());
  RedisServer replica(ProbeOptions());
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());

  // Before the link: reaches the replica through the full sync's RDB. GetServerInfo reads the
  // server's own INFO, and the cron hook ticks (SubscribeToServerEvent).
  ASSERT_EQ(master.Call({"PROBE.SET", "early", "e", "PX", "600000"}).str, "OK");
  ASSERT_EQ(master.Call({"PROBE.CONF", "SET", "synced"}).str, "OK");
  Reply alone = master.Call({"PROBE.REPLINFO"});
  ASSERT_EQ(alone.elements.size(), 3u);
  EXPECT_EQ(alone.elements[0].str, "master");
  EXPECT_EQ(alone.elements[1].integer, 0);
  EXPECT_EQ(alone.elements[2].integer, 0);
  EXPECT_TRUE(WaitUntil([&] { return ProbeStat(master, "cron_ticks") > 0; }, seconds(10)));
  const long long forks = ProbeStat(master, "forks_born");
  ASSERT_TRUE(StartReplication(master, replica));
  // The full sync forked on the master; the replica's role and the master's replicas changed.
  EXPECT_GT(ProbeStat(master, "forks_born"), forks);
  EXPECT_GE(ProbeStat(master, "replica_changes"), 1);
  EXPECT_GE(ProbeStat(replica, "role_changes"), 1);
  Reply linked = master.Call({"PROBE.REPLINFO"});
  ASSERT_EQ(linked.elements.size(), 3u);
  EXPECT_EQ(linked.elements[1].integer, 1);
  EXPECT_EQ(linked.elements[2].integer, 1);
  EXPECT_EQ(replica.Call({"PROBE.REPLINFO"}).elements.at(0).str, "slave");
  EXPECT_EQ(replica.Call({"PROBE.GET", "early"}).str, "e");
  EXPECT_EQ(replica.Call({"PROBE.CONF", "GET"}).str, "synced");
  EXPECT_EQ(ProbeStat(replica, "rdb_load"), 1);
  EXPECT_EQ(ProbeStat(replica, "aux_load"), 1);

  // After the link: effects replicated by the module.
  ASSERT_EQ(master.Call({"PROBE.SET", "k1", "one", "PX", "600000"}).str, "OK");
  ASSERT_EQ(master.Call({"PROBE.SET", "k2", "two"}).str, "OK");
  ASSERT_EQ(master.Call({"PROBE.CONF", "SET", "live"}).str, "OK");
  ASSERT_EQ(master.Call({"PROBE.DEL", "early"}).integer, 1);
  ASSERT_TRUE(WaitForReplicas(master, 1));

  for (const std::string key : {"k1", "k2"}) {
    EXPECT_EQ(replica.Call({"PROBE.GET", key}).str, master.Call({"PROBE.GET", key}).str) << key;
    Reply m = master.Call({"PROBE.META", key});
    Reply r = replica.Call({"PROBE.META", key});
    ASSERT_EQ(r.elements.size(), 4u) << key;
    EXPECT_EQ(r.elements[0].integer, m.elements[0].integer) << key;  // creation time
    EXPECT_EQ(r.elements[2].integer, m.elements[2].integer) << key;  // absolute expiry
    EXPECT_EQ(replica.Call({"PEXPIRETIME", key}).integer, master.Call({"PEXPIRETIME", key}).integer)
        << key;
    EXPECT_EQ(replica.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str,
              master.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str)
        << key;
  }
  // The replica ran the replicated PROBE.SETs with REDISMODULE_CTX_FLAGS_REPLICATED.
  EXPECT_EQ(ProbeStat(replica, "set_replicated"), 2);
  EXPECT_EQ(ProbeStat(master, "set_replicated"), 0);
  EXPECT_TRUE(replica.Call({"PROBE.GET", "early"}).is_null());
  EXPECT_EQ(replica.Call({"PROBE.CONF", "GET"}).str, "live");
  EXPECT_EQ(replica.Call({"DEBUG", "DIGEST"}).str, master.Call({"DEBUG", "DIGEST"}).str);

  // The replica's context, and its refusal of writes before the module runs.
  const long long flags = replica.Call({"PROBE.CTX"}).integer;
  EXPECT_EQ(flags & (kSlave | kReadonly | kReplicaOnline), kSlave | kReadonly | kReplicaOnline);
  EXPECT_FALSE(flags & kMaster);
  EXPECT_EQ(replica.Call({"PROBE.SET", "k1", "x"}).str,
            "READONLY You can't write against a read only replica.");

  // A short TTL set on the master ends on the replica too.
  ASSERT_EQ(master.Call({"PROBE.SET", "short", "s", "PX", "300"}).str, "OK");
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_GT(replica.Call({"PTTL", "short"}).integer, 0);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return replica.Call({"PROBE.GET", "short"}).is_null();
      },
      seconds(5)));
  EXPECT_TRUE(WaitUntil(
      [&] {
        return replica.Call({"EXISTS", "short"}).integer == 0;
      },
      seconds(5)));

  // Promoted, the former replica serves and accepts writes with the same state.
  const std::string digest = replica.Call({"DEBUG", "DIGEST-VALUE", "k1"}).elements.at(0).str;
  ASSERT_EQ(replica.Call({"REPLICAOF", "NO", "ONE"}).str, "OK");
  EXPECT_TRUE(replica.Call({"PROBE.CTX"}).integer & kMaster);
  EXPECT_EQ(replica.Call({"DEBUG", "DIGEST-VALUE", "k1"}).elements.at(0).str, digest);
  EXPECT_EQ(replica.Call({"PROBE.SET", "k3", "three"}).str, "OK");
}

TEST(ReplicationTest, ReplicaPairHelperStartsLinked) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisReplicaPair pair(ProbeOptions());
  ASSERT_TRUE(pair.Start());
  ASSERT_EQ(pair.master.Call({"PROBE.SET", "k", "v"}).str, "OK");
  ASSERT_TRUE(WaitForReplicas(pair.master, 1));
  EXPECT_EQ(pair.replica.Call({"PROBE.GET", "k"}).str, "v");
  EXPECT_EQ(pair.replica.InfoField("replication", "role"), "slave");
}

}  // namespace
}  // namespace rl::test

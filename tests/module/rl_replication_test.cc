// rl.so through Redis replication: a full sync carries states and runtime policies; after WAIT,
// RL.PEEK on the replica answers as on the master (the replica holds the master's state: same
// DEBUG DIGEST, same expiry; also for checks inside MULTI/EXEC and scripts), the replica refuses
// writes but serves RL.PEEK, a call that changes nothing replicates nothing (master_repl_offset
// unchanged), expiry reaches the replica, and a promoted replica continues the counts (a key at its
// limit stays denied). A master with nothing downstream builds no effects (propagation.h), and a
// replica that attaches later, or comes back through the backlog, still misses nothing. Under
// min-replicas-to-write, writers are refused once the replica is gone.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

using Cmd = std::vector<std::string>;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The master pings its replicas through the replication stream (moving master_repl_offset)
// every repl-ping-replica-period seconds; an hour keeps the offset still while we watch it.
RedisOptions Options() { return RlOptions().With("repl-ping-replica-period 3600"); }

// A PEEK for every key the test writes, by the limits it was written with.
const std::vector<Cmd>& Peeks() {
  static const std::vector<Cmd> peeks = {
      {"RL.PEEK", "early", "FIXED_WINDOW", "3", "1h"},
      {"RL.PEEK", "early", "POLICY", "pre"},
      {"RL.PEEK", "tb", "TOKEN_BUCKET", "5", "1h"},
      {"RL.PEEK", "gcra", "GCRA", "5", "1h", "BURST", "7"},
      {"RL.PEEK", "log", "SLIDING_LOG", "5", "1h"},
      {"RL.PEEK", "sw", "SLIDING_WINDOW", "5", "1h"},
      {"RL.PEEK", "fw", "FIXED_WINDOW", "5", "1h"},
      {"RL.PEEK", "lb", "LEAKY_BUCKET", "5", "1h"},
      {"RL.PEEK", "multi", "SLIDING_LOG", "100", "1h", "FIXED_WINDOW", "2", "1d"},
      {"RL.PEEK", "pol", "POLICY", "live"},
      {"RL.PEEK", "reset", "GCRA", "5", "1h"},
  };
  return peeks;
}

// Equal decisions: exact but for the times, which may move by the few ms between the calls.
::testing::AssertionResult SameDecision(const Reply& a, const Reply& b) {
  const std::vector<int64_t> x = DecisionOf(a), y = DecisionOf(b);
  if (x.empty() || y.empty() || x[0] != y[0] || x[1] != y[1] || x[2] != y[2] ||
      std::llabs(x[3] - y[3]) > 1000 || std::llabs(x[4] - y[4]) > 1000) {
    return ::testing::AssertionFailure() << Show(a) << " vs " << Show(b);
  }
  return ::testing::AssertionSuccess();
}

long long Offset(RedisServer& master) {
  return std::stoll(master.InfoField("replication", "master_repl_offset"));
}

TEST(RlReplicationTest, ReplicaAnswersAsTheMaster) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer master(Options());
  RedisServer replica(Options());
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());

  // Before the link: reaches the replica through the full sync's RDB (value and aux data).
  ASSERT_EQ(master.Call({"RL.POLICY", "SET", "pre", "GCRA", "10", "1h"}).str, "OK");
  for (int i = 0; i < 4; ++i) master.Call({"RL.CHECK", "early", "FIXED_WINDOW", "3", "1h"});
  master.Call({"RL.CHECK", "early", "POLICY", "pre", "COST", "4"});
  ASSERT_TRUE(StartReplication(master, replica));

  // After the link: the effects of each command.
  ASSERT_EQ(
      master
          .Call({"RL.POLICY", "SET", "live", "SLIDING_LOG", "3", "1h", "TOKEN_BUCKET", "10", "1d"})
          .str,
      "OK");
  for (int i = 0; i < 3; ++i) {
    master.Call({"RL.CHECK", "tb", "TOKEN_BUCKET", "5", "1h", "COST", "2"});
    master.Call({"RL.CHECK", "gcra", "GCRA", "5", "1h", "BURST", "7"});
    master.Call({"RL.CHECK", "log", "SLIDING_LOG", "5", "1h"});
    master.Call({"RL.CHECK", "sw", "SLIDING_WINDOW", "5", "1h"});
    master.Call({"RL.CHECK", "fw", "FIXED_WINDOW", "5", "1h", "COST", "2"});
    master.Call({"RL.CHECK", "lb", "LEAKY_BUCKET", "5", "1h"});
    master.Call({"RL.CHECK", "multi", "SLIDING_LOG", "100", "1h", "FIXED_WINDOW", "2", "1d"});
    master.Call({"RL.CHECK", "pol", "POLICY", "live"});
    master.Call({"CL.THROTTLE", "cell", "2", "1", "3600"});
  }
  master.Call({"RL.CHECK", "reset", "GCRA", "5", "1h"});
  ASSERT_EQ(master.Call({"RL.RESET", "reset", "GCRA", "5", "1h"}).integer, 1);
  // Inside MULTI/EXEC and a script the effects replicate too (as one transaction).
  {
    auto tx = master.Connect();
    ASSERT_EQ(tx->Call({"MULTI"}).str, "OK");
    tx->Call({"RL.CHECK", "tb", "TOKEN_BUCKET", "5", "1h"});
    tx->Call({"RL.CHECK", "gcra", "GCRA", "5", "1h", "BURST", "7"});
    tx->Call({"RL.CHECK", "fw", "FIXED_WINDOW", "5", "1h", "COST", "9"});  // denied
    Reply exec = tx->Call({"EXEC"});
    ASSERT_EQ(exec.elements.size(), 3u) << Show(exec);
  }
  Reply script = master.Call({"EVAL",
                              "redis.call('RL.CHECK', KEYS[1], 'SLIDING_LOG', '5', '1h'); "
                              "return redis.call('RL.CHECK', KEYS[2], 'LEAKY_BUCKET', '5', '1h')",
                              "2", "log", "lb"});
  ASSERT_EQ(script.type, '*') << Show(script);
  ASSERT_TRUE(WaitForReplicas(master, 1));

  for (const Cmd& peek : Peeks()) {
    EXPECT_TRUE(SameDecision(master.Call(peek), replica.Call(peek))) << peek[1];
    EXPECT_EQ(replica.Call({"DEBUG", "DIGEST-VALUE", peek[1]}).elements.at(0).str,
              master.Call({"DEBUG", "DIGEST-VALUE", peek[1]}).elements.at(0).str)
        << peek[1];
    const long long m = master.Call({"PTTL", peek[1]}).integer;
    const long long r = replica.Call({"PTTL", peek[1]}).integer;
    EXPECT_NEAR(static_cast<double>(m), static_cast<double>(r), 1000.0) << peek[1];
  }
  EXPECT_EQ(replica.Call({"EXISTS", "reset"}).integer, 0) << "RL.RESET's DEL replicated";
  EXPECT_EQ(replica.Call({"DEBUG", "DIGEST"}).str, master.Call({"DEBUG", "DIGEST"}).str);
  EXPECT_EQ(replica.Call({"DBSIZE"}).integer, master.Call({"DBSIZE"}).integer);
  EXPECT_EQ(Show(replica.Call({"RL.POLICY", "LIST"})), Show(master.Call({"RL.POLICY", "LIST"})));
  EXPECT_EQ(replica.Call({"RL.POLICY", "GET", "pre"}).str, "GCRA 10 1h");
  // Replicas received the calls with the master's time (RL.APPLY) or the small states themselves
  // (RL.PUT), never the commands as sent: their own clock decides nothing, and every replay
  // reached the master's state.
  EXPECT_EQ(replica.Call({"INFO", "commandstats"}).str.find("cmdstat_rl.check"), std::string::npos);
  EXPECT_NE(replica.Call({"INFO", "commandstats"}).str.find("cmdstat_rl.apply"), std::string::npos);
  EXPECT_NE(replica.Call({"INFO", "commandstats"}).str.find("cmdstat_rl.put"), std::string::npos);
  EXPECT_EQ(RlStat(replica, "apply_mismatches"), 0);

  // The replica serves reads and refuses writes before the module runs.
  const std::string readonly = "READONLY You can't write against a read only replica.";
  EXPECT_EQ(replica.Call({"RL.CHECK", "fw", "FIXED_WINDOW", "5", "1h"}).str, readonly);
  EXPECT_EQ(replica.Call({"CL.THROTTLE", "cell", "2", "1", "3600"}).str, readonly);
  EXPECT_EQ(replica.Call({"RL.POLICY", "SET", "x", "GCRA", "1", "1s"}).str, readonly);
  EXPECT_EQ(replica.Call({"RL.SETSTATE", "fw", "x"}).str, readonly);

  // A call that changes nothing replicates nothing.
  const long long offset = Offset(master);
  for (const Cmd& cmd :
       std::vector<Cmd>{{"RL.CHECK", "early", "FIXED_WINDOW", "3", "1h"},  // denied
                        {"RL.CHECK", "fw", "FIXED_WINDOW", "5", "1h", "COST", "0"},
                        {"RL.CHECK", "fw", "FIXED_WINDOW", "5", "1h", "COST", "9"},  // never
                        {"RL.CHECK", "nokey", "GCRA", "5", "1h", "COST", "0"},
                        {"RL.PEEK", "fw", "FIXED_WINDOW", "5", "1h"},
                        {"RL.PEEK", "nokey", "GCRA", "5", "1h"},
                        {"CL.THROTTLE", "cell", "2", "1", "3600"},  // at its limit
                        {"RL.RESET", "nokey", "GCRA", "5", "1h"},
                        {"RL.RESET", "fw", "GCRA", "5", "1h"},
                        {"RL.CHECK", "fw", "FIXED_WINDOW", "0", "1h"},  // errors
                        {"RL.POLICY", "DEL", "no-such-policy"},
                        {"RL.POLICY", "SET", "bad", "GCRA", "0", "1h"},
                        {"RL.POLICY", "GET", "live"},
                        {"RL.POLICY", "LIST"}}) {
    master.Call(cmd);
    EXPECT_EQ(Offset(master), offset) << "replicated: " << cmd[0] << " " << cmd[1];
  }
  // fw has used 4 of 5.
  EXPECT_EQ(master.Call({"RL.CHECK", "fw", "FIXED_WINDOW", "5", "1h", "COST", "2"}).Ints()[0], 0);
  EXPECT_EQ(Offset(master), offset);
  ASSERT_EQ(master.Call({"RL.CHECK", "new", "TOKEN_BUCKET", "5", "1h"}).Ints()[0], 1);
  EXPECT_GT(Offset(master), offset) << "an allowed check replicates its state";

  // Policies deleted on the master are deleted on the replica.
  ASSERT_EQ(master.Call({"RL.POLICY", "SET", "tmp", "GCRA", "1", "1h"}).str, "OK");
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_EQ(replica.Call({"RL.POLICY", "GET", "tmp"}).str, "GCRA 1 1h");
  ASSERT_EQ(master.Call({"RL.POLICY", "DEL", "tmp"}).integer, 1);
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_TRUE(replica.Call({"RL.POLICY", "GET", "tmp"}).is_null());

  // A short-lived state ends on the replica too (the master's expiry DEL).
  master.Call({"RL.CHECK", "short", "TOKEN_BUCKET", "10", "1s"});
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_GT(replica.Call({"PTTL", "short"}).integer, 0);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return replica.Call({"EXISTS", "short"}).integer == 0;
      },
      seconds(10)));

  // Promoted, the former replica continues the counts: the key at its limit stays denied.
  std::vector<Reply> before;
  for (const Cmd& peek : Peeks()) before.push_back(master.Call(peek));
  ASSERT_TRUE(master.Stop());
  ASSERT_EQ(replica.Call({"REPLICAOF", "NO", "ONE"}).str, "OK");
  for (size_t i = 0; i < Peeks().size(); ++i) {
    EXPECT_TRUE(SameDecision(before[i], replica.Call(Peeks()[i]))) << Peeks()[i][1];
  }
  Reply denied = replica.Call({"RL.CHECK", "early", "FIXED_WINDOW", "3", "1h"});
  EXPECT_EQ(denied.Ints()[0], 0) << Show(denied);
  EXPECT_GT(denied.Ints()[3], 3500 * 1000) << "the master's window, not a fresh one";
  EXPECT_EQ(replica.Call({"RL.CHECK", "fw", "FIXED_WINDOW", "5", "1h", "COST", "2"}).Ints()[0], 0);
  EXPECT_EQ(replica.Call({"RL.CHECK", "log", "SLIDING_LOG", "5", "1h"}).Ints()[2], 0);  // 4 + 1
  EXPECT_EQ(replica.Call({"RL.CHECK", "pol", "POLICY", "live"}).Ints()[0], 0);
}

// Writes of every algorithm on keys w:0..w:5, plain, in MULTI/EXEC and in a script; `round`
// tells the rounds' new keys apart.
void WriteRound(RedisServer& master, int round) {
  static const char* const kLimits[][3] = {
      {"TOKEN_BUCKET", "50", "1h"},   {"GCRA", "50", "1h"},         {"SLIDING_LOG", "50", "1h"},
      {"SLIDING_WINDOW", "50", "1h"}, {"FIXED_WINDOW", "50", "1h"}, {"LEAKY_BUCKET", "50", "1h"}};
  for (int i = 0; i < 6; ++i) {
    const Reply r = master.Call(
        {"RL.CHECK", "w:" + std::to_string(i), kLimits[i][0], kLimits[i][1], kLimits[i][2]});
    ASSERT_EQ(r.type, '*') << Show(r);
  }
  master.Call({"RL.CHECK", "r:" + std::to_string(round), "GCRA", "5", "1h"});
  // A transaction and a script: their effects travel wrapped in MULTI/EXEC.
  auto tx = master.Connect();
  ASSERT_EQ(tx->Call({"MULTI"}).str, "OK");
  tx->Call({"RL.CHECK", "w:0", "TOKEN_BUCKET", "50", "1h"});
  tx->Call({"RL.CHECK", "m:" + std::to_string(round), "SLIDING_LOG", "5", "1h"});
  const Reply exec = tx->Call({"EXEC"});
  ASSERT_EQ(exec.elements.size(), 2u) << Show(exec);
  const Reply script =
      master.Call({"EVAL",
                   "redis.call('RL.CHECK', KEYS[1], 'GCRA', '50', '1h'); "
                   "return redis.call('RL.CHECK', KEYS[2], 'FIXED_WINDOW', '5', '1h')",
                   "2", "w:1", "s:" + std::to_string(round)});
  ASSERT_EQ(script.type, '*') << Show(script);
}

::testing::AssertionResult SameData(RedisServer& master, RedisServer& replica) {
  const std::string m = master.Call({"DEBUG", "DIGEST"}).str;
  const std::string r = replica.Call({"DEBUG", "DIGEST"}).str;
  const long long mk = master.Call({"DBSIZE"}).integer, rk = replica.Call({"DBSIZE"}).integer;
  if (m == r && mk == rk) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "digest " << m << " vs " << r << ", keys " << mk << " vs " << rk;
}

// Alone, the master stops building effects (INFO rl_downstream 0). A replica attaching later
// gets what was written meanwhile from the full sync's snapshot and every later effect from the
// stream, also for writes between its SYNC (which creates the backlog) and the fork that starts
// its stream (diskless sync, delayed a second). When it drops off and comes back through the
// backlog (a partial resync), the writes in between reach it: the backlog kept the master
// building effects while no replica was connected. Every phase writes in MULTI/EXEC and scripts
// too.
TEST(RlReplicationTest, NothingDownstreamThenAReplicaMissesNothing) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer master(Options().With("repl-diskless-sync yes").With("repl-diskless-sync-delay 1"));
  RedisServer replica(Options());
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());
  ASSERT_TRUE(WaitUntil([&] { return RlStat(master, "downstream") == 0; }, seconds(10)));
  int round = 0;
  for (; round < 3; ++round) WriteRound(master, round);

  // Attach, writing all along until the replica is online.
  ASSERT_EQ(replica.Call({"REPLICAOF", "127.0.0.1", std::to_string(master.port())}).type, '+');
  ASSERT_TRUE(WaitUntil(
      [&] {
        WriteRound(master, round++);
        return replica.InfoField("replication", "master_link_status") == "up" &&
               master.InfoField("replication", "slave0").find("state=online") != std::string::npos;
      },
      seconds(20), milliseconds(20)));
  for (int i = 0; i < 3; ++i) WriteRound(master, round++);
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_TRUE(SameData(master, replica)) << "after the full sync";
  EXPECT_EQ(RlStat(master, "downstream"), 1);

  // The replica drops off (the master closes its link while the replica sleeps, so it cannot
  // come back at once); the master, with its backlog, keeps building effects. The replica acks
  // every second: an ack 2 s old says the sleep has begun (not a fixed wait, which a busy machine
  // can outlast before the sleep starts), and leaves 4 s of it for what follows.
  const long long partial_before = std::stoll(master.InfoField("stats", "sync_partial_ok"));
  std::thread sleeper([&] { replica.Connect(20000)->Call({"DEBUG", "SLEEP", "6"}); });
  const auto ack_age = [&] {
    const std::string slave = master.InfoField("replication", "slave0");
    const size_t at = slave.find("lag=");
    return at == std::string::npos ? -1 : std::atoi(slave.c_str() + at + 4);
  };
  EXPECT_TRUE(WaitUntil([&] { return ack_age() >= 2; }, seconds(20)));
  EXPECT_EQ(master.Call({"CLIENT", "KILL", "TYPE", "replica"}).integer, 1);
  WriteRound(master, round++);
  std::this_thread::sleep_for(milliseconds(500));  // a few cron ticks
  EXPECT_EQ(master.InfoField("replication", "connected_slaves"), "0");
  EXPECT_EQ(RlStat(master, "downstream"), 1) << "the backlog still needs the effects";
  WriteRound(master, round++);
  sleeper.join();
  ASSERT_TRUE(WaitUntil(
      [&] {
        return std::stoll(master.InfoField("stats", "sync_partial_ok")) > partial_before &&
               replica.InfoField("replication", "master_link_status") == "up";
      },
      seconds(20)));
  WriteRound(master, round++);
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_TRUE(SameData(master, replica)) << "after the partial resync";
}

// Redis keeps the backlog after the last replica leaves, for repl-backlog-ttl: the master keeps
// building effects as long as the backlog exists, stops once it is freed, and a replica attaching
// after that (a full sync) still gets every state.
TEST(RlReplicationTest, EffectsLastAsLongAsTheBacklog) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer master(Options().With("repl-backlog-ttl 2"));
  RedisServer replica(Options());
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());
  ASSERT_TRUE(StartReplication(master, replica));
  int round = 0;
  WriteRound(master, round++);
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_TRUE(SameData(master, replica));

  // The replica leaves for good; the backlog stays for the ttl, and so do the effects.
  ASSERT_EQ(replica.Call({"REPLICAOF", "NO", "ONE"}).type, '+');
  ASSERT_TRUE(WaitUntil([&] { return master.InfoField("replication", "connected_slaves") == "0"; },
                        seconds(10)));
  bool effects_while_backlog = true;
  ASSERT_TRUE(WaitUntil(
      [&] {
        // In this order: a cron tick between the two reads may free the backlog and then clear
        // rl_downstream, never the other way round.
        const bool downstream = RlStat(master, "downstream") == 1;
        const bool backlog = master.InfoField("replication", "repl_backlog_active") == "1";
        if (backlog && !downstream) effects_while_backlog = false;
        WriteRound(master, round++);
        return !backlog;
      },
      seconds(30), milliseconds(50)));
  EXPECT_TRUE(effects_while_backlog) << "stopped building effects while the backlog existed";
  ASSERT_TRUE(WaitUntil([&] { return RlStat(master, "downstream") == 0; }, seconds(10)));
  WriteRound(master, round++);

  ASSERT_EQ(replica.Call({"FLUSHALL"}).type, '+');
  ASSERT_TRUE(StartReplication(master, replica));
  WriteRound(master, round++);
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_TRUE(SameData(master, replica)) << "after a full sync once the backlog was gone";
}

// RL.CHECK ... MAXWAIT: what it admits into debt reaches the replica as the charge it was (same
// digest); what it refuses changes nothing and replicates nothing.
TEST(RlReplicationTest, QueuedChecksReplicateTheirCharge) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer master(Options());
  RedisServer replica(Options());
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());
  ASSERT_TRUE(StartReplication(master, replica));
  const Cmd queued = {"RL.CHECK", "q", "TOKEN_BUCKET", "2", "1h", "MAXWAIT", "1h"};
  // Two tokens now, then two waiters 30 and 60 minutes out (a token every 30 minutes). Each wait
  // is counted from the first check, so it is shorter by the time spent since then (a busy
  // machine can spend seconds between calls): bound it by what elapsed, not by a fixed margin.
  const auto first = std::chrono::steady_clock::now();
  auto waited_ms = [&] {
    return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - first)
        .count();
  };
  for (int64_t expected_wait_min : {0, 0, 30, 60}) {
    const std::vector<int64_t> d = DecisionOf(master.Call(queued));
    ASSERT_EQ(d.size(), 5u);
    EXPECT_EQ(d[0], 1);
    EXPECT_LE(d[3], expected_wait_min * 60000 + 1);
    if (expected_wait_min > 0) {
      EXPECT_GE(d[3], expected_wait_min * 60000 - waited_ms() - 1);
    }
  }
  ASSERT_TRUE(WaitForReplicas(master, 1));
  const long long offset = Offset(master);
  const std::vector<int64_t> refused = DecisionOf(master.Call(queued));  // 90 minutes > 1h
  ASSERT_EQ(refused.size(), 5u);
  EXPECT_EQ(refused[0], 0);
  EXPECT_LE(refused[3], 90 * 60000 + 1);
  EXPECT_GE(refused[3], 90 * 60000 - waited_ms() - 1);
  EXPECT_EQ(Offset(master), offset) << "a refused queued check replicates nothing";
  const Cmd peek = {"RL.PEEK", "q", "TOKEN_BUCKET", "2", "1h"};
  EXPECT_TRUE(SameDecision(master.Call(peek), replica.Call(peek)));
  EXPECT_EQ(replica.Call({"DEBUG", "DIGEST-VALUE", "q"}).elements.at(0).str,
            master.Call({"DEBUG", "DIGEST-VALUE", "q"}).elements.at(0).str);
}

// min-replicas-to-write 1 with a real replica: linked, the master takes RL.* writes and the
// replica gets them; once it is gone (kill -9) the writers are refused (NOREPLICAS, nothing
// counted) and RL.PEEK still answers. rl_key_test.cc walks every writer with no replica at all.
TEST(RlReplicationTest, MinReplicasToWriteFollowsTheReplica) {
  if (!RedisAvailable()) GTEST_SKIP() << ServerName() << " or its cli not installed";
  RedisServer master(RlOptions().With("min-replicas-to-write 1").With("min-replicas-max-lag 10"));
  RedisServer replica(RlOptions());
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());
  const Cmd check = {"RL.CHECK", "mr", "FIXED_WINDOW", "5", "1h"};
  const Cmd peek = {"RL.PEEK", "mr", "FIXED_WINDOW", "5", "1h"};
  auto remaining = [](const Reply& reply) {
    const std::vector<int64_t> decision = DecisionOf(reply);
    return decision.size() == 5 ? decision[2] : int64_t{-1};
  };
  const std::string noreplicas = "NOREPLICAS Not enough good replicas to write.";
  EXPECT_EQ(master.Call(check).str, noreplicas) << "no replica yet";

  ASSERT_TRUE(StartReplication(master, replica));
  // The master counts the replica once it is online: the first check that passes counts one.
  ASSERT_TRUE(WaitUntil([&] { return !master.Call(check).is_error(); }, seconds(10)))
      << master.Call(check).str;
  EXPECT_EQ(remaining(master.Call(check)), 3);
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_EQ(remaining(replica.Call(peek)), 2) << "the replica has both checks";

  replica.Kill9();
  ASSERT_TRUE(WaitUntil([&] { return master.InfoField("replication", "connected_slaves") == "0"; },
                        seconds(10)));
  EXPECT_EQ(master.Call(check).str, noreplicas);
  EXPECT_EQ(master.Call({"CL.THROTTLE", "mr:cell", "1", "2", "3"}).str, noreplicas);
  EXPECT_EQ(remaining(master.Call(peek)), 2)
      << "RL.PEEK answers; the refused checks counted nothing";
  EXPECT_EQ(master.Call({"EXISTS", "mr:cell"}).integer, 0);
}

}  // namespace
}  // namespace rl::test

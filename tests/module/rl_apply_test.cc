// What rl.so replicates per call is bounded by the call, not by the key (RL.APPLY, see
// module/apply.h; a small state replicates itself, RL.PUT, see module/put.h: shorter still).
// For the worst keys (1024 states under one key; one SLIDING_LOG 1000000 1h state holding 7,000
// runs) an RL.CHECK adds at most twice its own size to the replication stream
// (master_repl_offset) and to the AOF, and the replica still ends with the master's exact state.
// A one-limit key's check replicates three arguments and fewer bytes than RL.APPLY took. Every kind
// of change (policies, BURST, BLOCK, CL.THROTTLE, an acquire with its lease id, a release, refund,
// charge, reset, a denial that drops runs from a log) replays on a replica and from the AOF to the
// master's bytes; a promoted replica honours the master's lease ids. An AOF replayed after a
// state's end keeps it for the calls that built on it. RL.APPLY refuses forgeries and counts
// replays that miss the primary's state.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "probe_util.h"
#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

using Cmd = std::vector<std::string>;
using std::chrono::milliseconds;

// The master pings its replicas through the stream every repl-ping-replica-period seconds; an
// hour keeps master_repl_offset still while we count. appendfsync always: the AOF holds a
// write before its reply.
RedisOptions Options() { return RlOptions().With("repl-ping-replica-period 3600"); }
RedisOptions MasterOptions() { return Options().With("appendonly yes").With("appendfsync always"); }

long long Offset(RedisServer& master) {
  return std::stoll(master.InfoField("replication", "master_repl_offset"));
}

// Bytes of `cmd` as a client sends it (a RESP array of bulk strings).
size_t RespSize(const Cmd& cmd) {
  size_t n = 3 + std::to_string(cmd.size()).size();
  for (const std::string& a : cmd) n += 5 + std::to_string(a.size()).size() + a.size();
  return n;
}

TEST(RlApplyTest, ACheckReplicatesBytesBoundedByTheCall) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer master(MasterOptions());
  RedisServer replica(Options());
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());
  ASSERT_TRUE(StartReplication(master, replica));

  // 1024 states (the most one key holds) under "wide", one per window.
  for (int i = 0; i < 1024; ++i) {
    const Reply r = master.Call(
        {"RL.CHECK", "wide", "SLIDING_WINDOW", "1000000", std::to_string(3600 + i) + "s"});
    ASSERT_EQ(r.Ints().at(0), 1) << i << " " << Show(r);
  }
  // One sliding log of 7,000 runs in the last hour (forged: real ones take 7,000 distinct ms).
  EncodedEntry log;
  log.algorithm = 2;
  log.window_ms = 3600 * 1000;
  log.log = true;
  const int64_t now = TimeMs(master.Call({"TIME"}));
  for (int i = 0; i < 7000; ++i) log.runs.emplace_back(now - 3500 * 1000 + i * 500, 1);
  log.expiry_ms = log.runs.back().first + log.window_ms;
  ASSERT_EQ(master.Call({"RL.SETSTATE", "biglog", EncodeState({log})}).str, "OK");
  ASSERT_EQ(master.Call({"RL.CHECK", "narrow", "SLIDING_WINDOW", "1000000", "3600s"}).Ints()[0], 1);
  ASSERT_TRUE(WaitForReplicas(master, 1));

  const std::vector<Cmd> checks = {
      {"RL.CHECK", "wide", "SLIDING_WINDOW", "1000000", "3600s"},
      {"RL.CHECK", "biglog", "SLIDING_LOG", "1000000", "1h"},
      {"RL.CHECK", "narrow", "SLIDING_WINDOW", "1000000", "3600s"},
  };
  constexpr int kChecks = 20;
  std::vector<double> stream, aof;
  for (const Cmd& check : checks) {
    const long long offset = Offset(master);
    const size_t aof_bytes = ReadAofFiles(master.dir()).size();
    for (int i = 0; i < kChecks; ++i) {
      const Reply r = master.Call(check);
      ASSERT_EQ(r.Ints().at(0), 1) << check[1] << " " << Show(r);
    }
    // Read before WAIT, whose REPLCONF GETACK travels in the stream too.
    stream.push_back(static_cast<double>(Offset(master) - offset) / kChecks);
    aof.push_back(static_cast<double>(ReadAofFiles(master.dir()).size() - aof_bytes) / kChecks);
    ASSERT_TRUE(WaitForReplicas(master, 1));
    const double bound = 2.0 * static_cast<double>(RespSize(check));
    EXPECT_LE(stream.back(), bound) << check[1] << ": replication bytes per check";
    EXPECT_LE(aof.back(), bound) << check[1] << ": AOF bytes per check";
    EXPECT_EQ(replica.Call({"DEBUG", "DIGEST-VALUE", check[1]}).elements.at(0).str,
              master.Call({"DEBUG", "DIGEST-VALUE", check[1]}).elements.at(0).str)
        << check[1];
  }
  // The two large keys replicate the call (RL.APPLY), as much for one as for the other (the
  // count of states has more digits); the key with one state replicates it (RL.PUT), less.
  EXPECT_LE(stream[0], stream[1] + 8);
  EXPECT_LE(stream[1], stream[0] + 8);
  EXPECT_LT(stream[2], stream[1]);
  std::printf(
      "bytes per check (stream, AOF): 1024 states %.1f %.1f, log of 7,000 runs %.1f %.1f, "
      "one state %.1f %.1f; the command %zu\n",
      stream[0], aof[0], stream[1], aof[1], stream[2], aof[2], RespSize(checks[0]));
  EXPECT_EQ(replica.Call({"DEBUG", "DIGEST"}).str, master.Call({"DEBUG", "DIGEST"}).str);
  EXPECT_EQ(RlStat(replica, "apply_mismatches"), 0);
}

// A key its user expired (PEXPIRE, PEXPIREAT) is absent once lapsed, even while the server still
// holds it: the next check starts from a fresh state, not the one stored. With active expiry off
// the key lapses in place, so the check itself finds it expired: the server deletes it, propagates
// DEL and wraps it with the check's RL.PUT in MULTI/EXEC, which the replica and the AOF replay to
// the master's value and TTL (SameData and the AOF digest after Changes).
template <class Call>
void ExpiredByTheUser(RedisServer& master, Call&& call) {
  const Cmd check = {"RL.CHECK", "x", "TOKEN_BUCKET", "5", "1h"};
  for (int i = 0; i < 3; ++i) call(check);
  EXPECT_EQ(call({"RL.PEEK", "x", "TOKEN_BUCKET", "5", "1h", "COST", "0"}).Ints().at(2), 2);
  ASSERT_EQ(call({"DEBUG", "SET-ACTIVE-EXPIRE", "0"}).str, "OK");
  // Any read of the key once lapsed would delete it: its end is set, then never asked. A time
  // already past would delete it at once (not an expiry): 300 ms leaves room for a stall.
  const long long at = TimeMs(master.Call({"TIME"})) + 300;
  ASSERT_EQ(call({"PEXPIREAT", "x", std::to_string(at)}).integer, 1);
  const long long expired = std::stoll(master.InfoField("stats", "expired_keys"));
  // Wait on the server's clock (TIME touches no key) until the key has lapsed.
  EXPECT_TRUE(WaitUntil([&] { return TimeMs(master.Call({"TIME"})) > at; }, milliseconds(5000),
                        milliseconds(2)));
  const Reply fresh = call(check);
  ASSERT_EQ(fresh.Ints().size(), 5u) << Show(fresh);
  EXPECT_EQ(fresh.Ints()[0], 1);
  EXPECT_EQ(fresh.Ints()[2], 4) << "a fresh bucket, not the 2 tokens stored: " << Show(fresh);
  EXPECT_EQ(std::stoll(master.InfoField("stats", "expired_keys")), expired + 1)
      << "the check found the key expired, not gone";
  const long long pttl = call({"PTTL", "x"}).integer;
  EXPECT_GT(pttl, 700000);
  EXPECT_LE(pttl, 720000);
  ASSERT_EQ(call({"DEBUG", "SET-ACTIVE-EXPIRE", "1"}).str, "OK");
}

// Every kind of change, on keys that PEEKs and digests then compare.
std::vector<std::string> Changes(RedisServer& master) {
  std::vector<std::string> leases;
  auto call = [&](const Cmd& cmd) {
    const Reply r = master.Call(cmd);
    EXPECT_NE(r.type, '-') << cmd[0] << " " << cmd[1] << ": " << r.str;
    return r;
  };
  call({"RL.POLICY", "SET", "pol", "SLIDING_LOG", "3", "1h", "GCRA", "10", "1m"});
  for (int i = 0; i < 4; ++i) call({"RL.CHECK", "a", "POLICY", "pol"});
  call({"RL.CHECK", "b", "TOKEN_BUCKET", "5", "1h", "BURST", "8", "COST", "3"});
  for (int i = 0; i < 3; ++i) call({"RL.CHECK", "c", "FIXED_WINDOW", "2", "1h", "BLOCK", "1h"});
  for (int i = 0; i < 2; ++i) call({"CL.THROTTLE", "d", "2", "1", "3600"});
  for (int i = 0; i < 3; ++i) {
    const Reply r = call({"RL.ACQUIRE", "e", "CONCURRENCY", "2", "LEASE", "1h"});
    if (r.elements.size() == 6 && !r.elements[5].is_null()) leases.push_back(r.elements[5].str);
  }
  EXPECT_EQ(leases.size(), 2u);
  if (!leases.empty()) {
    EXPECT_EQ(call({"RL.RELEASE", "e", leases[0]}).integer, 1);
  }
  call({"RL.REFUND", "b", "TOKEN_BUCKET", "5", "1h", "BURST", "8", "COST", "1"});
  call({"RL.CHARGE", "b", "TOKEN_BUCKET", "5", "1h", "BURST", "8", "COST", "20"});
  call({"RL.CHARGE", "g", "SLIDING_LOG", "5", "1h", "COST", "2"});
  call({"RL.CHECK", "f", "LEAKY_BUCKET", "5", "1h"});
  EXPECT_EQ(call({"RL.RESET", "f", "LEAKY_BUCKET", "5", "1h"}).integer, 1);  // DEL
  call({"RL.CHECK", "h", "GCRA", "5", "1h", "SLIDING_WINDOW", "5", "1h"});
  EXPECT_EQ(call({"RL.RESET", "h", "GCRA", "5", "1h"}).integer, 1);  // one state left
  ExpiredByTheUser(master, call);
  // A denial by a log that first drops a run which left its window changes the stored bytes
  // (nothing else: the log's end stays the newest run's). The sleeps are lower bounds; only a
  // stall of 1.5 s between the last two calls would let the second run leave too.
  const Cmd log = {"RL.CHECK", "p", "SLIDING_LOG", "3", "3s", "COST", "1"};
  EXPECT_EQ(call(log).Ints().at(0), 1);
  std::this_thread::sleep_for(milliseconds(1600));
  Cmd two = log;
  two.back() = "2";
  EXPECT_EQ(call(two).Ints().at(0), 1);
  std::this_thread::sleep_for(milliseconds(1500));
  EXPECT_EQ(call(two).Ints().at(0), 0) << "the first run left, the second did not";
  return leases;
}

::testing::AssertionResult SameData(RedisServer& a, RedisServer& b) {
  const char* const keys[] = {"a", "b", "c", "d", "e", "g", "h", "p", "x"};
  for (const char* key : keys) {
    const Reply x = a.Call({"DEBUG", "DIGEST-VALUE", key});
    const Reply y = b.Call({"DEBUG", "DIGEST-VALUE", key});
    if (x.elements.empty() || y.elements.empty() || x.elements[0].str != y.elements[0].str) {
      return ::testing::AssertionFailure() << "key " << key << " differs";
    }
  }
  const std::string x = a.Call({"DEBUG", "DIGEST"}).str, y = b.Call({"DEBUG", "DIGEST"}).str;
  if (x != y) return ::testing::AssertionFailure() << "digest " << x << " vs " << y;
  return ::testing::AssertionSuccess();
}

TEST(RlApplyTest, EveryChangeReplaysToTheMastersBytes) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer master(MasterOptions());
  RedisServer replica(Options());
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());
  ASSERT_TRUE(StartReplication(master, replica));
  const std::vector<std::string> leases = Changes(master);
  ASSERT_EQ(leases.size(), 2u);
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_TRUE(SameData(master, replica));
  EXPECT_EQ(replica.Call({"DBSIZE"}).integer, master.Call({"DBSIZE"}).integer);
  EXPECT_EQ(RlStat(replica, "apply_mismatches"), 0);

  // The AOF has the calls, not the states; replayed later (on a clock that moved on) it reaches
  // the same bytes.
  // (RL.APPLY for the keys of several limits or a log, RL.PUT for the small ones.)
  const std::string aof = ReadAofFiles(master.dir());
  EXPECT_NE(aof.find("RL.APPLY"), std::string::npos);
  EXPECT_NE(aof.find("RL.PUT"), std::string::npos);
  EXPECT_EQ(aof.find("RL.SETSTATE"), std::string::npos);
  const std::string digest = master.Call({"DEBUG", "DIGEST"}).str;
  ASSERT_EQ(master.Call({"DEBUG", "LOADAOF"}).str, "OK");
  EXPECT_EQ(master.Call({"DEBUG", "DIGEST"}).str, digest);
  EXPECT_TRUE(SameData(master, replica));
  EXPECT_EQ(RlStat(master, "apply_mismatches"), 0);

  // Promoted, the replica holds the master's lease ids.
  ASSERT_TRUE(master.Stop());
  ASSERT_EQ(replica.Call({"REPLICAOF", "NO", "ONE"}).str, "OK");
  EXPECT_EQ(replica.Call({"RL.RELEASE", "e", leases[0]}).integer, 0) << "released on the master";
  EXPECT_EQ(replica.Call({"RL.RELEASE", "e", leases[1]}).integer, 1);
}

// A policy set again with another window carries each key's use over at the key's next call
// (KeyState::CarryOver), which a replica replaying RL.APPLY could not do (the links to the old
// window live in the primary's policy): that call replicates the whole state instead.
TEST(RlApplyTest, AWindowCarriedOverReplicatesTheWholeState) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer master(MasterOptions());
  RedisServer replica(Options());
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());
  ASSERT_TRUE(StartReplication(master, replica));
  ASSERT_EQ(master.Call({"RL.POLICY", "SET", "win", "FIXED_WINDOW", "3", "1m"}).str, "OK");
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(master.Call({"RL.CHECK", "w", "POLICY", "win"}).Ints().at(0), 1);
  }
  ASSERT_EQ(master.Call({"RL.POLICY", "SET", "win", "FIXED_WINDOW", "6", "2m"}).str, "OK");
  EXPECT_EQ(master.Call({"RL.CHECK", "w", "POLICY", "win"}).Ints().at(0), 0) << "no fresh burst";
  ASSERT_TRUE(WaitForReplicas(master, 1));
  const Reply x = master.Call({"DEBUG", "DIGEST-VALUE", "w"});
  const Reply y = replica.Call({"DEBUG", "DIGEST-VALUE", "w"});
  ASSERT_FALSE(x.elements.empty());
  ASSERT_FALSE(y.elements.empty());
  EXPECT_EQ(x.elements[0].str, y.elements[0].str);
  EXPECT_EQ(RlStat(replica, "apply_mismatches"), 0);
  EXPECT_EQ(replica.Call({"RL.PEEK", "w", "POLICY", "win"}).Ints().at(0), 0);
  // The AOF holds the carried state as a whole; replayed, it reaches the same bytes.
  EXPECT_NE(ReadAofFiles(master.dir()).find("RL.PUT"), std::string::npos);
  const std::string digest = master.Call({"DEBUG", "DIGEST"}).str;
  ASSERT_EQ(master.Call({"DEBUG", "LOADAOF"}).str, "OK");
  EXPECT_EQ(master.Call({"DEBUG", "DIGEST"}).str, digest);
  EXPECT_EQ(RlStat(master, "apply_mismatches"), 0);
}

std::string Resp(const Cmd& cmd) {
  std::string out = "*" + std::to_string(cmd.size()) + "\r\n";
  for (const std::string& a : cmd) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

// An AOF's RL.SETSTATE lines (earlier versions) still load. An AOF replayed on a clock past the
// end of a state keeps it for the calls after it, as the primary did: GCRA 2 per 20m (one every
// 10m) called 12 and 5 minutes ago ends 8 minutes from now (the second call queues behind the
// first), not 5 (as if the first had never been).
TEST(RlApplyTest, AofReplayKeepsWhatThePrimaryKept) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer server(MasterOptions());
  ASSERT_TRUE(server.Start());
  const int64_t now = TimeMs(server.Call({"TIME"}));
  ASSERT_TRUE(server.Stop());
  std::string incr;
  for (const auto& f : std::filesystem::directory_iterator(server.dir() + "/appendonlydir")) {
    if (f.path().string().find(".incr.aof") != std::string::npos) incr = f.path().string();
  }
  ASSERT_FALSE(incr.empty());
  const int64_t minute = 60 * 1000, t1 = now - 12 * minute, t2 = now - 5 * minute;
  // As earlier versions wrote every change: the whole state (3 requests 10 minutes ago).
  EncodedEntry old;
  old.algorithm = 2;
  old.window_ms = 60 * minute;
  old.log = true;
  old.runs = {{now - 10 * minute, 3}};
  old.expiry_ms = now + 50 * minute;
  std::ofstream(incr, std::ios::app)
      << Resp({"RL.SETSTATE", "old", EncodeState({old})})
      << Resp({"RL.APPLY", "g", std::to_string(t1), "CHECK", "", "GCRA 2 20m", "1", "1",
               std::to_string(t1 + 10 * minute)})
      << Resp({"RL.APPLY", "g", std::to_string(t2), "CHECK", "", "GCRA 2 20m", "1", "1",
               std::to_string(t1 + 20 * minute)});
  ASSERT_TRUE(server.Start());
  const std::vector<int64_t> d =
      DecisionOf(server.Call({"RL.PEEK", "g", "GCRA", "2", "20m", "COST", "0"}));
  ASSERT_EQ(d.size(), 5u);
  EXPECT_NEAR(static_cast<double>(d[4]), 8.0 * minute, 30000.0);
  EXPECT_EQ(RlStat(server, "apply_mismatches"), 0);
  const Reply o = server.Call({"RL.PEEK", "old", "SLIDING_LOG", "5", "1h", "COST", "0"});
  EXPECT_EQ(o.Ints().at(2), 2) << "an RL.SETSTATE line still loads";
}

TEST(RlApplyTest, ForgeriesAreRefusedAndMissesCounted) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer server(Options());
  ASSERT_TRUE(server.Start());
  const std::string now = std::to_string(TimeMs(server.Call({"TIME"})));
  const std::vector<Cmd> bad = {
      {"RL.APPLY", "k"},
      {"RL.APPLY", "k", now, "CHECK", "", "GCRA 5 1h", "1", "1"},
      {"RL.APPLY", "k", now, "NOPE", "", "GCRA 5 1h", "1", "1", "0"},
      {"RL.APPLY", "k", "-1", "CHECK", "", "GCRA 5 1h", "1", "1", "0"},
      {"RL.APPLY", "k", "281474976710656", "CHECK", "", "GCRA 5 1h", "1", "1", "0"},
      {"RL.APPLY", "k", now, "CHECK", "", "GCRA 5", "1", "1", "0"},
      {"RL.APPLY", "k", now, "CHECK", "", "GCRA 5 1h junk", "1", "1", "0"},
      {"RL.APPLY", "k", now, "CHECK", "", "GCRA 5 1h", "-1", "1", "0"},
      {"RL.APPLY", "k", now, "CHECK", "", "GCRA 5 1h", "x", "1", "0"},
      // Refused by the replayed call itself (and so no miss: nothing was there, nothing is).
      {"RL.APPLY", "k", now, "RELEASE", "0123", "0", "0"},
      {"RL.APPLY", "k", now, "ACQUIRE", "", "CONCURRENCY 2", "1", "", "0", "0"},  // would lease
  };
  for (const Cmd& cmd : bad) {
    const Reply r = server.Call(cmd);
    EXPECT_EQ(r.type, '-') << Show(r) << " for " << cmd.size() << " args, op " << cmd.back();
  }
  EXPECT_EQ(server.Call({"EXISTS", "k"}).integer, 0);
  EXPECT_EQ(RlStat(server, "apply_mismatches"), 0);

  // A replay that does not reach what the primary reported is applied, counted and logged. Its
  // time is a second back: rl.so's clock is its monotonic clock mapped onto Unix time and can
  // read a ms behind Redis's TIME, and a PEEK a ms before the replayed check would see the
  // 720 s emission interval not yet begun (3 left, not 4; seen on a loaded run).
  const std::string second_ago = std::to_string(TimeMs(server.Call({"TIME"})) - 1000);
  EXPECT_EQ(server.Call({"RL.APPLY", "k", second_ago, "CHECK", "", "GCRA 5 1h", "1", "7", "0"}).str,
            "OK");
  EXPECT_EQ(RlStat(server, "apply_mismatches"), 1);
  EXPECT_NE(server.ReadLog().find("RL.APPLY CHECK on key 'k'"), std::string::npos);
  EXPECT_EQ(server.Call({"RL.PEEK", "k", "GCRA", "5", "1h", "COST", "0"}).Ints().at(2), 4);

  // Well-formed forgeries with hostile numbers (times from 0 to 2^48 - 1 in any order, costs up
  // to 2^40, lease ids real and not) change states or are refused, never crash.
  const Reply lease = server.Call({"RL.ACQUIRE", "f", "CONCURRENCY", "3"});
  ASSERT_EQ(lease.elements.size(), 6u) << Show(lease);
  const std::vector<std::string> times = {"0",
                                          "1",
                                          now,
                                          std::to_string(TimeMs(server.Call({"TIME"})) - 3600000),
                                          "281474976710655",
                                          "100000000000000"};
  const std::vector<std::string> limits = {"GCRA 5 1h BURST 9",
                                           "SLIDING_LOG 1099511627776 3650d",
                                           "TOKEN_BUCKET 1 1ms",
                                           "FIXED_WINDOW 2 1h BLOCK 3650d",
                                           "SLIDING_WINDOW 3 1s LEAKY_BUCKET 2 1m",
                                           "CONCURRENCY 3",
                                           "CONCURRENCY 3 GCRA 1 1s"};
  const std::vector<std::string> costs = {"0", "1", "1099511627776", "9223372036854775807"};
  const std::vector<std::string> ids = {"", lease.elements[5].str, std::string(40, 'f')};
  const char* const ops[] = {"CHECK", "ACQUIRE", "REFUND", "CHARGE", "RESET", "RELEASE"};
  std::mt19937_64 rng(7);
  auto any = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  for (int i = 0; i < 3000; ++i) {
    const std::string op = ops[rng() % 6];
    Cmd cmd = {"RL.APPLY", "f", any(times), op};
    if (op == "RELEASE") {
      cmd.push_back(any(ids));
    } else {
      cmd.push_back(rng() % 2 ? "" : "pol");
      cmd.push_back(any(limits));
      if (op != "RESET") cmd.push_back(any(costs));
      if (op == "ACQUIRE") cmd.push_back(any(ids));
    }
    cmd.push_back("1");
    cmd.push_back(any(times));
    const Reply r = server.Call(cmd);
    ASSERT_TRUE(r.type == '+' || r.type == '-') << Show(r);
  }
  EXPECT_TRUE(server.running());
}

// A check of a one-limit key (bench/run's TOKEN_BUCKET) replicates RL.PUT: three arguments, the
// state in one (form 2: at most 44 bytes, one allocation with its Redis object), fewer bytes than
// the check as sent (form 1 took 32 B more, RL.APPLY ~90 B more), to the replication stream and
// the AOF alike; the replica and an AOF replay end with the master's bytes.
TEST(RlApplyTest, AOneLimitCheckReplicatesThreeArguments) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer master(MasterOptions());
  RedisServer replica(Options());
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());
  ASSERT_TRUE(StartReplication(master, replica));
  const std::string key(40, 'k');  // bench/run's key length
  const Cmd check = {"RL.CHECK", key, "TOKEN_BUCKET", "100", "1h"};
  ASSERT_EQ(master.Call(check).Ints().at(0), 1);  // the key exists: no DEL, no MULTI
  ASSERT_TRUE(WaitForReplicas(master, 1));
  constexpr int kChecks = 20;
  const long long offset = Offset(master);
  const size_t aof_bytes = ReadAofFiles(master.dir()).size();
  for (int i = 0; i < kChecks; ++i) ASSERT_EQ(master.Call(check).Ints().at(0), 1);
  const double stream = static_cast<double>(Offset(master) - offset) / kChecks;
  const std::string aof = ReadAofFiles(master.dir());
  const double aof_per = static_cast<double>(aof.size() - aof_bytes) / kChecks;
  std::printf("one TOKEN_BUCKET check: %.1f B to the stream, %.1f B to the AOF; the command %zu\n",
              stream, aof_per, RespSize(check));
  EXPECT_LE(stream, static_cast<double>(RespSize(check)));
  EXPECT_LE(aof_per, static_cast<double>(RespSize(check)));
  const std::string head = "*3\r\n$6\r\nRL.PUT\r\n$40\r\n" + key + "\r\n$";
  const size_t at = aof.find(head, aof_bytes);
  ASSERT_NE(at, std::string::npos);
  const size_t form_len = std::stoul(aof.substr(at + head.size(), 3));
  EXPECT_LE(form_len, 44u);
  EXPECT_EQ(aof[aof.find("\r\n", at + head.size()) + 2], '\x02') << "form 2";
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_EQ(replica.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str,
            master.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str);
  const long long m = master.Call({"PTTL", key}).integer;
  EXPECT_NEAR(static_cast<double>(m), static_cast<double>(replica.Call({"PTTL", key}).integer),
              1000.0);
  EXPECT_EQ(replica.Call({"MEMORY", "USAGE", key}).integer,
            master.Call({"MEMORY", "USAGE", key}).integer)
      << "the replica keeps the small form too";
  const std::string digest = master.Call({"DEBUG", "DIGEST"}).str;
  ASSERT_EQ(master.Call({"DEBUG", "LOADAOF"}).str, "OK");
  EXPECT_EQ(master.Call({"DEBUG", "DIGEST"}).str, digest);
}

// RL.PUT from a client: held to RESTORE's permission (rl_key_test), validated before anything is
// stored, its form version named when unknown.
TEST(RlApplyTest, PutFormsAreValidated) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer server(Options());
  ASSERT_TRUE(server.Start());
  const int64_t now = TimeMs(server.Call({"TIME"}));
  EncodedEntry e;
  e.algorithm = 0;
  e.window_ms = 3600 * 1000;
  e.words = {now, 1000};
  e.expiry_ms = now + 1800 * 1000;
  const std::string state = EncodeState({e});
  auto form = [&](uint8_t version, int64_t t, int64_t expiry, const std::string& body) {
    std::string f(1, static_cast<char>(version));
    for (int64_t v : {t, expiry}) {
      for (int i = 0; i < 8; ++i)
        f.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
    }
    return f + std::string(2, '\0') + body;  // no small form's numbers
  };
  // A small form's number beyond int64 (a ten-byte varint of 2^63) in place of the capacity.
  std::string big = form(1, now, e.expiry_ms, state);
  big.replace(17, 1, std::string(9, '\x80') + '\x01');
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty"},
      {big, "short"},
      {form(3, now, e.expiry_ms, state), "RL.PUT form 3 is unknown"},
      {form(1, now, e.expiry_ms, state).substr(0, 12), "short"},
      {form(1, -1, e.expiry_ms, state), "invalid time"},
      {form(1, int64_t{1} << 48, e.expiry_ms, state), "invalid time"},
      {form(1, now, e.expiry_ms, state.substr(0, state.size() - 1)), "invalid rate-limit state"},
      {form(1, now, e.expiry_ms + 1, state), "expiry is not the one sent"},
      {form(1, now, 0, EncodeState({})), "expiry is not the one sent"},
  };
  for (const auto& [f, why] : bad) {
    const Reply r = server.Call({"RL.PUT", "k", f});
    EXPECT_EQ(r.type, '-') << why;
    EXPECT_NE(r.str.find(why), std::string::npos) << Show(r);
  }
  EXPECT_EQ(server.Call({"RL.PUT", "k"}).type, '-');
  EXPECT_EQ(server.Call({"EXISTS", "k"}).integer, 0);
  ASSERT_EQ(server.Call({"RL.PUT", "k", form(1, now, e.expiry_ms, state)}).str, "OK");
  const Reply peek = server.Call({"RL.PEEK", "k", "TOKEN_BUCKET", "5", "1h", "COST", "0"});
  EXPECT_EQ(DecisionOf(peek).at(0), 1) << Show(peek);
  EXPECT_GT(server.Call({"PTTL", "k"}).integer, 1700 * 1000);
  // Hostile bytes after a valid header are refused, never a crash.
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::string f = form(1, now, e.expiry_ms, state);
    for (int j = 0; j < 3; ++j) f[19 + rng() % (f.size() - 19)] = static_cast<char>(rng());
    const Reply r = server.Call({"RL.PUT", "h", f});
    ASSERT_TRUE(r.type == '+' || r.type == '-') << Show(r);
  }
  EXPECT_TRUE(server.running());
}

// Form 2 (module/put.h: one two-word state as varints, times from now-ms): a well-formed one
// stores the state it carries; a truncated, overlong or inconsistent one is refused before
// anything is stored, and hostile bytes never crash.
TEST(RlApplyTest, PutForm2IsValidated) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer server(Options());
  ASSERT_TRUE(server.Start());
  const int64_t now = TimeMs(server.Call({"TIME"}));
  const auto varint = [](std::string* out, uint64_t v) {
    for (; v >= 0x80; v >>= 7) out->push_back(static_cast<char>(v | 0x80));
    out->push_back(static_cast<char>(v));
  };
  const auto zz = [](int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  };
  // A GCRA 5 per hour (inline limits) one call in: its time a 12-minute emission interval ahead.
  struct F {
    uint64_t now, capacity = 0, rate = 0, scope = 0;
    uint8_t algorithm = 1;  // GCRA
    uint64_t window = 3600 * 1000;
    int64_t expiry_off = 720 * 1000, time_off = 720 * 1000, word = 0;
  };
  const auto form2 = [&](const F& f) {
    std::string s(1, '\x02');
    varint(&s, f.now);
    varint(&s, zz(f.expiry_off));
    varint(&s, f.capacity);
    varint(&s, f.rate);
    varint(&s, f.scope);
    s.push_back(static_cast<char>(f.algorithm));
    varint(&s, f.window);
    varint(&s, zz(f.time_off));
    varint(&s, zz(f.word));
    return s;
  };
  F good;
  good.now = static_cast<uint64_t>(now);
  const std::string ok = form2(good);
  std::vector<std::pair<std::string, std::string>> bad;
  for (size_t n = 1; n < ok.size(); ++n) bad.emplace_back(ok.substr(0, n), "short");
  bad.emplace_back(ok + "x", "trailing bytes");
  bad.emplace_back(ok.substr(0, 1) + std::string(10, '\xff') + ok.substr(7), "");
  F f = good;
  f.now = uint64_t{1} << 48;
  bad.emplace_back(form2(f), "invalid time");
  f = good;
  f.window = 0;
  bad.emplace_back(form2(f), "bad numbers");
  f = good;
  f.window = uint64_t{1} << 40;
  bad.emplace_back(form2(f), "bad numbers");
  f = good;
  f.algorithm = 2;  // SLIDING_LOG: no two words
  bad.emplace_back(form2(f), "not a two-word state");
  f = good;
  f.algorithm = 200;
  bad.emplace_back(form2(f), "unknown algorithm");
  f = good;
  f.capacity = uint64_t{1} << 63;
  bad.emplace_back(form2(f), "bad numbers");
  for (const auto& [form, why] : bad) {
    const Reply r = server.Call({"RL.PUT", "k2", form});
    EXPECT_EQ(r.type, '-') << why << " " << Show(r);
    EXPECT_NE(r.str.find(why), std::string::npos) << Show(r);
  }
  EXPECT_EQ(server.Call({"EXISTS", "k2"}).integer, 0);
  ASSERT_EQ(server.Call({"RL.PUT", "k2", ok}).str, "OK");
  const Reply peek = server.Call({"RL.PEEK", "k2", "GCRA", "5", "1h", "COST", "0"});
  const std::vector<int64_t> d = DecisionOf(peek);
  ASSERT_GE(d.size(), 3u) << Show(peek);
  EXPECT_EQ(d.at(0), 1) << Show(peek);
  EXPECT_EQ(d.at(2), 4) << "one of five spent: " << Show(peek);
  EXPECT_GT(server.Call({"PTTL", "k2"}).integer, 700 * 1000);
  // A key it holds takes the state sent in place, with that state's expiry (shorter ones too).
  F next = good;
  next.expiry_off = next.time_off = 2 * 720 * 1000;  // two of five spent
  ASSERT_EQ(server.Call({"RL.PUT", "k2", form2(next)}).str, "OK");
  const Reply peek2 = server.Call({"RL.PEEK", "k2", "GCRA", "5", "1h", "COST", "0"});
  EXPECT_EQ(DecisionOf(peek2).at(2), 3) << Show(peek2);
  EXPECT_GT(server.Call({"PTTL", "k2"}).integer, 1400 * 1000);
  ASSERT_EQ(server.Call({"RL.PUT", "k2", ok}).str, "OK");
  EXPECT_LE(server.Call({"PTTL", "k2"}).integer, 720 * 1000);
  // A key of another type is refused and left as it was.
  ASSERT_EQ(server.Call({"SET", "s2", "x"}).str, "OK");
  EXPECT_NE(server.Call({"RL.PUT", "s2", ok}).str.find("WRONGTYPE"), std::string::npos);
  EXPECT_EQ(server.Call({"GET", "s2"}).str, "x");
  // Written by a clock a day ahead (an AOF from there, replayed here): the times move back by the
  // day, as any load's, so the key waits no longer than its own limit.
  F ahead = good;
  ahead.now = static_cast<uint64_t>(now + int64_t{24} * 3600 * 1000);
  ASSERT_EQ(server.Call({"RL.PUT", "k3", form2(ahead)}).str, "OK");
  EXPECT_LE(server.Call({"PTTL", "k3"}).integer, 720 * 1000);
  EXPECT_GT(server.Call({"PTTL", "k3"}).integer, 700 * 1000);
  std::mt19937_64 rng(12);
  for (int i = 0; i < 2000; ++i) {
    std::string h = ok;
    for (int j = 0; j < 3; ++j) h[1 + rng() % (h.size() - 1)] = static_cast<char>(rng());
    if (rng() % 4 == 0) h.resize(1 + rng() % (h.size() - 1));
    const Reply r = server.Call({"RL.PUT", "h2", h});
    ASSERT_TRUE(r.type == '+' || r.type == '-') << Show(r);
  }
  EXPECT_TRUE(server.running());
}

}  // namespace
}  // namespace rl::test

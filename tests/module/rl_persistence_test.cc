// rl.so's state across persistence in a real redis-server: restart from the AOF (appendfsync
// always, kill -9) and from an RDB file keep every count (a key at its limit stays denied: no
// fresh burst) and the runtime policies; BGREWRITEAOF with and without the RDB preamble;
// DUMP/RESTORE and MIGRATE carry the state; tampered RESTORE payloads (with a valid checksum, so
// they reach rdb_load) are refused and the server lives.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "probe_util.h"
#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

using Cmd = std::vector<std::string>;
using std::chrono::seconds;

const char* const kAlgorithms[] = {"TOKEN_BUCKET",   "GCRA",         "SLIDING_LOG",
                                   "SLIDING_WINDOW", "FIXED_WINDOW", "LEAKY_BUCKET"};

// Drives one key per algorithm to its limit (5 per hour: 5 allowed, the 6th denied), a runtime
// policy's key likewise, a file policy's key part way, and a CL.THROTTLE key to its limit.
void Populate(RedisServer& server) {
  for (const std::string alg : kAlgorithms) {
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(server.Call({"RL.CHECK", "p:" + alg, alg, "5", "1h"}).Ints()[0], i < 5 ? 1 : 0)
          << alg << " " << i;
    }
  }
  EXPECT_EQ(
      server.Call({"RL.POLICY", "SET", "rt", "SLIDING_LOG", "2", "1h", "FIXED_WINDOW", "10", "1d"})
          .str,
      "OK");
  for (int i = 0; i < 3; ++i) server.Call({"RL.CHECK", "p:rt", "POLICY", "rt"});
  server.Call({"RL.CHECK", "p:file", "POLICY", "filepol", "COST", "3"});
  for (int i = 0; i < 4; ++i) server.Call({"CL.THROTTLE", "p:cell", "2", "1", "3600"});
}

// What a check of each populated key would answer, and that it would be denied.
std::vector<Cmd> Peeks() {
  std::vector<Cmd> peeks;
  for (const std::string alg : kAlgorithms)
    peeks.push_back({"RL.PEEK", "p:" + alg, alg, "5", "1h"});
  peeks.push_back({"RL.PEEK", "p:rt", "POLICY", "rt"});
  peeks.push_back({"RL.PEEK", "p:file", "POLICY", "filepol"});
  return peeks;
}

struct Snapshot {
  std::vector<Reply> peeks;
  std::string digest;
  long long keys = 0;
};

Snapshot Take(RedisServer& server) {
  Snapshot s;
  for (const Cmd& peek : Peeks()) s.peeks.push_back(server.Call(peek));
  s.digest = server.Call({"DEBUG", "DIGEST"}).str;
  s.keys = server.Call({"DBSIZE"}).integer;
  return s;
}

// The same answers (times within a second: the restart takes a moment) and the same data.
void ExpectSame(const Snapshot& before, RedisServer& server, const std::string& when) {
  const Snapshot now = Take(server);
  for (size_t i = 0; i < before.peeks.size(); ++i) {
    const std::vector<int64_t> a = DecisionOf(before.peeks[i]), b = DecisionOf(now.peeks[i]);
    ASSERT_EQ(a.size(), 5u) << when << " " << Show(before.peeks[i]);
    ASSERT_EQ(b.size(), 5u) << when << " " << Show(now.peeks[i]);
    EXPECT_EQ(a[0], b[0]) << when << " " << Peeks()[i][1];
    EXPECT_EQ(a[2], b[2]) << when << " " << Peeks()[i][1];
    EXPECT_NEAR(static_cast<double>(a[3]), static_cast<double>(b[3]), 2000.0) << when;
    EXPECT_NEAR(static_cast<double>(a[4]), static_cast<double>(b[4]), 2000.0) << when;
  }
  EXPECT_EQ(now.digest, before.digest) << when;
  EXPECT_EQ(now.keys, before.keys) << when;
  // No fresh burst: every key at its limit is still denied.
  for (const std::string alg : kAlgorithms) {
    EXPECT_EQ(server.Call({"RL.CHECK", "p:" + alg, alg, "5", "1h"}).Ints()[0], 0)
        << when << " " << alg;
  }
  EXPECT_EQ(server.Call({"RL.CHECK", "p:rt", "POLICY", "rt"}).Ints()[0], 0) << when;
  EXPECT_EQ(server.Call({"CL.THROTTLE", "p:cell", "2", "1", "3600"}).Ints()[0], 1) << when;
  EXPECT_EQ(server.Call({"RL.POLICY", "GET", "rt"}).str, "SLIDING_LOG 2 1h FIXED_WINDOW 10 1d")
      << when;
  EXPECT_EQ(server.Call({"RL.POLICY", "GET", "filepol"}).str, "GCRA 10 1h") << when;
  EXPECT_EQ(RlStat(server, "rejected_loads"), 0) << when;
}

// Equal decisions, times within a second (the calls are moments apart).
::testing::AssertionResult SameDecision(const Reply& a, const Reply& b) {
  const std::vector<int64_t> x = DecisionOf(a), y = DecisionOf(b);
  if (x.empty() || y.empty() || x[0] != y[0] || x[1] != y[1] || x[2] != y[2] ||
      std::llabs(x[3] - y[3]) > 1000 || std::llabs(x[4] - y[4]) > 1000) {
    return ::testing::AssertionFailure() << Show(a) << " vs " << Show(b);
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult Rewrite(RedisServer& server) {
  const std::string old_base = AofBaseName(server.dir());
  Reply reply = server.Call({"BGREWRITEAOF"});
  if (reply.type != '+') return ::testing::AssertionFailure() << "BGREWRITEAOF: " << Show(reply);
  const bool done = WaitUntil(
      [&] {
        return AofBaseName(server.dir()) != old_base &&
               server.InfoField("persistence", "aof_rewrite_in_progress") == "0" &&
               server.InfoField("persistence", "aof_rewrite_scheduled") == "0";
      },
      seconds(30));
  if (!done || server.InfoField("persistence", "aof_last_bgrewrite_status") != "ok") {
    return ::testing::AssertionFailure() << "rewrite did not finish\n" << server.LogTail();
  }
  return ::testing::AssertionSuccess();
}

class RlPersistenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  }
  TempFile policies_{"[policies]\nfilepol = \"GCRA 10 1h\"\n"};
  RedisOptions Options() { return RlOptions("POLICIES " + policies_.path()); }
};

TEST_F(RlPersistenceTest, AofAlwaysKeepsCountsAcrossKillNineAndRewrite) {
  RedisServer server(Options().With("appendonly yes").With("appendfsync always"));
  ASSERT_TRUE(server.Start());
  Populate(server);
  const Snapshot before = Take(server);

  // The AOF holds the calls with the node's time (RL.APPLY), never a check as sent (replayed
  // later it would decide on another clock), and the policy set as published (RL.POLICYSET).
  const std::string aof = ReadAofFiles(server.dir());
  EXPECT_NE(aof.find("RL.APPLY"), std::string::npos);
  EXPECT_EQ(aof.find("RL.CHECK"), std::string::npos);
  EXPECT_EQ(aof.find("CL.THROTTLE"), std::string::npos);
  EXPECT_NE(aof.find("rl.policyset"), std::string::npos);
  EXPECT_NE(aof.find("2:rt35:SLIDING_LOG 2 1h FIXED_WINDOW 10 1d"), std::string::npos);

  server.Kill9();
  ASSERT_TRUE(server.Start());
  ExpectSame(before, server, "after kill -9 (AOF replay)");

  ASSERT_TRUE(Rewrite(server));  // default aof-use-rdb-preamble yes: the base is an RDB
  EXPECT_EQ(ReadAofBase(server.dir()).rfind("REDIS", 0), 0u);
  const Snapshot rewritten = Take(server);
  server.Kill9();
  ASSERT_TRUE(server.Start());
  ExpectSame(rewritten, server, "after rewrite and kill -9");
}

// The AOF switched on at runtime on a master with nothing downstream (so no effects were being
// built): from then on the AOF receives every effect, read from the context flags per call.
TEST_F(RlPersistenceTest, AofSwitchedOnAtRuntimeGetsEveryEffect) {
  RedisServer server(Options());
  ASSERT_TRUE(server.Start());
  ASSERT_TRUE(WaitUntil([&] { return RlStat(server, "downstream") == 0; }, seconds(10)));
  server.Call({"RL.CHECK", "before", "TOKEN_BUCKET", "5", "1h"});
  // (always: written before the reply, so the file read below has every effect)
  ASSERT_EQ(server.Call({"CONFIG", "SET", "appendfsync", "always"}).str, "OK");
  ASSERT_EQ(server.Call({"CONFIG", "SET", "appendonly", "yes"}).str, "OK");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return server.InfoField("persistence", "aof_enabled") == "1" &&
               server.InfoField("persistence", "aof_rewrite_in_progress") == "0" &&
               server.InfoField("persistence", "aof_rewrite_scheduled") == "0";
      },
      seconds(30)));
  // The rewrite's fork counted as "maybe downstream" until the next cron tick.
  ASSERT_TRUE(WaitUntil([&] { return RlStat(server, "downstream") == 0; }, seconds(10)));
  EXPECT_EQ(server.Call({"RL.CHECK", "after", "GCRA", "5", "1h"}).Ints()[0], 1);
  EXPECT_EQ(server.Call({"RL.RESET", "before", "TOKEN_BUCKET", "5", "1h"}).integer, 1);
  const std::string aof = ReadAofFiles(server.dir());
  EXPECT_NE(aof.find("RL.PUT\r\n$5\r\nafter"), std::string::npos);  // a one-limit state (put.h)
  EXPECT_NE(aof.find("DEL\r\n$6\r\nbefore"), std::string::npos);
  EXPECT_EQ(aof.find("RL.CHECK"), std::string::npos);
  EXPECT_EQ(aof.find("RL.RESET"), std::string::npos);
}

// Plain checks, a transaction, a script and a reset (DEL) over keys k:0..k:kKeys-1, `n` moving
// from call to call.
constexpr int kKeys = 400;
void Mix(RedisServer& server, int n) {
  const std::string a = "k:" + std::to_string(n % kKeys),
                    b = "k:" + std::to_string((n * 7) % kKeys);
  server.Call({"RL.CHECK", a, "SLIDING_WINDOW", "50", "1h"});
  auto tx = server.Connect();
  ASSERT_EQ(tx->Call({"MULTI"}).str, "OK");
  tx->Call({"RL.CHECK", a, "GCRA", "50", "1h"});
  tx->Call({"RL.CHECK", b, "SLIDING_LOG", "50", "1h"});
  ASSERT_EQ(tx->Call({"EXEC"}).elements.size(), 2u);
  const Reply script =
      server.Call({"EVAL",
                   "redis.call('RL.CHECK', KEYS[1], 'LEAKY_BUCKET', '50', '1h'); "
                   "return redis.call('RL.CHECK', KEYS[2], 'FIXED_WINDOW', '50', '1h')",
                   "2", b, a});
  ASSERT_EQ(script.type, '*') << Show(script);
  if (n % 5 == 0) server.Call({"RL.RESET", b});
}

// The AOF switched on at runtime on a master with nothing downstream (the cron hook cleared
// rl_downstream again right after the rewrite's fork): the writes made while the rewrite runs
// (each key's save is delayed, so it lasts a while), in MULTI/EXEC and in scripts too, and those
// after it, all reach the AOF: reloading it gives the same data.
TEST_F(RlPersistenceTest, AofSwitchedOnAtRuntimeKeepsWritesDuringTheRewrite) {
  RedisServer server(Options().With("rdb-key-save-delay 2000"));  // 2 ms per key in the rewrite
  ASSERT_TRUE(server.Start());
  for (int i = 0; i < kKeys; ++i) {
    server.Call({"RL.CHECK", "k:" + std::to_string(i), "TOKEN_BUCKET", "50", "1h"});
  }
  ASSERT_TRUE(WaitUntil([&] { return RlStat(server, "downstream") == 0; }, seconds(10)));
  ASSERT_EQ(server.Call({"CONFIG", "SET", "appendfsync", "always"}).str, "OK");
  ASSERT_EQ(server.Call({"CONFIG", "SET", "appendonly", "yes"}).str, "OK");
  int n = 0, during = 0, during_without_downstream = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        const bool rewriting = server.InfoField("persistence", "aof_rewrite_in_progress") == "1";
        if (rewriting) {
          ++during;
          if (RlStat(server, "downstream") == 0) ++during_without_downstream;
        }
        Mix(server, n++);
        return !rewriting && server.InfoField("persistence", "aof_enabled") == "1" &&
               server.InfoField("persistence", "aof_rewrite_scheduled") == "0";
      },
      seconds(60), std::chrono::milliseconds(10)));
  EXPECT_GT(during, 0) << "no write while the rewrite ran";
  EXPECT_GT(during_without_downstream, 0) << "the cron hook never cleared rl_downstream";
  ASSERT_TRUE(WaitUntil([&] { return RlStat(server, "downstream") == 0; }, seconds(10)));
  for (int i = 0; i < 20; ++i) Mix(server, n++);

  const std::string digest = server.Call({"DEBUG", "DIGEST"}).str;
  const long long keys = server.Call({"DBSIZE"}).integer;
  const std::string aof = ReadAofFiles(server.dir());
  EXPECT_EQ(aof.find("RL.CHECK"), std::string::npos);
  ASSERT_EQ(server.Call({"DEBUG", "LOADAOF"}).str, "OK");  // empties the data, reads the AOF
  EXPECT_EQ(server.Call({"DEBUG", "DIGEST"}).str, digest);
  EXPECT_EQ(server.Call({"DBSIZE"}).integer, keys);
}

// aof-use-rdb-preamble no: the rewritten base is commands (RL.SETSTATE per key, from the type's
// aof_rewrite). States survive; runtime policies do not (Redis 7.0 gives modules no way to put
// anything but keys into such a base; README documents it). A POLICIES file always works.
TEST_F(RlPersistenceTest, AofRewriteWithoutPreambleKeepsStates) {
  RedisServer server(
      Options().With("appendonly yes").With("appendfsync always").With("aof-use-rdb-preamble no"));
  ASSERT_TRUE(server.Start());
  Populate(server);
  ASSERT_TRUE(Rewrite(server));
  const std::string base = ReadAofBase(server.dir());
  EXPECT_NE(base.find("RL.SETSTATE"), std::string::npos);
  EXPECT_NE(base.find("PEXPIREAT"), std::string::npos);
  EXPECT_EQ(base.find("RL.POLICY"), std::string::npos);
  const Snapshot before = Take(server);
  server.Kill9();
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(server.Call({"DEBUG", "DIGEST"}).str, before.digest);
  for (const std::string alg : kAlgorithms) {
    EXPECT_EQ(server.Call({"RL.CHECK", "p:" + alg, alg, "5", "1h"}).Ints()[0], 0) << alg;
  }
  EXPECT_EQ(server.Call({"RL.POLICY", "GET", "filepol"}).str, "GCRA 10 1h");
  EXPECT_TRUE(server.Call({"RL.POLICY", "GET", "rt"}).is_null()) << "documented limitation";
  // The policy's state is still there: defined again, it continues.
  ASSERT_EQ(
      server.Call({"RL.POLICY", "SET", "rt", "SLIDING_LOG", "2", "1h", "FIXED_WINDOW", "10", "1d"})
          .str,
      "OK");
  EXPECT_EQ(server.Call({"RL.CHECK", "p:rt", "POLICY", "rt"}).Ints()[0], 0);
}

TEST_F(RlPersistenceTest, RdbKeepsCountsExpiriesAndPolicies) {
  RedisServer server(Options());
  ASSERT_TRUE(server.Start());
  Populate(server);
  const Snapshot before = Take(server);
  const long long expire_at = server.Call({"PEXPIRETIME", "p:GCRA"}).integer;
  ASSERT_GT(expire_at, 0);

  ASSERT_EQ(server.Call({"DEBUG", "RELOAD"}).str, "OK");
  ExpectSame(before, server, "after DEBUG RELOAD");

  const Snapshot saved = Take(server);
  ASSERT_TRUE(server.Restart(RedisServer::Shutdown::kSave));
  ExpectSame(saved, server, "after SHUTDOWN SAVE and restart");
  EXPECT_EQ(server.Call({"PEXPIRETIME", "p:GCRA"}).integer, expire_at);

  // SAVE then kill -9: the file alone carries everything.
  ASSERT_EQ(server.Call({"RL.POLICY", "SET", "later", "GCRA", "1", "1m"}).str, "OK");
  const Snapshot last = Take(server);
  ASSERT_EQ(server.Call({"SAVE"}).str, "OK");
  server.Kill9();
  ASSERT_TRUE(server.Start());
  ExpectSame(last, server, "after SAVE and kill -9");
  EXPECT_EQ(server.Call({"RL.POLICY", "GET", "later"}).str, "GCRA 1 1m");
}

TEST_F(RlPersistenceTest, DumpRestoreAndMigrateCarryTheState) {
  RedisServer server(Options());
  RedisServer other(Options());
  ASSERT_TRUE(server.Start());
  ASSERT_TRUE(other.Start());
  Populate(server);
  const Cmd peek = {"RL.PEEK", "p:SLIDING_LOG", "SLIDING_LOG", "5", "1h"};
  const Reply original = server.Call(peek);
  const std::string digest =
      server.Call({"DEBUG", "DIGEST-VALUE", "p:SLIDING_LOG"}).elements[0].str;

  const std::string payload = server.Call({"DUMP", "p:SLIDING_LOG"}).str;
  const std::string pttl = std::to_string(server.Call({"PTTL", "p:SLIDING_LOG"}).integer);
  ASSERT_EQ(server.Call({"RESTORE", "copy", pttl, payload}).str, "OK");
  EXPECT_TRUE(SameDecision(server.Call({"RL.PEEK", "copy", "SLIDING_LOG", "5", "1h"}), original));
  EXPECT_EQ(server.Call({"DEBUG", "DIGEST-VALUE", "copy"}).elements[0].str, digest);
  EXPECT_GT(server.Call({"PTTL", "copy"}).integer, 3500 * 1000);
  EXPECT_EQ(server.Call({"RL.CHECK", "copy", "SLIDING_LOG", "5", "1h"}).Ints()[0], 0);

  // MIGRATE (what resharding uses) to another server, which serves the same answers.
  Reply migrated = server.Call(
      {"MIGRATE", "127.0.0.1", std::to_string(other.port()), "p:SLIDING_LOG", "0", "5000"});
  ASSERT_EQ(migrated.str, "OK") << Show(migrated);
  EXPECT_EQ(server.Call({"EXISTS", "p:SLIDING_LOG"}).integer, 0);
  EXPECT_TRUE(SameDecision(other.Call(peek), original));
  EXPECT_EQ(other.Call({"DEBUG", "DIGEST-VALUE", "p:SLIDING_LOG"}).elements[0].str, digest);
  EXPECT_GT(other.Call({"PTTL", "p:SLIDING_LOG"}).integer, 3500 * 1000);
  EXPECT_EQ(other.Call({"RL.CHECK", "p:SLIDING_LOG", "SLIDING_LOG", "5", "1h"}).Ints()[0], 0);
  Reply keys = server.Call({"MIGRATE", "127.0.0.1", std::to_string(other.port()), "", "0", "5000",
                            "COPY", "KEYS", "p:GCRA", "p:rt"});
  ASSERT_EQ(keys.str, "OK") << Show(keys);
  EXPECT_EQ(other.Call({"RL.CHECK", "p:GCRA", "GCRA", "5", "1h"}).Ints()[0], 0);
  EXPECT_EQ(other.Call({"DEBUG", "DIGEST-VALUE", "p:rt"}).elements[0].str,
            server.Call({"DEBUG", "DIGEST-VALUE", "p:rt"}).elements[0].str);
}

TEST_F(RlPersistenceTest, TamperedRestorePayloadsAreRefused) {
  // Uncompressed, so the test can find the fields (Redis LZF-compresses strings over 20 bytes).
  RedisServer server(Options().With("rdbcompression no"));
  ASSERT_TRUE(server.Start());
  ASSERT_EQ(server.Call({"RL.CHECK", "k", "GCRA", "5", "1h"}).Ints()[0], 1);
  const std::string payload = server.Call({"DUMP", "k"}).str;
  // Envelope: type 7 (module, v2), 0x81 + the 8-byte module id (name and encoding version),
  // opcode 5 (string) + length + rl::KeyState's encoding (version 1, count 1, scope 8, algorithm
  // 1, window 8, expiry 8, two words 16: 44 bytes), opcode 2 (unsigned) + 0x81 + 8 bytes (the
  // writer's time), EOF, RDB version (2), CRC-64 (8).
  ASSERT_EQ(payload.size(), 1u + 9 + 2 + 44 + 10 + 1 + 2 + 8) << Show(server.Call({"DUMP", "k"}));
  ASSERT_EQ(payload[0], 7);
  ASSERT_EQ(static_cast<unsigned char>(payload[1]), 0x81);
  ASSERT_EQ(payload[10], 5);
  ASSERT_EQ(payload[11], 44);
  ASSERT_EQ(payload[12], 1);
  ASSERT_EQ(payload[12 + 3 + 8], 1) << "GCRA";
  EXPECT_EQ(WithDumpChecksum(payload), payload);

  struct Tamper {
    const char* what;
    size_t offset;
    char value;
    const char* log;  // in the server log
  } tampers[] = {
      {"type encoding version", 9, static_cast<char>(payload[9] ^ 1),
       "rl: ratelimit value of unknown encoding version 3"},
      {"state encoding version", 12, 4, "unsupported encoding version 4"},
      {"state count", 14, static_cast<char>(0xff), "too many states"},  // high byte
      {"algorithm", 12 + 3 + 8, 9, "unknown algorithm"},
      {"window", 12 + 3 + 9 + 7, static_cast<char>(0x7f), "bad window"},
      {"short string", 11, 20, "truncated entry"},
      // 63 (the longest one-byte length) takes in the writer's time after it, and then some.
      {"long string", 11, 63, "trailing bytes"},
  };
  long long rejected = 0;
  for (const Tamper& tamper : tampers) {
    std::string bad = payload;
    bad[tamper.offset] = tamper.value;
    Reply reply =
        server.Call({"RESTORE", std::string("bad:") + tamper.what, "0", WithDumpChecksum(bad)});
    EXPECT_EQ(reply.str, "ERR Bad data format") << tamper.what;
    EXPECT_EQ(RlStat(server, "rejected_loads"), ++rejected) << tamper.what;
    EXPECT_NE(server.ReadLog().find(tamper.log), std::string::npos) << tamper.what;
    ASSERT_EQ(server.Call({"PING"}).str, "PONG") << tamper.what;
  }
  // Without a fixed checksum Redis refuses it before rl.so sees it.
  std::string bad = payload;
  bad[12] = 2;
  EXPECT_EQ(server.Call({"RESTORE", "bad:crc", "0", bad}).str,
            "ERR DUMP payload version or checksum are wrong");
  EXPECT_EQ(server.Call({"DBSIZE"}).integer, 1);

  // Random damage with a valid checksum: refused, or a state every command can work with.
  std::mt19937_64 rng(5);
  int accepted = 0;
  for (int i = 0; i < 300; ++i) {
    std::string forged = payload;
    for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
      forged[10 + rng() % 47] = static_cast<char>(rng());
    }
    const std::string key = "fuzz:" + std::to_string(i);
    Reply reply = server.Call({"RESTORE", key, "60000", WithDumpChecksum(forged)});
    ASSERT_NE(reply.type, 'X') << i << "\n" << server.LogTail();
    if (reply.type != '+') continue;
    ++accepted;
    for (const Cmd& cmd : std::vector<Cmd>{{"RL.CHECK", key, "GCRA", "5", "1h"},
                                           {"RL.PEEK", key, "GCRA", "5", "1h", "HEADERS"},
                                           {"RL.RESET", key, "GCRA", "5", "1h"},
                                           {"DUMP", key}}) {
      ASSERT_NE(server.Call(cmd).type, 'X') << i << " " << cmd[0] << "\n" << server.LogTail();
    }
  }
  std::printf("random damage: %d of 300 payloads accepted\n", accepted);
  EXPECT_TRUE(server.running());
  EXPECT_EQ(server.Call({"RL.PEEK", "k", "GCRA", "5", "1h"}).Ints()[2], 3);
}

}  // namespace
}  // namespace rl::test

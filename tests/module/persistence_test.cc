// The probe's native type across persistence in a real redis-server: RDB (SAVE, DEBUG RELOAD,
// restart), AOF with appendfsync always with and without the RDB preamble (replay after kill -9,
// BGREWRITEAOF through rdb_save or aof_rewrite/EmitAOF), the module-global aux value, and
// DUMP/RESTORE including tampered payloads that reach rdb_load and must be refused, not crash.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "probe_util.h"
#include "redis_harness.h"

namespace rl::test {
namespace {

using std::chrono::seconds;

struct Snapshot {
  std::string value;
  long long created = 0;
  long long expire_at = 0;
  std::string digest;
};

Snapshot Read(RedisServer& server, const std::string& key) {
  Snapshot s;
  s.value = server.Call({"PROBE.GET", key}).str;
  Reply meta = server.Call({"PROBE.META", key});
  if (meta.elements.size() == 4) {
    s.created = meta.elements[0].integer;
    s.expire_at = meta.elements[2].integer;
  }
  s.digest = server.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str;
  return s;
}

void ExpectSame(const Snapshot& a, const Snapshot& b, const std::string& key) {
  EXPECT_EQ(a.value, b.value) << key;
  EXPECT_EQ(a.created, b.created) << key;
  EXPECT_EQ(a.expire_at, b.expire_at) << key;
  EXPECT_EQ(a.digest, b.digest) << key;
}

// Writes the same three keys and the aux value on every server; returns their snapshots.
std::vector<Snapshot> Populate(RedisServer& server) {
  EXPECT_EQ(server.Call({"PROBE.SET", "a", "alpha", "PX", "600000"}).str, "OK");
  EXPECT_EQ(server.Call({"PROBE.SET", "b", "bravo", "CREATED", "777"}).str, "OK");
  EXPECT_EQ(server.Call({"PROBE.SET", "c", std::string(300, 'c')}).str, "OK");
  EXPECT_EQ(server.Call({"PROBE.CONF", "SET", "global-1"}).str, "OK");
  return {Read(server, "a"), Read(server, "b"), Read(server, "c")};
}

void ExpectKeys(RedisServer& server, const std::vector<Snapshot>& before) {
  const char* keys[] = {"a", "b", "c"};
  for (size_t i = 0; i < before.size(); ++i) ExpectSame(before[i], Read(server, keys[i]), keys[i]);
}

class PersistenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  }
};

TEST_F(PersistenceTest, RdbKeepsValuesTtlsAndTheAuxValue) {
  RedisServer server(ProbeOptions());
  ASSERT_TRUE(server.Start());
  const std::vector<Snapshot> before = Populate(server);

  // DEBUG RELOAD: save and load in the same process, so the save-side counters are visible.
  ASSERT_EQ(server.Call({"DEBUG", "RELOAD"}).str, "OK");
  EXPECT_EQ(ProbeStat(server, "rdb_save"), 3);
  EXPECT_EQ(ProbeStat(server, "rdb_load"), 3);
  EXPECT_EQ(ProbeStat(server, "aux_save"), 1);  // BEFORE_RDB only
  EXPECT_EQ(ProbeStat(server, "aux_load"), 1);
  ExpectKeys(server, before);

  // A restart from the file written by SHUTDOWN SAVE.
  ASSERT_TRUE(server.Restart(RedisServer::Shutdown::kSave));
  EXPECT_EQ(ProbeStat(server, "rdb_load"), 3);
  EXPECT_EQ(ProbeStat(server, "aux_load"), 1);
  ExpectKeys(server, before);
  EXPECT_EQ(server.Call({"PROBE.CONF", "GET"}).str, "global-1");

  // SAVE then kill -9: the file alone carries everything.
  ASSERT_EQ(server.Call({"PROBE.CONF", "SET", "global-2"}).str, "OK");
  ASSERT_EQ(server.Call({"SAVE"}).str, "OK");
  server.Kill9();
  ASSERT_TRUE(server.Start());
  ExpectKeys(server, before);
  EXPECT_EQ(server.Call({"PROBE.CONF", "GET"}).str, "global-2");
  EXPECT_EQ(ProbeStat(server, "load_refused"), 0);
}

// aof-use-rdb-preamble yes and no.
class AofTest : public PersistenceTest, public ::testing::WithParamInterface<bool> {};

TEST_P(AofTest, ReplaysEffectsAndSurvivesRewrite) {
  const bool preamble = GetParam();
  RedisServer server(ProbeOptions()
                         .With("appendonly yes")
                         .With("appendfsync always")
                         .With(std::string("aof-use-rdb-preamble ") + (preamble ? "yes" : "no")));
  ASSERT_TRUE(server.Start());
  std::vector<Snapshot> before = Populate(server);

  // The AOF holds the effects PROBE.SET replicated (absolute expiry and creation time), not the
  // commands as sent; Redis 7.0 does not wrap a module command's single effect in MULTI/EXEC.
  const std::string aof = ReadAofFiles(server.dir());
  EXPECT_NE(aof.find("PXAT"), std::string::npos);
  EXPECT_NE(aof.find("CREATED"), std::string::npos);
  EXPECT_EQ(aof.find("$6\r\n600000\r\n"), std::string::npos) << "relative PX leaked into the AOF";
  EXPECT_EQ(aof.find("MULTI"), std::string::npos);
  EXPECT_NE(aof.find("global-1"), std::string::npos);  // PROBE.CONF SET, replicated verbatim

  // Replay of the incremental file after kill -9, with REDISMODULE_CTX_FLAGS_LOADING.
  server.Kill9();
  ASSERT_TRUE(server.Start());
  ExpectKeys(server, before);
  EXPECT_EQ(ProbeStat(server, "set_loading"), 3);
  EXPECT_EQ(server.Call({"PROBE.CONF", "GET"}).str, "global-1");

  // Rewrite: the base becomes an RDB (rdb_save + aux_save) or commands (aof_rewrite/EmitAOF).
  const std::string old_base = AofBaseName(server.dir());
  ASSERT_EQ(server.Call({"BGREWRITEAOF"}).type, '+');
  ASSERT_TRUE(WaitUntil(
      [&] {
        return AofBaseName(server.dir()) != old_base &&
               server.InfoField("persistence", "aof_rewrite_in_progress") == "0" &&
               server.InfoField("persistence", "aof_rewrite_scheduled") == "0";
      },
      seconds(20)))
      << server.LogTail();
  EXPECT_EQ(server.InfoField("persistence", "aof_last_bgrewrite_status"), "ok");
  const std::string base = ReadAofBase(server.dir());
  if (preamble) {
    EXPECT_EQ(base.rfind("REDIS", 0), 0u);
  } else {
    EXPECT_NE(base.find("PROBE.SET"), std::string::npos);
    EXPECT_NE(base.find("CREATED"), std::string::npos);
    EXPECT_NE(base.find("PEXPIREAT"), std::string::npos);  // the TTL, written by the server
  }

  ASSERT_EQ(server.Call({"PROBE.SET", "d", "delta", "PX", "600000"}).str, "OK");
  before.push_back(Read(server, "d"));
  server.Kill9();
  ASSERT_TRUE(server.Start());
  ExpectKeys(server, {before[0], before[1], before[2]});
  ExpectSame(before[3], Read(server, "d"), "d");
  EXPECT_EQ(ProbeStat(server, "load_refused"), 0);
  if (preamble) {
    EXPECT_EQ(server.Call({"PROBE.CONF", "GET"}).str, "global-1");
  } else {
    // Without the preamble, a rewrite writes keys only: module aux data is not in the new base
    // and the commands that set it were in the replaced files. Redis 7.0 offers no hook to emit
    // it, so module-global state must live in keys (or require aof-use-rdb-preamble yes).
    EXPECT_TRUE(server.Call({"PROBE.CONF", "GET"}).is_null());
  }
}

INSTANTIATE_TEST_SUITE_P(Preamble, AofTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "RdbPreamble" : "CommandsOnly";
                         });

TEST_F(PersistenceTest, DumpRestoreAndTamperedPayloads) {
  RedisServer server(ProbeOptions());
  ASSERT_TRUE(server.Start());
  ASSERT_EQ(server.Call({"PROBE.SET", "k", "hello-world", "CREATED", "4242"}).str, "OK");
  const std::string payload = server.Call({"DUMP", "k"}).str;
  // Envelope: type byte (7 = module, v2 encoding), 0x81 + 8-byte module id (name + encver),
  // the values rdb_save wrote as opcode/value pairs, EOF, RDB version (2 bytes), CRC-64 (8).
  ASSERT_GT(payload.size(), 20u);
  ASSERT_EQ(payload[0], 7);
  ASSERT_EQ(static_cast<unsigned char>(payload[1]), 0x81);
  EXPECT_EQ(WithDumpChecksum(payload), payload);  // our CRC-64 is Redis's

  ASSERT_EQ(server.Call({"RESTORE", "k2", "0", payload}).str, "OK");
  ExpectSame(Read(server, "k"), Read(server, "k2"), "k2");

  // Each tampered payload carries a valid checksum, so it reaches rdb_load, which refuses it.
  const size_t encver_byte = 9;    // last byte of the module id: its low bits are the encver
  const size_t format_value = 11;  // after opcode 2 (unsigned) at 10: our format number
  ASSERT_EQ(payload[10], 2);
  ASSERT_EQ(payload[format_value], 1);
  const size_t string_len = payload.find("hello-world") - 1;  // length byte of the string
  ASSERT_EQ(payload[string_len], 11);
  struct Tamper {
    const char* what;
    size_t offset;
    char value;
    const char* log;
  } tampers[] = {
      {"encoding version", encver_byte, static_cast<char>(0xff),
       "probe: refusing encoding version 255"},
      {"format", format_value, 7, "probe: refusing a corrupt value (format 7, io error 0)"},
      {"short read", string_len, 63, "probe: refusing a corrupt value (format 1, io error 1)"},
  };
  int refused = 0;
  for (const Tamper& tamper : tampers) {
    std::string bad = payload;
    bad[tamper.offset] = tamper.value;
    Reply reply =
        server.Call({"RESTORE", std::string("bad-") + tamper.what, "0", WithDumpChecksum(bad)});
    EXPECT_EQ(reply.str, "ERR Bad data format") << tamper.what;
    EXPECT_EQ(ProbeStat(server, "load_refused"), ++refused) << tamper.what;
    EXPECT_NE(server.ReadLog().find(tamper.log), std::string::npos) << tamper.what;
    EXPECT_EQ(server.Call({"PING"}).str, "PONG") << tamper.what;
  }
  // Without a fixed checksum the server's own check refuses it before the module sees it.
  std::string bad = payload;
  bad[format_value] = 7;
  EXPECT_EQ(server.Call({"RESTORE", "bad-crc", "0", bad}).str,
            "ERR DUMP payload version or checksum are wrong");
  EXPECT_EQ(ProbeStat(server, "load_refused"), refused);
  EXPECT_EQ(server.Call({"DBSIZE"}).integer, 2);
  EXPECT_TRUE(server.running());
}

}  // namespace
}  // namespace rl::test

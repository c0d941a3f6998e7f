// rl.so values written before the algorithm registry (b1d1ed3, Redis 7.0.15) still load: DUMP
// payloads (the RDB encoding of a value, version 2, around KeyState encodings version 1 and 2)
// go through RESTORE, and an AOF rewrite's RL.SETSTATE and PEXPIREAT lines replay. The states
// were made on 2026-12-01 with ten-year windows, so their counts still hold when the test runs.
// The AOF that 0.3.0 (main 178f154) wrote while replicating every kind of change as RL.APPLY
// (fixtures/apply_aof, made by fixtures/make_apply_aof.sh) replays to the states it left, and so do
// AOFs of RL.PUT in each of its forms (fixtures/put_aof_1, put_aof_2: make_put_aof.sh).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "probe_util.h"
#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

using Cmd = std::vector<std::string>;

// Three checks of every rate algorithm, 5 per 3650d; three of FIXED_WINDOW 2 3650d BLOCK 3650d
// (the third denied, starting the block); one acquire of CONCURRENCY 3 LEASE 3650d.
const Cmd kRates = {"TOKEN_BUCKET", "5", "3650d", "GCRA",           "5", "3650d",
                    "SLIDING_LOG",  "5", "3650d", "SLIDING_WINDOW", "5", "3650d",
                    "FIXED_WINDOW", "5", "3650d", "LEAKY_BUCKET",   "5", "3650d"};
const Cmd kBlocked = {"FIXED_WINDOW", "2", "3650d", "BLOCK", "3650d"};
const Cmd kLeases = {"CONCURRENCY", "3", "LEASE", "3650d"};
const char kLeaseId[] = "44d7ed3131560f680000000000000000cdb4c673";

// DUMP of each key.
const std::vector<std::pair<std::string, std::string>> kDumps = {
    {"fx:rates",
     std::string(
         "\x07\x81\xad\xab\x5e\x96\x29\xa2\xb4\x02\x05\xc3\x40\x7c\x41\x05\x02\x01\x06\x00\xe0\x01"
         "\x00\x03\xb8\xeb\x6c\x49\x20\x0d\x05\xd8\x10\x03\x42\xce\x01\x20\x07\x03\x08\xdc\x33\xa2"
         "\x20\x07\x04\x00\x70\xd7\xd9\x92\x20\x06\xc0\x00\x00\x01\xe0\x08\x28\xa0\x30\xe0\x07\x00"
         "\x00\x02\xe0\x00\x28\x03\xc0\xc7\xa0\xeb\x20\x49\x20\x02\xe0\x00\x55\x00\x03\x20\x0b\xe0"
         "\x03\x00\x00\x03\xc0\x2c\x05\x00\x08\x72\xfa\x01\x02\x20\x07\x03\x98\x9a\x20\x6f\x40\x31"
         "\xa0\x00\xe0\x07\x30\x00\x04\xc0\x30\xc0\x5d\xc0\xaf\xe0\x07\x28\x00\x05\xe0\x00\x28\xa0"
         "\xa7\xc0\x07\x80\x00\x01\x00\x00\x02\x81\x00\x00\x01\xa2\x33\xdc\x08\xd9\x00\x0a\x00\xa8"
         "\x0d\x1f\x5e\xbd\xba\xf2\x24",
         161)},
    {"fx:blocked",
     std::string(
         "\x07\x81\xad\xab\x5e\x96\x29\xa2\xb4\x02\x05\xc3\x2c\x40\x45\x02\x02\x02\x00\xc0\x00\x05"
         "\x04\x00\xb8\xeb\x6c\x49\x20\x0d\x05\xd8\xc0\xc7\xa0\xeb\x01\x20\x07\x03\x08\xdc\x33\xa2"
         "\x20\x07\xe0\x01\x22\x80\x00\x00\x84\xe0\x05\x28\x01\x00\x00\x02\x81\x00\x00\x01\xa2\x33"
         "\xdc\x08\xd9\x00\x0a\x00\x25\xf8\x64\x17\x56\x8f\x5c\x39",
         80)},
    {"fx:leases",
     std::string(
         "\x07\x81\xad\xab\x5e\x96\x29\xa2\xb4\x02\x05\xc3\x23\x30\x02\x02\x01\x00\xc0\x00\x00\x06"
         "\xc0\x08\x04\xd8\xc0\xc7\xa0\xeb\x20\x17\x20\x02\x08\x00\x68\x0f\x56\x31\x31\xed\xd7\x44"
         "\x80\x13\x01\x00\x00\x02\x81\x00\x00\x01\xa2\x33\xdc\x08\xda\x00\x0a\x00\x2c\x87\xd0\xac"
         "\x6c\xf9\x30\xe7",
         70)},
};

// The AOF rewrite (aof-use-rdb-preamble no) of the same keys, after its SELECT.
const std::vector<Cmd> kAof = {
    {std::string("RL.SETSTATE"), std::string("fx:blocked"),
     std::string(
         "\x02\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\xb8\xeb\x6c\x49\x00\x00\x00\xd8\xc0"
         "\xc7\xa0\xeb\x01\x00\x00\xd8\x08\xdc\x33\xa2\x01\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"
         "\x00\x00\x00\x00\x00\x00\x00\x00\x84\x00\xb8\xeb\x6c\x49\x00\x00\x00\xd8\xc0\xc7\xa0\xeb"
         "\x01\x00\x00",
         69),
     std::string("1796166396630")},
    {std::string("PEXPIREAT"), std::string("fx:blocked"), std::string("2111526387929")},
    {std::string("RL.SETSTATE"), std::string("fx:rates"),
     std::string(
         "\x01\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xb8\xeb\x6c\x49\x00\x00\x00\xd8\x10"
         "\x03\x42\xce\x01\x00\x00\xd8\x08\xdc\x33\xa2\x01\x00\x00\x00\x70\xd7\xd9\x92\x00\x00\x00"
         "\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\xb8\xeb\x6c\x49\x00\x00\x00\xd8\x10\x03\x42\xce"
         "\x01\x00\x00\xd8\x10\x03\x42\xce\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
         "\x00\x00\x00\x00\x00\x02\x00\xb8\xeb\x6c\x49\x00\x00\x00\xd8\xc0\xc7\xa0\xeb\x01\x00\x00"
         "\x01\x00\x00\x00\xd8\x08\xdc\x33\xa2\x01\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00"
         "\x00\x00\x00\x00\x00\x00\x03\x00\xb8\xeb\x6c\x49\x00\x00\x00\x00\x08\x72\xfa\x01\x02\x00"
         "\x00\x00\x98\x9a\x20\x6f\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00"
         "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\xb8\xeb\x6c\x49\x00\x00\x00\xd8\xc0"
         "\xc7\xa0\xeb\x01\x00\x00\xd8\x08\xdc\x33\xa2\x01\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00"
         "\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\xb8\xeb\x6c\x49\x00\x00\x00\xd8\x10\x03\x42\xce"
         "\x01\x00\x00\xd8\x10\x03\x42\xce\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
         261),
     std::string("1796166396642")},
    {std::string("PEXPIREAT"), std::string("fx:rates"), std::string("2207520000001")},
    {std::string("RL.SETSTATE"), std::string("fx:leases"),
     std::string(
         "\x02\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00\x00\x00\xd8\xc0"
         "\xc7\xa0\xeb\x01\x00\x00\x01\x00\x00\x00\x68\x0f\x56\x31\x31\xed\xd7\x44\xd8\xc0\xc7\xa0"
         "\xeb\x01\x00\x00",
         48),
     std::string("1796166396642")},
    {std::string("PEXPIREAT"), std::string("fx:leases"), std::string("2111526387929")},
};

Cmd With(Cmd head, const Cmd& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// The three keys answer with the counts they were saved with.
void ExpectTheSavedStates(RedisServer& server) {
  const Reply rates = server.Call(With({"RL.PEEK", "fx:rates"}, kRates));
  ASSERT_EQ(DecisionOf(rates).size(), 5u) << Show(rates);
  EXPECT_EQ(DecisionOf(rates)[0], 1) << Show(rates);
  EXPECT_EQ(DecisionOf(rates)[2], 1) << "3 of 5 used, and this peek's one: " << Show(rates);
  const Reply blocked = server.Call(With({"RL.CHECK", "fx:blocked"}, kBlocked));
  ASSERT_EQ(DecisionOf(blocked).size(), 5u) << Show(blocked);
  EXPECT_EQ(DecisionOf(blocked)[0], 0) << Show(blocked);
  EXPECT_GT(DecisionOf(blocked)[3], int64_t{3000} * 86400 * 1000) << "the block runs on";
  const Reply leases = server.Call(With({"RL.PEEK", "fx:leases"}, kLeases));
  ASSERT_EQ(DecisionOf(leases).size(), 5u) << Show(leases);
  EXPECT_EQ(DecisionOf(leases)[2], 1) << "one lease held: " << Show(leases);
  EXPECT_EQ(server.Call({"RL.RELEASE", "fx:leases", kLeaseId}).integer, 1);
  EXPECT_EQ(RlStat(server, "rejected_loads"), 0);
}

class RlPreviousFormatsTest : public RlServerTest {};

TEST_F(RlPreviousFormatsTest, DumpPayloadsRestore) {
  for (const auto& [key, payload] : kDumps) {
    const Reply r = server().Call({"RESTORE", key, "0", payload});
    ASSERT_EQ(r.str, "OK") << key << " " << Show(r) << server().LogTail();
  }
  ExpectTheSavedStates(server());
}

TEST_F(RlPreviousFormatsTest, AofSetStateLinesReplay) {
  for (const Cmd& cmd : kAof) {
    const Reply r = server().Call(cmd);
    ASSERT_NE(r.type, '-') << cmd[0] << " " << cmd[1] << " " << Show(r);
  }
  ExpectTheSavedStates(server());
}

// fixtures/apply_aof: one change of every kind 0.3.0 replicated as RL.APPLY (CHECK under inline
// limits, a policy and CL.THROTTLE's scope, ACQUIRE with its lease id, RELEASE, REFUND, CHARGE,
// RESET of one of two limits, a RESET's DEL), a carried-over window (RL.SETSTATE) and two policy
// sets (RL.POLICYSET). What make_apply_aof.sh printed from that server (RL.PEEK ... COST 0:
// allowed, limit, remaining) is what this rl.so must answer after replaying the file.
TEST(RlPreviousAofTest, RlApplyLinesOfZeroThreeReplay) {
  if (!RedisAvailable()) GTEST_SKIP() << ServerName() << " or its cli not installed";
  namespace fs = std::filesystem;
  RedisServer server(RlOptions().With("appendonly yes").With("aof-use-rdb-preamble no"));
  ASSERT_TRUE(server.Start());
  ASSERT_TRUE(server.Stop());
  const fs::path aof_dir = fs::path(server.dir()) / "appendonlydir";
  fs::remove_all(aof_dir);
  fs::create_directories(aof_dir);
  for (const auto& f : fs::directory_iterator(fs::path(RL_FIXTURES_DIR) / "apply_aof")) {
    fs::copy_file(f.path(), aof_dir / f.path().filename());
  }
  const std::string aof = ReadAofFiles(server.dir());
  ASSERT_NE(aof.find("RL.APPLY"), std::string::npos);
  ASSERT_NE(aof.find("RL.SETSTATE"), std::string::npos);
  ASSERT_TRUE(server.Start());
  const std::vector<std::pair<Cmd, std::vector<int64_t>>> peeks = {
      {{"fx:pol", "POLICY", "fxpol"}, {1, 3, 1}},
      {{"fx:tb", "TOKEN_BUCKET", "5", "3650d"}, {1, 5, 4}},
      {{"fx:gcra", "GCRA", "5", "3650d", "BURST", "8"}, {1, 8, 5}},
      {{"fx:fw", "FIXED_WINDOW", "2", "3650d", "BLOCK", "3650d"}, {0, 2, 0}},
      {{"fx:lease", "CONCURRENCY", "3"}, {1, 3, 1}},
      {{"fx:sw", "SLIDING_WINDOW", "5", "3650d"}, {1, 5, 3}},
      {{"fx:two", "LEAKY_BUCKET", "5", "3650d"}, {1, 5, 4}},
      {{"fx:win", "POLICY", "win"}, {1, 6, 1}},
  };
  for (const auto& [args, want] : peeks) {
    const Reply r = server.Call(With(With({"RL.PEEK"}, args), {"COST", "0"}));
    const std::vector<int64_t> d = DecisionOf(r);
    ASSERT_GE(d.size(), 3u) << args[0] << " " << Show(r);
    EXPECT_EQ(std::vector<int64_t>(d.begin(), d.begin() + 3), want) << args[0] << " " << Show(r);
  }
  // A GCRA 1 per 3650d with a burst of 3, called twice: one left (CL.THROTTLE's own scope).
  const Reply cell = server.Call({"CL.THROTTLE", "fx:cell", "2", "1", "315360000"});
  ASSERT_EQ(cell.elements.size(), 5u) << Show(cell);
  EXPECT_EQ(cell.elements[0].integer, 0);
  EXPECT_EQ(cell.elements[2].integer, 0);
  EXPECT_EQ(server.Call({"EXISTS", "fx:gone"}).integer, 0);
  EXPECT_EQ(server.Call({"DBSIZE"}).integer, 9);
  // The lease released before the file ended is gone, the other still held.
  EXPECT_EQ(
      server.Call({"RL.RELEASE", "fx:lease", "3a06f18aaf172b97000000000000000052e3f25f"}).integer,
      0);
  EXPECT_EQ(
      server.Call({"RL.RELEASE", "fx:lease", "98e4e1623a41560b00000000000000005e4c4296"}).integer,
      1);
  // Every replay reached the state the primary reported.
  EXPECT_EQ(RlStat(server, "apply_mismatches"), 0);
}

// fixtures/put_aof_1 and put_aof_2 (fixtures/make_put_aof.sh): the same changes written as RL.PUT
// form 1 (by main dc6e8c7) and as this version writes them (form 2 for one-state keys, form 1
// for the two multi-state ones): both replay to what the writing server answered.
TEST(RlPreviousAofTest, RlPutFormsReplay) {
  if (!RedisAvailable()) GTEST_SKIP() << ServerName() << " or its cli not installed";
  namespace fs = std::filesystem;
  for (const char* fixture : {"put_aof_1", "put_aof_2"}) {
    SCOPED_TRACE(fixture);
    RedisServer server(RlOptions().With("appendonly yes").With("aof-use-rdb-preamble no"));
    ASSERT_TRUE(server.Start());
    ASSERT_TRUE(server.Stop());
    const fs::path aof_dir = fs::path(server.dir()) / "appendonlydir";
    fs::remove_all(aof_dir);
    fs::create_directories(aof_dir);
    for (const auto& f : fs::directory_iterator(fs::path(RL_FIXTURES_DIR) / fixture)) {
      fs::copy_file(f.path(), aof_dir / f.path().filename());
    }
    const std::string aof = ReadAofFiles(server.dir());
    // The one-state keys' form: 1 in put_aof_1, 2 in put_aof_2; fx:two's is 1 in both.
    const std::string tb = "$6\r\nRL.PUT\r\n$5\r\nfx:tb\r\n$";
    const size_t at = aof.find(tb);
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(aof[aof.find("\r\n", at + tb.size()) + 2], fixture[8] - '0');
    const std::string two = "$6\r\nRL.PUT\r\n$6\r\nfx:two\r\n$";
    const size_t at_two = aof.find(two);
    ASSERT_NE(at_two, std::string::npos);
    EXPECT_EQ(aof[aof.find("\r\n", at_two + two.size()) + 2], 1);
    ASSERT_TRUE(server.Start());
    const std::vector<std::pair<Cmd, std::vector<int64_t>>> peeks = {
        {{"fx:tb", "TOKEN_BUCKET", "5", "3650d"}, {1, 5, 3}},
        {{"fx:gcra", "GCRA", "5", "3650d", "BURST", "8"}, {1, 8, 5}},
        {{"fx:fw", "FIXED_WINDOW", "4", "3650d"}, {1, 4, 1}},
        {{"fx:lb", "LEAKY_BUCKET", "5", "3650d"}, {1, 5, 3}},
        {{"fx:pol", "POLICY", "putpol"}, {1, 5, 2}},
        {{"fx:two", "GCRA", "5", "3650d", "LEAKY_BUCKET", "5", "3650d"}, {1, 5, 4}},
        {{"fx:blk", "FIXED_WINDOW", "2", "3650d", "BLOCK", "3650d"}, {0, 2, 0}},
    };
    for (const auto& [args, want] : peeks) {
      const Reply r = server.Call(With(With({"RL.PEEK"}, args), {"COST", "0"}));
      const std::vector<int64_t> d = DecisionOf(r);
      ASSERT_GE(d.size(), 3u) << args[0] << " " << Show(r);
      EXPECT_EQ(std::vector<int64_t>(d.begin(), d.begin() + 3), want) << args[0] << " " << Show(r);
    }
    // CL.THROTTLE's GCRA (a burst of 2: three calls) was called three times: the fourth is denied.
    const Reply cell = server.Call({"CL.THROTTLE", "fx:cell", "2", "1", "315360000"});
    ASSERT_EQ(cell.elements.size(), 5u) << Show(cell);
    EXPECT_EQ(cell.elements[0].integer, 1);
    EXPECT_EQ(cell.elements[2].integer, 0);
    EXPECT_EQ(server.Call({"DBSIZE"}).integer, 8);
  }
}

}  // namespace
}  // namespace rl::test

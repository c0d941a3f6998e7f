// rl.so values written before the algorithm registry (b1d1ed3, Redis 7.0.15) still load: DUMP
// payloads (the RDB encoding of a value, version 2, around KeyState encodings version 1 and 2)
// go through RESTORE, and an AOF rewrite's RL.SETSTATE and PEXPIREAT lines replay. The states
// were made on 2026-12-01 with ten-year windows, so their counts still hold when the test runs.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

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

}  // namespace
}  // namespace rl::test

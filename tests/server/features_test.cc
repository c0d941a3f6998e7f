// RL.REFUND, RL.CHARGE, BLOCK and RL.ACQUIRE / RL.RELEASE against the real rl-server: 8 clients
// racing for 3 leases, the LLM-tokens flow (check an estimate, then charge or refund), a login
// block, bad input that changes nothing, COMMAND DOCS rows, and blocks and leases that survive a
// restart through the snapshot. (Leases ending after their ttl: handlers_test.cc.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "resp_client.h"
#include "server_process.h"
#include "test_files.h"

namespace rl::test {
namespace {

using Cmd = std::vector<std::string>;

class FeaturesTest : public SharedServerTest<FeaturesTest> {};

// 8 clients at once, 3 slots: exactly 3 lease ids, 5 nils with a positive retry-after.
TEST_F(FeaturesTest, EightClientsThreeLeases) {
  const Cmd acquire = {"RL.ACQUIRE", "race", "CONCURRENCY", "3", "LEASE", "1m"};
  constexpr int kClients = 8;
  const std::vector<Reply> replies = CallAtOnce(
      kClients, [&] { return std::make_unique<RespClient>(port()); }, acquire);
  std::set<std::string> ids;
  int denied = 0;
  for (const Reply& r : replies) {
    ASSERT_EQ(r.type, '*') << r.str;
    ASSERT_EQ(r.elements.size(), 6u);
    if (r.elements[0].integer == 1) {
      ASSERT_EQ(r.elements[5].type, '$');
      ASSERT_EQ(r.elements[5].str.size(), 40u);
      ids.insert(r.elements[5].str);
    } else {
      ++denied;
      EXPECT_TRUE(r.elements[5].is_null());
      EXPECT_GT(r.elements[3].integer, 0);
    }
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(denied, 5);
  RespClient c(port());
  EXPECT_EQ(c.Call({"RL.RELEASE", "race", *ids.begin()}).integer, 1);
  EXPECT_EQ(c.Call(acquire).elements[0].integer, 1) << "a released slot is free again";
  EXPECT_EQ(c.Call({"RL.RELEASE", "race", *ids.begin()}).integer, 0);
}

// Abandoned leases ending after their ttl: handlers_test.cc, on a manual clock.

// "At most 3 exports at once and 20 per hour", and RESP3's lease field.
TEST_F(FeaturesTest, AcquireWithRateLimitsAndResp3) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "exports", "CONCURRENCY", "3", "LEASE", "10m",
                    "FIXED_WINDOW", "2", "1h"})
                .str,
            "OK");
  EXPECT_EQ(c.Call({"RL.POLICY", "GET", "exports"}).str,
            "CONCURRENCY 3 LEASE 10m FIXED_WINDOW 2 1h");
  ASSERT_EQ(c.Call({"HELLO", "3"}).type, '%');
  const Reply a = c.Call({"RL.ACQUIRE", "t", "POLICY", "exports"});
  ASSERT_EQ(a.type, '%');
  ASSERT_NE(a.Get("lease"), nullptr);
  EXPECT_EQ(a.Get("lease")->str.size(), 40u);
  ASSERT_EQ(c.Call({"RL.ACQUIRE", "t", "POLICY", "exports"}).Get("allowed")->integer, 1);
  const Reply third = c.Call({"RL.ACQUIRE", "t", "POLICY", "exports"});
  EXPECT_EQ(third.Get("allowed")->integer, 0) << "2 per hour, although a slot is free";
  EXPECT_TRUE(third.Get("lease")->is_null());
  EXPECT_EQ(c.Call({"RL.RELEASE", "t", a.Get("lease")->str}).integer, 1);
  EXPECT_EQ(c.Call({"RL.ACQUIRE", "t", "POLICY", "exports"}).Get("allowed")->integer, 0);
  EXPECT_EQ(
      c.Call({"RL.CHECK", "t", "POLICY", "exports"}).str,
      "ERR a CONCURRENCY limit holds leases: take one with Acquire (RL.ACQUIRE) and end it with "
      "Release (RL.RELEASE)");
}

// LLM tokens per minute: check the estimate, then charge or refund the difference.
TEST_F(FeaturesTest, EstimateThenChargeOrRefund) {
  RespClient c(port());
  const Cmd limit = {"TOKEN_BUCKET", "10000", "1m"};
  auto with = [&](Cmd head, Cmd tail) {
    head.insert(head.end(), limit.begin(), limit.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  std::vector<int64_t> r = c.Call(with({"RL.CHECK", "llm"}, {"COST", "2000"})).Ints();
  ASSERT_EQ(r[0], 1);
  EXPECT_EQ(r[2], 8000);
  r = c.Call(with({"RL.REFUND", "llm"}, {"COST", "1500"})).Ints();  // used 500
  EXPECT_EQ(r[0], 1);
  EXPECT_GE(r[2], 9500);
  r = c.Call(with({"RL.CHARGE", "llm"}, {"COST", "15000"})).Ints();  // a huge answer
  EXPECT_EQ(r[0], 0) << "in debt";
  EXPECT_EQ(r[2], 0);
  EXPECT_GT(r[3], 30000) << "about 5500 tokens in debt at 166.7 per second";
  EXPECT_LE(r[3], 33000);
  r = c.Call(with({"RL.CHECK", "llm"}, {"COST", "1"})).Ints();
  EXPECT_EQ(r[0], 0);
  const Reply headers = c.Call(with({"RL.CHARGE", "llm"}, {"COST", "0", "HEADERS"}));
  ASSERT_EQ(headers.elements.size(), 6u);
  EXPECT_NE(headers.elements[5].Get("Retry-After"), nullptr);
}

TEST_F(FeaturesTest, LoginBlock) {
  RespClient c(port());
  const Cmd login = {"RL.CHECK", "user:9", "FIXED_WINDOW", "5", "15m", "BLOCK", "1h"};
  for (int i = 0; i < 5; ++i) ASSERT_EQ(c.Call(login).Ints()[0], 1);
  std::vector<int64_t> r = c.Call(login).Ints();
  EXPECT_EQ(r[0], 0);
  EXPECT_GT(r[3], 3600000 - 5000);
  EXPECT_LE(r[3], 3600000);
  r = c.Call({"RL.PEEK", "user:9", "FIXED_WINDOW", "5", "15m", "BLOCK", "1h", "COST", "0"}).Ints();
  EXPECT_EQ(r[0], 0) << "RL.PEEK shows the block";
  EXPECT_GT(r[3], 3600000 - 5000);
  EXPECT_EQ(c.Call({"RL.RESET", "user:9", "FIXED_WINDOW", "5", "15m"}).integer, 1);
  EXPECT_EQ(c.Call(login).Ints()[0], 1) << "RL.RESET lifted it";
}

TEST_F(FeaturesTest, BadInputIsAClearErrorAndChangesNothing) {
  RespClient c(port());
  const Reply got = c.Call({"RL.ACQUIRE", "mine", "CONCURRENCY", "1"});
  ASSERT_EQ(got.elements.size(), 6u);
  const std::string id = got.elements[5].str;
  const std::vector<std::pair<Cmd, std::string>> cases = {
      {{"RL.RELEASE", "yours", id}, "ERR lease id was issued for another key"},
      {{"RL.RELEASE", "mine", "0123"},
       "ERR invalid lease id (expected the 40 hex digits RL.ACQUIRE returned)"},
      {{"RL.RELEASE", "mine"}, "ERR wrong number of arguments for 'rl.release' command"},
      {{"RL.REFUND", "mine", "GCRA", "5", "1s", "COST", "-1"}, "ERR COST must not be negative"},
      {{"RL.CHARGE", "mine", "GCRA", "5", "1s", "COST", "1099511627777"},
       "ERR COST must be at most 1099511627776"},
      {{"RL.CHARGE", "mine", "GCRA", "5", "1s"}, "ERR RL.CHARGE needs COST n (the amount to take)"},
      {{"RL.ACQUIRE", "mine", "CONCURRENCY", "0"}, "ERR CONCURRENCY must be between 1 and 10000"},
      {{"RL.ACQUIRE", "mine", "CONCURRENCY", "100000"},
       "ERR CONCURRENCY must be between 1 and 10000"},
      {{"RL.ACQUIRE", "mine", "GCRA", "5", "1s"},
       "ERR Acquire (RL.ACQUIRE) needs a CONCURRENCY limit (e.g. CONCURRENCY 3 LEASE 5m)"},
      {{"RL.CHECK", "mine", "GCRA", "5", "1s", "BLOCK", "0"},
       "ERR window '0' out of range (1ms to 3650d)"},
      {{"RL.CHECK", "mine", "CONCURRENCY", "1", "BLOCK", "1h"},
       "ERR BLOCK is not allowed with CONCURRENCY"},
  };
  for (const auto& [cmd, error] : cases) {
    const Reply r = c.Call(cmd);
    EXPECT_EQ(r.type, '-') << cmd[0];
    EXPECT_EQ(r.str, error) << cmd[0];
  }
  // The lease is still held, by its id alone.
  EXPECT_EQ(c.Call({"RL.ACQUIRE", "mine", "CONCURRENCY", "1"}).elements[0].integer, 0);
  EXPECT_EQ(c.Call({"RL.RELEASE", "mine", id}).integer, 1);
}

TEST_F(FeaturesTest, CommandDocsRows) {
  RespClient c(port());
  for (const std::string name : {"rl.refund", "rl.charge", "rl.acquire", "rl.release"}) {
    const Reply docs = c.Call({"COMMAND", "DOCS", name});
    ASSERT_EQ(docs.elements.size(), 2u) << name;
    EXPECT_EQ(docs.elements[0].str, name);
    const Reply* summary = docs.elements[1].Get("summary");
    ASSERT_NE(summary, nullptr) << name;
    EXPECT_FALSE(summary->str.empty());
    EXPECT_EQ(docs.elements[1].Get("since")->str, "0.2.0");
    const Reply info = c.Call({"COMMAND", "INFO", name});
    ASSERT_EQ(info.elements.size(), 1u) << name;
    EXPECT_EQ(info.elements[0].elements[1].integer, name == "rl.release" ? 3 : -4) << name;
  }
  // BLOCK documented with the limit options of RL.CHECK.
  const Reply check = c.Call({"COMMAND", "DOCS", "rl.check"});
  bool block = false;
  std::vector<const Reply*> todo = {&check};
  while (!todo.empty()) {
    const Reply* r = todo.back();
    todo.pop_back();
    if (r->str == "BLOCK") block = true;
    for (const Reply& e : r->elements) todo.push_back(&e);
  }
  EXPECT_TRUE(block);
}

// Blocks and leases survive a restart through the snapshot file.
TEST(FeaturesSnapshotTest, BlocksAndLeasesSurviveARestart) {
  const rl_test::TempDir temp("rl-features-test");
  ASSERT_FALSE(temp.path().empty());
  const std::string dir = temp.path();
  const std::vector<std::string> flags = {"--snapshot", dir + "/state.rlsnap", "--threads", "2"};
  const Cmd login = {"RL.CHECK", "user", "FIXED_WINDOW", "1", "1m", "BLOCK", "1h"};
  const Cmd acquire = {"RL.ACQUIRE", "job", "CONCURRENCY", "1", "LEASE", "1h"};
  std::string id;
  {
    ServerProcess server(flags);
    ASSERT_GT(server.port(), 0);
    RespClient c(server.port());
    ASSERT_EQ(c.Call(login).Ints()[0], 1);
    ASSERT_EQ(c.Call(login).Ints()[0], 0);
    const Reply lease = c.Call(acquire);
    ASSERT_EQ(lease.elements.size(), 6u);
    id = lease.elements[5].str;
    ASSERT_EQ(id.size(), 40u);
    EXPECT_EQ(server.Terminate(), 0);
  }
  {
    ServerProcess server(flags);
    ASSERT_GT(server.port(), 0);
    RespClient c(server.port());
    const std::vector<int64_t> r = c.Call(login).Ints();
    EXPECT_EQ(r[0], 0) << "still blocked after the restart";
    EXPECT_GT(r[3], 3600000 - 60000);
    EXPECT_EQ(c.Call(acquire).elements[0].integer, 0) << "the lease is still held";
    EXPECT_EQ(c.Call({"RL.RELEASE", "job", id}).integer, 1) << "by the same id";
    EXPECT_EQ(c.Call(acquire).elements[0].integer, 1);
    EXPECT_EQ(server.Terminate(), 0);
  }
}

}  // namespace
}  // namespace rl::test

// RL.REFUND, RL.CHARGE, BLOCK and RL.ACQUIRE / RL.RELEASE in rl.so: 8 clients racing for 3
// leases, abandoned leases ending by themselves (and the key with them), command metadata (key
// specs, flags: RL.RELEASE runs over maxmemory), blocks and leases across an RDB restart and
// DUMP/RESTORE, a replica that sees them, and forged RL.SETSTATE payloads with blocks and leases
// that are refused or harmless.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

using Cmd = std::vector<std::string>;
using std::chrono::milliseconds;

class RlFeaturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
    server_ = std::make_unique<RedisServer>(RlOptions());
    ASSERT_TRUE(server_->Start());
  }
  void TearDown() override {
    if (server_) {
      EXPECT_TRUE(server_->running()) << server_->LogTail();
    }
  }
  RedisServer& server() { return *server_; }

  std::unique_ptr<RedisServer> server_;
};

std::string LeaseOf(const Reply& r) {
  if (r.type == '%') return r.Get("lease") ? r.Get("lease")->str : "";
  return r.elements.empty() || r.elements.back().is_null() ? "" : r.elements.back().str;
}

TEST_F(RlFeaturesTest, EightClientsThreeLeases) {
  const Cmd acquire = {"RL.ACQUIRE", "race", "CONCURRENCY", "3", "LEASE", "1m"};
  constexpr int kClients = 8;
  const std::vector<Reply> replies = CallAtOnce(
      kClients, [&] { return server().Connect(); }, acquire);
  std::set<std::string> ids;
  int denied = 0;
  for (const Reply& r : replies) {
    ASSERT_EQ(r.elements.size(), 6u) << Show(r);
    if (r.elements[0].integer == 1) {
      ids.insert(LeaseOf(r));
    } else {
      ++denied;
      EXPECT_TRUE(r.elements[5].is_null());
      EXPECT_GT(r.elements[3].integer, 0);
    }
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(denied, 5);
  for (const std::string& id : ids) EXPECT_EQ(id.size(), 40u);
  EXPECT_EQ(server().Call({"TYPE", "race"}).str, "ratelimit") << "one key holds the leases";
  EXPECT_EQ(server().Call({"RL.RELEASE", "race", *ids.begin()}).integer, 1);
  EXPECT_EQ(server().Call(acquire).elements[0].integer, 1);
  EXPECT_EQ(RlStat(server(), "leases_acquired"), 4);
  EXPECT_EQ(RlStat(server(), "leases_released"), 1);
}

TEST_F(RlFeaturesTest, AbandonedLeasesEndAndTheKeyWithThem) {
  const Cmd acquire = {"RL.ACQUIRE", "gone", "CONCURRENCY", "1", "LEASE", "300ms"};
  ASSERT_EQ(server().Call(acquire).elements[0].integer, 1);
  EXPECT_EQ(server().Call(acquire).elements[0].integer, 0);
  const long long pttl = server().Call({"PTTL", "gone"}).integer;
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, 300) << "the key lives exactly as long as its last lease";
  // Gone once the lease ends (an access expires it): waited for, not slept on.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return server().Call({"EXISTS", "gone"}).integer == 0;
      },
      milliseconds(10000)));
  EXPECT_EQ(server().Call(acquire).elements[0].integer, 1);
}

TEST_F(RlFeaturesTest, RefundChargeAndBlock) {
  std::vector<int64_t> r =
      server().Call({"RL.CHECK", "llm", "TOKEN_BUCKET", "100", "1m", "COST", "50"}).Ints();
  ASSERT_EQ(r[2], 50);
  r = server().Call({"RL.REFUND", "llm", "TOKEN_BUCKET", "100", "1m", "COST", "30"}).Ints();
  EXPECT_GE(r[2], 80);
  r = server().Call({"RL.CHARGE", "llm", "TOKEN_BUCKET", "100", "1m", "COST", "200"}).Ints();
  EXPECT_EQ(r[0], 0);
  EXPECT_GT(r[3], 70000);
  EXPECT_LE(r[3], 72000);
  EXPECT_GT(server().Call({"PTTL", "llm"}).integer, 130000) << "the debt keeps the key";
  EXPECT_EQ(RlStat(server(), "refunds"), 1);
  EXPECT_EQ(RlStat(server(), "charges"), 1);

  const Cmd login = {"RL.CHECK", "user", "FIXED_WINDOW", "1", "1m", "BLOCK", "1h"};
  ASSERT_EQ(server().Call(login).Ints()[0], 1);
  r = server().Call(login).Ints();
  EXPECT_EQ(r[0], 0);
  EXPECT_GT(r[3], 3600000 - 5000);
  EXPECT_GT(server().Call({"PTTL", "user"}).integer, 3600000 - 5000)
      << "the key lives as long as its block";
  EXPECT_EQ(server().Call({"RL.PEEK", "user", "FIXED_WINDOW", "1", "1m", "BLOCK", "1h"}).Ints()[0],
            0);
  EXPECT_EQ(server().Call({"RL.RESET", "user", "FIXED_WINDOW", "1", "1m"}).integer, 1);
  EXPECT_EQ(server().Call({"EXISTS", "user"}).integer, 0);
  EXPECT_EQ(server().Call(login).Ints()[0], 1);
}

TEST_F(RlFeaturesTest, CommandMetadata) {
  for (const Cmd& cmd : std::vector<Cmd>{{"RL.REFUND", "k1", "GCRA", "5", "1s", "COST", "1"},
                                         {"RL.CHARGE", "k1", "POLICY", "p", "COST", "1"},
                                         {"RL.ACQUIRE", "k1", "CONCURRENCY", "3"},
                                         {"RL.RELEASE", "k1", "id"}}) {
    Cmd getkeys = {"COMMAND", "GETKEYS"};
    getkeys.insert(getkeys.end(), cmd.begin(), cmd.end());
    const Reply keys = server().Call(getkeys);
    ASSERT_EQ(keys.elements.size(), 1u) << cmd[0] << " " << Show(keys);
    EXPECT_EQ(keys.elements[0].str, "k1");
  }
  auto flags_of = [&](const std::string& name) {
    const Reply info = server().Call({"COMMAND", "INFO", name});
    std::vector<std::string> flags;
    if (info.elements.size() == 1 && info.elements[0].elements.size() > 2) {
      for (const Reply& f : info.elements[0].elements[2].elements) flags.push_back(f.str);
    }
    return flags;
  };
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (const std::string name : {"rl.refund", "rl.charge", "rl.acquire"}) {
    const auto flags = flags_of(name);
    EXPECT_TRUE(has(flags, "write") && has(flags, "denyoom")) << name;
  }
  const auto release = flags_of("rl.release");
  EXPECT_TRUE(has(release, "write"));
  EXPECT_FALSE(has(release, "denyoom")) << "releasing only frees";
  const Reply docs = server().Call({"COMMAND", "DOCS", "rl.acquire"});
  ASSERT_EQ(docs.elements.size(), 2u) << Show(docs);
  EXPECT_EQ(docs.elements[1].Get("summary")->str.rfind("Takes a lease", 0), 0u);

  // Over maxmemory a lease can still be given back.
  const std::string id = LeaseOf(server().Call({"RL.ACQUIRE", "oom", "CONCURRENCY", "1"}));
  ASSERT_EQ(server().Call({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).str, "OK");
  ASSERT_EQ(server().Call({"CONFIG", "SET", "maxmemory", "1"}).str, "OK");
  EXPECT_EQ(server().Call({"RL.ACQUIRE", "oom2", "CONCURRENCY", "1"}).str,
            "OOM command not allowed when used memory > 'maxmemory'.");
  EXPECT_EQ(server().Call({"RL.RELEASE", "oom", id}).integer, 1);
  ASSERT_EQ(server().Call({"CONFIG", "SET", "maxmemory", "0"}).str, "OK");
}

TEST_F(RlFeaturesTest, BlocksAndLeasesSurviveRdbAndDumpRestore) {
  const Cmd login = {"RL.CHECK", "user", "FIXED_WINDOW", "1", "1m", "BLOCK", "1h"};
  const Cmd acquire = {"RL.ACQUIRE", "job", "CONCURRENCY", "1", "LEASE", "1h"};
  ASSERT_EQ(server().Call(login).Ints()[0], 1);
  ASSERT_EQ(server().Call(login).Ints()[0], 0);
  const std::string id = LeaseOf(server().Call(acquire));
  ASSERT_EQ(id.size(), 40u);
  const std::string digest = server().Call({"DEBUG", "DIGEST"}).str;
  ASSERT_TRUE(server().Restart(RedisServer::Shutdown::kSave));
  EXPECT_EQ(server().Call({"DEBUG", "DIGEST"}).str, digest);
  EXPECT_EQ(RlStat(server(), "rejected_loads"), 0);
  std::vector<int64_t> r = server().Call(login).Ints();
  EXPECT_EQ(r[0], 0) << "still blocked after the restart";
  EXPECT_GT(r[3], 3600000 - 60000);
  EXPECT_EQ(server().Call(acquire).elements[0].integer, 0) << "the lease is still held";
  // DUMP / RESTORE carries both.
  const Reply dump = server().Call({"DUMP", "job"});
  ASSERT_EQ(dump.type, '$');
  ASSERT_EQ(server().Call({"RESTORE", "job2", "0", dump.str}).str, "OK");
  EXPECT_EQ(
      server().Call({"RL.ACQUIRE", "job2", "CONCURRENCY", "1", "LEASE", "1h"}).elements[0].integer,
      0);
  EXPECT_EQ(server().Call({"RL.RELEASE", "job2", id}).str,
            "ERR lease id was issued for another key")
      << "an id is tied to the key it was issued for";
  EXPECT_EQ(server().Call({"RL.RELEASE", "job", id}).integer, 1) << "by the same id";
  EXPECT_EQ(server().Call(acquire).elements[0].integer, 1);
}

TEST(RlFeaturesReplicationTest, ReplicaSeesLeasesAndBlocks) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  // The master pings its replicas through the replication stream every repl-ping-replica-period
  // seconds; an hour keeps the offset still while the test watches it.
  RedisServer master(RlOptions().With("repl-ping-replica-period 3600"));
  RedisServer replica(RlOptions().With("repl-ping-replica-period 3600"));
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());
  ASSERT_TRUE(StartReplication(master, replica));
  const Cmd login = {"RL.CHECK", "user", "FIXED_WINDOW", "1", "1m", "BLOCK", "1h"};
  ASSERT_EQ(master.Call(login).Ints()[0], 1);
  ASSERT_EQ(master.Call(login).Ints()[0], 0);
  const std::string a = LeaseOf(master.Call({"RL.ACQUIRE", "job", "CONCURRENCY", "2"}));
  const std::string b = LeaseOf(master.Call({"RL.ACQUIRE", "job", "CONCURRENCY", "2"}));
  ASSERT_EQ(a.size(), 40u);
  ASSERT_EQ(b.size(), 40u);
  ASSERT_TRUE(master.Call({"RL.CHARGE", "llm", "GCRA", "10", "1m", "COST", "30"}).Ints().size() ==
              5u);
  ASSERT_TRUE(WaitForReplicas(master, 1));
  const Cmd peek_login = {"RL.PEEK", "user", "FIXED_WINDOW", "1", "1m", "BLOCK", "1h"};
  std::vector<int64_t> m = DecisionOf(master.Call(peek_login)),
                       r = DecisionOf(replica.Call(peek_login));
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0], 0) << "the replica sees the block";
  EXPECT_NEAR(static_cast<double>(r[3]), static_cast<double>(m[3]), 1000.0);
  const Cmd peek_job = {"RL.PEEK", "job", "CONCURRENCY", "2"};
  EXPECT_EQ(DecisionOf(replica.Call(peek_job))[0], 0) << "both leases held on the replica";
  EXPECT_EQ(DecisionOf(replica.Call({"RL.PEEK", "llm", "GCRA", "10", "1m", "COST", "0"}))[0], 0)
      << "the debt too";
  for (const std::string key : {"user", "job", "llm"}) {
    EXPECT_EQ(replica.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str,
              master.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str)
        << key;
  }
  EXPECT_EQ(replica.Call({"RL.RELEASE", "job", a}).str,
            "READONLY You can't write against a read only replica.");
  // A release reaches the replica; a release that changes nothing replicates nothing.
  ASSERT_EQ(master.Call({"RL.RELEASE", "job", a}).integer, 1);
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_EQ(DecisionOf(replica.Call(peek_job))[0], 1);
  const long long offset = std::stoll(master.InfoField("replication", "master_repl_offset"));
  EXPECT_EQ(master.Call({"RL.RELEASE", "job", a}).integer, 0);
  EXPECT_EQ(master.Call({"RL.RELEASE", "other", b}).str, "ERR lease id was issued for another key");
  EXPECT_EQ(std::stoll(master.InfoField("replication", "master_repl_offset")), offset);
  // Promoted, the replica holds the remaining lease and honours its id.
  ASSERT_EQ(replica.Call({"REPLICAOF", "NO", "ONE"}).str, "OK");
  EXPECT_EQ(replica.Call({"RL.RELEASE", "job", b}).integer, 1);
  EXPECT_EQ(replica.Call(login).Ints()[0], 0) << "still blocked after promotion";
}

// rl::KeyState's encoding version 2 (core/src/key_state_codec.cc): kind 6 = leases, 0x80 | alg =
// a block. Forged payloads are refused with an error or stored harmlessly; the server lives.
std::string EncodeV2(const std::vector<std::string>& entries) {
  std::string out;
  out.push_back(2);
  out.push_back(static_cast<char>(entries.size()));
  out.push_back(0);
  for (const std::string& e : entries) out += e;
  return out;
}
void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::string Entry(uint8_t kind, uint64_t window, int64_t expiry) {
  std::string e;
  PutLe(&e, 0, 8);
  PutLe(&e, kind, 1);
  PutLe(&e, window, 8);
  PutLe(&e, static_cast<uint64_t>(expiry), 8);
  return e;
}

TEST_F(RlFeaturesTest, ForgedBlocksAndLeasesAreRefusedOrHarmless) {
  const int64_t now_ms = TimeMs(server().Call({"TIME"}));
  std::string leases = Entry(6, 0, now_ms + 60000);
  PutLe(&leases, 2, 4);
  PutLe(&leases, 0x1234, 8);
  PutLe(&leases, static_cast<uint64_t>(now_ms + 60000), 8);
  PutLe(&leases, 0x5678, 8);
  PutLe(&leases, static_cast<uint64_t>(now_ms + 30000), 8);
  const std::string block = Entry(0x80 | 4, 60000, now_ms + 3600000);  // FIXED_WINDOW 1m
  const std::string good = EncodeV2({leases, block});
  ASSERT_EQ(server().Call({"RL.SETSTATE", "forged", good}).str, "OK");
  EXPECT_EQ(DecisionOf(server().Call({"RL.PEEK", "forged", "CONCURRENCY", "2"}))[0], 0);
  EXPECT_EQ(
      server().Call({"RL.CHECK", "forged", "FIXED_WINDOW", "9", "1m", "BLOCK", "1s"}).Ints()[0], 0);

  std::string zero_nonce = Entry(6, 0, now_ms + 60000);
  PutLe(&zero_nonce, 1, 4);
  PutLe(&zero_nonce, 0, 8);
  PutLe(&zero_nonce, static_cast<uint64_t>(now_ms), 8);
  std::string too_many = Entry(6, 0, now_ms + 60000);
  PutLe(&too_many, 10001, 4);
  std::string v1_block = good;
  v1_block[0] = 1;
  const std::vector<std::pair<std::string, std::string>> refused = {
      {std::string("\x04\x00\x00", 3),
       "ERR invalid rate-limit state: unsupported encoding version 4"},
      {EncodeV2({Entry(6, 5, now_ms)}), "ERR invalid rate-limit state: bad window"},
      {EncodeV2({Entry(0x80 | 6, 0, now_ms)}), "ERR invalid rate-limit state: block of leases"},
      {EncodeV2({Entry(0x80 | 1, 0, now_ms)}), "ERR invalid rate-limit state: bad window"},
      {EncodeV2({Entry(0x87, 1000, now_ms)}), "ERR invalid rate-limit state: unknown algorithm"},
      {EncodeV2({zero_nonce}), "ERR invalid rate-limit state: bad lease"},
      {EncodeV2({too_many}), "ERR invalid rate-limit state: too many leases"},
      {EncodeV2({block, block}), "ERR invalid rate-limit state: duplicate state"},
      {v1_block, "ERR invalid rate-limit state: unknown algorithm"},
      {good.substr(0, good.size() - 3), "ERR invalid rate-limit state: truncated entry"},
  };
  for (const auto& [payload, error] : refused) {
    EXPECT_EQ(server().Call({"RL.SETSTATE", "refused", payload}).str, error);
  }
  EXPECT_EQ(server().Call({"EXISTS", "refused"}).integer, 0);

  // Random byte flips of a state with everything: refused or usable, never a crash.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 300; ++i) {
    std::string bad = good;
    for (int f = 0; f < 1 + static_cast<int>(rng() % 3); ++f) {
      bad[rng() % bad.size()] = static_cast<char>(rng());
    }
    const std::string key = "flip:" + std::to_string(i % 5);
    ASSERT_NE(server().Call({"RL.SETSTATE", key, bad}).type, 'X') << i;
    for (const Cmd& cmd :
         std::vector<Cmd>{{"RL.ACQUIRE", key, "CONCURRENCY", "3"},
                          {"RL.RELEASE", key, std::string(40, 'a')},
                          {"RL.CHECK", key, "FIXED_WINDOW", "9", "1m", "BLOCK", "1s"},
                          {"RL.CHARGE", key, "FIXED_WINDOW", "9", "1m", "COST", "5"},
                          {"RL.REFUND", key, "FIXED_WINDOW", "9", "1m", "COST", "50"},
                          {"RL.RESET", key, "CONCURRENCY", "1", "FIXED_WINDOW", "9", "1m"}}) {
      ASSERT_NE(server().Call(cmd).type, 'X') << i << " " << cmd[0] << "\n" << server().LogTail();
    }
  }
  EXPECT_EQ(server().Call({"PING"}).str, "PONG");
}

}  // namespace
}  // namespace rl::test

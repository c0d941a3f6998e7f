// rl.so under a flood of new keys: past its bound (a share of maxmemory, MAX-KEYS) new keys get
// the overflow decision and are not stored, so Redis never reaches maxmemory through them and
// never evicts the keys that are limiting someone (a key at its limit, a running BLOCK, a held
// lease), whatever the eviction policy; keys that exist keep being enforced, and what a master
// replicates or the AOF replays is never refused.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

using Cmd = std::vector<std::string>;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Pipelined RL.CHECK flood:<thread>:<n> SLIDING_LOG 10 1m, every key new (the issue's
// `redis-benchmark -r 100000000 ... RL.CHECK flood:__rand_int__ SLIDING_LOG 10 1m`), until
// destroyed.
class Flood {
 public:
  Flood(int port, int threads) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, port, t] { Run(port, t); });
    }
  }
  ~Flood() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
  }
  long long sent() const { return sent_; }
  long long errors() const { return errors_; }

 private:
  void Run(int port, int t) {
    constexpr int kBatch = 64;
    RespClient c(port);
    const std::string prefix = "flood:" + std::to_string(t) + ":";
    long long n = 0;
    while (!stop_) {
      std::string batch;
      for (int i = 0; i < kBatch; ++i) {
        batch += RespClient::Encode(
            {"RL.CHECK", prefix + std::to_string(n++), "SLIDING_LOG", "10", "1m"});
      }
      if (!c.SendRaw(batch)) return;
      for (int i = 0; i < kBatch; ++i) {
        const Reply r = c.Read();
        if (r.closed()) return;
        if (r.is_error()) ++errors_;  // OOM under noeviction without the bound
      }
      sent_ += kBatch;
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<long long> sent_{0};
  std::atomic<long long> errors_{0};
  std::vector<std::thread> threads_;
};

long long Stat(RedisServer& server, const std::string& section, const std::string& field) {
  const std::string v = server.InfoField(section, field);
  return v.empty() ? -1 : std::stoll(v);
}

class RlFloodTest : public ::testing::TestWithParam<const char*> {};

// The attack, bounded: fill an 8 MB Redis with new keys while `hot` (at its limit) is
// checked every 5 ms, then keep flooding for several turnovers of the store. Without the bound,
// volatile-ttl and allkeys-lru evict `hot` (which then starts over with 10 fresh requests),
// noeviction answers OOM; with it, nothing is evicted and nothing is allowed again.
TEST_P(RlFloodTest, KeyFloodUnderMaxmemoryFreesNoLimitedKey) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  const std::string policy = GetParam();
  RedisServer server(RlOptions().With("maxmemory 8mb").With("maxmemory-policy " + policy));
  ASSERT_TRUE(server.Start());
  RespClient c(server.port());
  const Cmd hot = {"RL.CHECK", "hot", "SLIDING_LOG", "10", "1m"};
  const Clock::time_point first = Clock::now();
  for (int i = 0; i < 10; ++i) ASSERT_EQ(c.Call(hot).Ints().at(0), 1);
  ASSERT_EQ(c.Call(hot).Ints().at(0), 0);
  const Cmd block = {"RL.CHECK", "blocked", "FIXED_WINDOW", "1", "1h", "BLOCK", "1h"};
  ASSERT_EQ(c.Call(block).Ints().at(0), 1);
  ASSERT_EQ(c.Call(block).Ints().at(0), 0);  // starts the block
  const Cmd acquire = {"RL.ACQUIRE", "lease", "CONCURRENCY", "1", "LEASE", "1h"};
  const Reply lease = c.Call(acquire);
  ASSERT_EQ(lease.elements.size(), 6u) << Show(lease);
  ASSERT_FALSE(lease.elements[5].is_null()) << Show(lease);

  long long allowed = 0, errors = 0, checks = 0, at_pressure = -1;
  Clock::time_point pressure_time;
  {
    Flood flood(server.port(), 2);
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(40);
    while (Clock::now() < deadline) {
      const Reply r = c.Call(hot);
      ++checks;
      if (r.is_error() || r.closed()) {
        ++errors;
      } else if (r.Ints().at(0) == 1) {
        ++allowed;
      }
      if (checks % 16 == 0) {
        if (at_pressure < 0 && (Stat(server, "rl", "rl_overflows") > 0 ||
                                Stat(server, "stats", "evicted_keys") > 0 || flood.errors() > 0)) {
          at_pressure = flood.sent();  // about the keys that fill the store
          pressure_time = Clock::now();
        }
        // Several turnovers of the store past the point where it filled.
        if (at_pressure >= 0 && flood.sent() >= 5 * at_pressure &&
            Clock::now() - pressure_time > std::chrono::seconds(2)) {
          break;
        }
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    std::cout << "[flood " << policy << "] flood sent " << flood.sent() << " (full at "
              << at_pressure << "), flood errors " << flood.errors() << ", hot checks " << checks
              << ", hot allowed again " << allowed << ", hot errors " << errors << ", evicted "
              << Stat(server, "stats", "evicted_keys") << ", rl_overflows "
              << Stat(server, "rl", "rl_overflows") << "\n";
  }
  ASSERT_GE(at_pressure, 0) << "the flood never filled the store";
  ASSERT_LT(Clock::now() - first, std::chrono::seconds(55)) << "hot's window nearly passed";
  EXPECT_EQ(allowed, 0) << "hot was freed and allowed again";
  EXPECT_EQ(errors, 0) << "hot was not answered";
  EXPECT_EQ(Stat(server, "stats", "evicted_keys"), 0);
  EXPECT_GT(Stat(server, "rl", "rl_overflows"), 0);
  EXPECT_EQ(c.Call(hot).Ints().at(0), 0);
  EXPECT_EQ(c.Call(block).Ints().at(0), 0) << "the block was freed";
  const Reply second = c.Call(acquire);
  ASSERT_EQ(second.elements.size(), 6u) << Show(second);
  EXPECT_EQ(second.elements[0].integer, 0) << "the lease was freed";
  EXPECT_TRUE(second.elements[5].is_null());
  EXPECT_TRUE(server.running()) << server.LogTail();
}

INSTANTIATE_TEST_SUITE_P(Policies, RlFloodTest,
                         ::testing::Values("noeviction", "volatile-ttl", "allkeys-lru"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

// MAX-KEYS, fail-open (the default): a new key past the bound is answered as a first call and
// not stored; keys that exist keep counting.
TEST(RlOverflowTest, FailOpenAnswersNewKeysUncounted) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer server(RlOptions("MAX-KEYS 2"));
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(server.InfoField("rl", "rl_overflow_mode"), "fail-open");
  const Cmd limit = {"FIXED_WINDOW", "3", "1h"};
  auto check = [&](const std::string& key) {
    Cmd cmd = {"RL.CHECK", key};
    cmd.insert(cmd.end(), limit.begin(), limit.end());
    return server.Call(cmd).Ints();
  };
  ASSERT_EQ(check("a").at(0), 1);
  ASSERT_EQ(check("b").at(0), 1);
  EXPECT_EQ(server.Call({"DBSIZE"}).integer, 2);
  for (int i = 0; i < 3; ++i) {
    const std::vector<int64_t> d = check("new");
    EXPECT_EQ(d.at(0), 1);
    EXPECT_EQ(d.at(2), 2) << "not counted: every call is a first call";
  }
  EXPECT_EQ(server.Call({"EXISTS", "new"}).integer, 0);
  EXPECT_EQ(RlStat(server, "overflows"), 3);
  // A charge or an acquire of a new key is not stored either; an acquire then holds no lease.
  EXPECT_EQ(server.Call({"RL.CHARGE", "new", "FIXED_WINDOW", "3", "1h", "COST", "2"}).Ints().at(2),
            1);
  const Reply acquired = server.Call({"RL.ACQUIRE", "new", "CONCURRENCY", "1"});
  ASSERT_EQ(acquired.elements.size(), 6u) << Show(acquired);
  EXPECT_EQ(acquired.elements[0].integer, 1);
  EXPECT_TRUE(acquired.elements[5].is_null());
  EXPECT_EQ(server.Call({"EXISTS", "new"}).integer, 0);
  EXPECT_EQ(RlStat(server, "overflows"), 5);
  // The existing keys are enforced as usual.
  EXPECT_EQ(check("a").at(2), 1);
  EXPECT_EQ(check("a").at(2), 0);
  EXPECT_EQ(check("a").at(0), 0) << "a is at its limit";
  // A denial or a peek stores nothing, so it is no overflow.
  EXPECT_EQ(server.Call({"RL.PEEK", "new", "FIXED_WINDOW", "3", "1h"}).Ints().at(2), 2);
  EXPECT_EQ(RlStat(server, "overflows"), 5);
  // Room again: new keys are stored.
  ASSERT_EQ(server.Call({"DEL", "b"}).integer, 1);
  EXPECT_EQ(check("new").at(2), 2);
  EXPECT_EQ(check("new").at(2), 1);
  EXPECT_EQ(server.Call({"EXISTS", "new"}).integer, 1);
}

// Fail-closed: a new key past the bound is denied, consuming nothing, with a retry of at most a
// second; an acquire takes no lease.
TEST(RlOverflowTest, FailClosedDeniesNewKeys) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer server(RlOptions("MAX-KEYS 1 OVERFLOW fail-closed"));
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(server.InfoField("rl", "rl_overflow_mode"), "fail-closed");
  EXPECT_EQ(server.Call({"RL.CHECK", "a", "GCRA", "5", "1m"}).Ints().at(0), 1);
  EXPECT_EQ(server.Call({"RL.CHECK", "b", "GCRA", "5", "1m", "FIXED_WINDOW", "10", "200ms"}).Ints(),
            (std::vector<int64_t>{0, 5, 0, 1000, 1000}));
  const Reply acquired = server.Call({"RL.ACQUIRE", "c", "CONCURRENCY", "1"});
  ASSERT_EQ(acquired.elements.size(), 6u) << Show(acquired);
  EXPECT_EQ(acquired.elements[0].integer, 0);
  EXPECT_TRUE(acquired.elements[5].is_null());
  EXPECT_EQ(server.Call({"DBSIZE"}).integer, 1);
  EXPECT_EQ(RlStat(server, "overflows"), 2);
  // The existing key, new limits on it included, is enforced as usual.
  EXPECT_EQ(server.Call({"RL.CHECK", "a", "GCRA", "5", "1m"}).Ints().at(2), 3);
  EXPECT_EQ(server.Call({"RL.CHECK", "a", "FIXED_WINDOW", "1", "1m"}).Ints().at(0), 1);
  EXPECT_EQ(server.Call({"RL.CHECK", "a", "FIXED_WINDOW", "1", "1m"}).Ints().at(0), 0);
  EXPECT_EQ(RlStat(server, "overflows"), 2);
}

// What a master replicates and what the AOF replays is stored whatever the bound: a replica and
// a restarted node hold every key the master holds.
TEST(RlOverflowTest, ReplicationAndAofAreNeverRefused) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer master(RlOptions().With("appendonly yes").With("appendfsync always"));
  RedisServer replica(RlOptions("MAX-KEYS 1 OVERFLOW fail-closed"));
  ASSERT_TRUE(master.Start());
  ASSERT_TRUE(replica.Start());
  ASSERT_TRUE(StartReplication(master, replica));
  for (const char* key : {"k1", "k2", "k3"}) {
    ASSERT_EQ(master.Call({"RL.CHECK", key, "SLIDING_LOG", "5", "1h"}).Ints().at(0), 1);
  }
  ASSERT_TRUE(WaitForReplicas(master, 1));
  EXPECT_EQ(replica.Call({"DBSIZE"}).integer, 3);
  EXPECT_EQ(RlStat(replica, "overflows"), 0);
  EXPECT_EQ(replica.Call({"RL.PEEK", "k3", "SLIDING_LOG", "5", "1h"}).Ints().at(2), 3);

  // The master's AOF, replayed by a node whose bound is one key.
  ASSERT_TRUE(master.Stop());
  RedisServer reloaded(RlOptions("MAX-KEYS 1 OVERFLOW fail-closed")
                           .With("dir " + master.dir())
                           .With("appendonly yes"));
  ASSERT_TRUE(reloaded.Start());
  EXPECT_EQ(reloaded.Call({"DBSIZE"}).integer, 3);
  EXPECT_EQ(RlStat(reloaded, "overflows"), 0);
  EXPECT_EQ(reloaded.Call({"RL.PEEK", "k3", "SLIDING_LOG", "5", "1h"}).Ints().at(2), 3);
  // And the bound applies to its own new keys.
  EXPECT_EQ(reloaded.Call({"RL.CHECK", "k4", "SLIDING_LOG", "5", "1h"}).Ints().at(0), 0);
  EXPECT_EQ(RlStat(reloaded, "overflows"), 1);
}

}  // namespace
}  // namespace rl::test

// The RL.* contract of rl.so in one real redis-server: the cases rl-server's tests cover
// (tests/server/rl_commands_test.cc: the seed scenario for every algorithm, RESP2/RESP3 shapes,
// HEADERS, all-or-nothing limits, options, named and shadow policies, redis-cell's CL.THROTTLE,
// pipelining), then what only the module has: the Redis key (TYPE, WRONGTYPE, PTTL = time until
// fresh, MEMORY USAGE), command metadata, persistence bookkeeping, maxmemory, and the POLICIES
// load argument.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// One redis-server with rl.so per test process (ctest runs each test in its own process).
class RlCommandsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!RedisAvailable()) return;
    server_ = new RedisServer(RlOptions());
    started_ = static_cast<bool>(server_->Start());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
    ASSERT_TRUE(started_) << server_->LogTail();
    ASSERT_EQ(server_->Call({"FLUSHALL"}).str, "OK");  // when the binary runs every test at once
  }
  void TearDown() override {
    EXPECT_TRUE(server_->running()) << "redis-server died\n" << server_->LogTail();
  }
  int port() const { return server_->port(); }
  RedisServer& server() { return *server_; }

  static inline RedisServer* server_ = nullptr;
  static inline bool started_ = false;
};

class SeedScenarioTest : public RlCommandsTest, public ::testing::WithParamInterface<const char*> {
};

// Limit 5, 8 parallel clients: exactly 5 allowed, 3 denied with a positive retry-after; another
// key is unaffected; after the retry-after the next call passes.
TEST_P(SeedScenarioTest, FiveOfEightThenRecovers) {
  const std::string algorithm = GetParam();
  const std::string key = "seed:" + algorithm;
  const std::vector<std::string> cmd = {"RL.CHECK", key, algorithm, "5", "1s"};
  constexpr int kClients = 8;
  std::vector<Reply> replies(kClients);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      RespClient client(port());
      ready.fetch_add(1);
      while (ready.load() < kClients) std::this_thread::yield();
      replies[i] = client.Call(cmd);
    });
  }
  for (auto& t : threads) t.join();
  int allowed = 0, denied = 0;
  int64_t max_retry = 0;
  for (const Reply& r : replies) {
    ASSERT_EQ(r.type, '*') << Show(r);
    ASSERT_EQ(r.elements.size(), 5u);
    std::vector<int64_t> v = r.Ints();
    EXPECT_EQ(v[1], 5);
    EXPECT_GE(v[2], 0);
    if (v[0] == 1) {
      ++allowed;
    } else {
      ++denied;
      EXPECT_GT(v[3], 0) << algorithm << ": a denial carries a positive retry-after";
      max_retry = std::max(max_retry, v[3]);
    }
  }
  EXPECT_EQ(allowed, 5) << algorithm;
  EXPECT_EQ(denied, 3) << algorithm;

  RespClient client(port());
  Reply other = client.Call({"RL.CHECK", key + ":other", algorithm, "5", "1s"});
  ASSERT_EQ(other.type, '*');
  EXPECT_EQ(other.elements[0].integer, 1) << "another key is unaffected";

  std::this_thread::sleep_for(milliseconds(max_retry + 20));
  Reply after = client.Call(cmd);
  ASSERT_EQ(after.type, '*');
  EXPECT_EQ(after.elements[0].integer, 1) << algorithm << ": passes after retry-after";
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, SeedScenarioTest,
                         ::testing::Values("TOKEN_BUCKET", "GCRA", "SLIDING_LOG", "SLIDING_WINDOW",
                                           "FIXED_WINDOW", "LEAKY_BUCKET"),
                         [](const auto& info) { return std::string(info.param); });

TEST_F(RlCommandsTest, Resp2ArrayAndResp3Map) {
  RespClient c(port());
  Reply r = c.Call({"rl.check", "shape", "token_bucket", "10", "1m"});
  ASSERT_EQ(r.type, '*');
  EXPECT_EQ(r.Ints(), (std::vector<int64_t>{1, 10, 9, 0, 6000}));

  Reply hello = c.Call({"HELLO", "3"});
  ASSERT_EQ(hello.type, '%');
  r = c.Call({"RL.CHECK", "shape", "TOKEN_BUCKET", "10", "1m", "COST", "2"});
  ASSERT_EQ(r.type, '%') << Show(r);
  ASSERT_EQ(r.elements.size(), 10u);
  const char* names[] = {"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms"};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(r.elements[2 * i].str, names[i]);
  EXPECT_EQ(r.Get("allowed")->integer, 1);
  EXPECT_EQ(r.Get("remaining")->integer, 7);

  // PEEK changes nothing.
  Reply p1 = c.Call({"RL.PEEK", "shape", "TOKEN_BUCKET", "10", "1m"});
  Reply p2 = c.Call({"RL.PEEK", "shape", "TOKEN_BUCKET", "10", "1m"});
  ASSERT_EQ(p1.type, '%');
  EXPECT_EQ(p1.Get("remaining")->integer, p2.Get("remaining")->integer);
  // RESET removes the state: the next check sees a full bucket.
  Reply reset = c.Call({"RL.RESET", "shape", "TOKEN_BUCKET", "10", "1m"});
  EXPECT_EQ(reset.type, ':');
  EXPECT_EQ(reset.integer, 1);
  r = c.Call({"RL.CHECK", "shape", "TOKEN_BUCKET", "10", "1m"});
  EXPECT_EQ(r.Get("remaining")->integer, 9);
}

TEST_F(RlCommandsTest, MultipleLimitsAllOrNothing) {
  RespClient c(port());
  // The second limit (2 per minute) binds; a denial by it consumes nothing from the first.
  std::vector<std::string> cmd = {"RL.CHECK", "multi", "SLIDING_WINDOW", "100", "1m",
                                  "FIXED_WINDOW", "2", "1m"};
  EXPECT_EQ(c.Call(cmd).Ints()[0], 1);
  EXPECT_EQ(c.Call(cmd).Ints()[0], 1);
  std::vector<int64_t> denied = c.Call(cmd).Ints();
  EXPECT_EQ(denied[0], 0);
  EXPECT_EQ(denied[1], 2);
  Reply peek = c.Call({"RL.PEEK", "multi", "SLIDING_WINDOW", "100", "1m", "COST", "0"});
  EXPECT_EQ(peek.Ints()[2], 98) << "the denied call took nothing from the minute window";
  // Both states live in one Redis key (one hash slot).
  EXPECT_EQ(c.Call({"DBSIZE"}).integer, 1);
}

TEST_F(RlCommandsTest, Options) {
  RespClient c(port());
  Reply r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "1s", "COST", "-1"});
  EXPECT_EQ(r.str, "ERR COST must not be negative");
  r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "1s", "BOGUS"});
  EXPECT_EQ(r.str, "ERR syntax error");
  r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "1s", "COST", "x"});
  EXPECT_EQ(r.str, "ERR value is not an integer or out of range");
  r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "1s", "COST", "0"});
  EXPECT_EQ(r.Ints()[2], 5) << "cost 0 peeks";
  r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "1s", "COST", "6"});
  EXPECT_EQ(r.Ints()[0], 0);
  EXPECT_EQ(r.Ints()[3], -1) << "cost above capacity: never";
  EXPECT_EQ(c.Call({"EXISTS", "opt"}).integer, 0) << "nothing consumed, nothing stored";
  r = c.Call({"RL.CHECK", "opt", "NOPE", "5", "1s"});
  EXPECT_TRUE(r.is_error());
  r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "soon"});
  EXPECT_TRUE(r.is_error());
  r = c.Call({"RL.CHECK", "opt"});
  EXPECT_EQ(r.str, "ERR wrong number of arguments for 'rl.check' command");
  r = c.Call({"RL.CHECK", "opt", "POLICY", "no-such-policy"});
  EXPECT_EQ(r.str, "ERR no such policy 'no-such-policy'");
  EXPECT_EQ(c.Call({"PING"}).str, "PONG") << "errors leave the connection usable";
}

TEST_F(RlCommandsTest, Headers) {
  RespClient c(port());
  std::vector<std::string> cmd = {"RL.CHECK", "hdr", "FIXED_WINDOW", "1", "1m", "HEADERS"};
  Reply r = c.Call(cmd);
  ASSERT_EQ(r.type, '*');
  ASSERT_EQ(r.elements.size(), 6u);
  const Reply& h = r.elements[5];
  ASSERT_EQ(h.type, '*');
  ASSERT_NE(h.Get("X-RateLimit-Limit"), nullptr);
  EXPECT_EQ(h.Get("X-RateLimit-Limit")->str, "1");
  EXPECT_EQ(h.Get("X-RateLimit-Remaining")->str, "0");
  ASSERT_NE(h.Get("X-RateLimit-Reset"), nullptr);
  // Unix seconds from the node's wall-anchored clock: about a minute from now.
  const long long now_s = std::stoll(c.Call({"TIME"}).elements.at(0).str);
  EXPECT_NEAR(static_cast<double>(std::stoll(h.Get("X-RateLimit-Reset")->str)),
              static_cast<double>(now_s + 60), 3.0);
  EXPECT_EQ(h.Get("RateLimit-Policy")->str, "\"default\";q=1;w=60");
  EXPECT_NE(h.Get("RateLimit"), nullptr);
  EXPECT_EQ(h.Get("Retry-After"), nullptr) << "only when denied";

  r = c.Call(cmd);
  ASSERT_EQ(r.elements.size(), 6u);
  EXPECT_EQ(r.elements[0].integer, 0);
  ASSERT_NE(r.elements[5].Get("Retry-After"), nullptr);
  EXPECT_GT(std::stoll(r.elements[5].Get("Retry-After")->str), 0);

  c.Call({"HELLO", "3"});
  r = c.Call(cmd);
  ASSERT_EQ(r.type, '%');
  ASSERT_NE(r.Get("headers"), nullptr);
  EXPECT_EQ(r.Get("headers")->type, '%');
  EXPECT_NE(r.Get("headers")->Get("Retry-After"), nullptr);
}

TEST_F(RlCommandsTest, PolicySetGetDelList) {
  RespClient c(port());
  EXPECT_EQ(c.Call({"RL.POLICY", "SET", "p1", "TOKEN_BUCKET", "3", "1m"}).str, "OK");
  EXPECT_EQ(c.Call({"rl.policy", "set", "p2", "SLIDING_WINDOW", "100", "1m", "FIXED_WINDOW",
                    "5000", "1d"})
                .str,
            "OK");
  EXPECT_EQ(c.Call({"RL.POLICY", "GET", "p1"}).str, "TOKEN_BUCKET 3 1m");
  EXPECT_TRUE(c.Call({"RL.POLICY", "GET", "nope"}).is_null());
  Reply list = c.Call({"RL.POLICY", "LIST"});
  ASSERT_EQ(list.type, '*');
  ASSERT_NE(list.Get("p1"), nullptr);
  ASSERT_NE(list.Get("p2"), nullptr);
  EXPECT_EQ(list.Get("p2")->str, "SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d");

  Reply r = c.Call({"RL.CHECK", "u", "POLICY", "p1"});
  EXPECT_EQ(r.Ints(), (std::vector<int64_t>{1, 3, 2, 0, 20000}));
  // A policy's state is its own: the same inline limit on the same key starts fresh.
  r = c.Call({"RL.CHECK", "u", "TOKEN_BUCKET", "3", "1m"});
  EXPECT_EQ(r.Ints()[2], 2);
  EXPECT_EQ(c.Call({"RL.RESET", "u", "POLICY", "p1"}).integer, 1);

  EXPECT_TRUE(c.Call({"RL.POLICY", "SET", "bad", "TOKEN_BUCKET", "0", "1m"}).is_error());
  EXPECT_TRUE(c.Call({"RL.POLICY", "SET", "bad", "COST", "1"}).is_error());
  EXPECT_EQ(c.Call({"RL.POLICY", "DEL", "p1"}).integer, 1);
  EXPECT_EQ(c.Call({"RL.POLICY", "DEL", "p1"}).integer, 0);
  EXPECT_TRUE(c.Call({"RL.CHECK", "u", "POLICY", "p1"}).is_error());
  EXPECT_EQ(c.Call({"RL.POLICY", "NOPE"}).str, "ERR unknown subcommand 'NOPE'. Try RL.POLICY HELP.");
  EXPECT_EQ(c.Call({"RL.POLICY", "GET"}).str,
            "ERR wrong number of arguments for 'rl.policy|get' command");
  Reply help = c.Call({"RL.POLICY", "HELP"});
  ASSERT_EQ(help.type, '*');
  ASSERT_FALSE(help.elements.empty());
  EXPECT_EQ(help.elements[0].str.rfind("RL.POLICY <subcommand>", 0), 0u) << Show(help);
}

TEST_F(RlCommandsTest, ShadowPolicyAllowsAndCounts) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "shadowed", "FIXED_WINDOW", "1", "1m", "SHADOW"}).str,
            "OK");
  const long long before = RlStat(server(), "shadow_denied");
  EXPECT_EQ(c.Call({"RL.CHECK", "s", "POLICY", "shadowed"}).Ints()[0], 1);
  std::vector<int64_t> second = c.Call({"RL.CHECK", "s", "POLICY", "shadowed"}).Ints();
  EXPECT_EQ(second[0], 1) << "shadow mode never denies";
  EXPECT_EQ(second[3], 0);
  c.Call({"HELLO", "3"});
  Reply r = c.Call({"RL.CHECK", "s", "POLICY", "shadowed"});
  ASSERT_EQ(r.type, '%');
  EXPECT_EQ(r.Get("allowed")->integer, 1);
  ASSERT_NE(r.Get("shadow_denied"), nullptr);
  EXPECT_EQ(r.Get("shadow_denied")->integer, 1);
  EXPECT_EQ(RlStat(server(), "shadow_denied"), before + 2);
}

// redis-cell's README: CL.THROTTLE user123 15 30 60 -> 0, 16, 15, -1, 2.
TEST_F(RlCommandsTest, ClThrottleReadmeExample) {
  RespClient c(port());
  Reply r = c.Call({"CL.THROTTLE", "user123", "15", "30", "60"});
  EXPECT_EQ(r.Ints(), (std::vector<int64_t>{0, 16, 15, -1, 2}));
  r = c.Call({"CL.THROTTLE", "user123", "15", "30", "60", "1"});
  EXPECT_EQ(r.Ints(), (std::vector<int64_t>{0, 16, 14, -1, 4}));
  // Its own namespace: RL.CHECK on the same key does not see CL.THROTTLE's state.
  Reply check = c.Call({"RL.CHECK", "user123", "GCRA", "30", "60s", "BURST", "16"});
  EXPECT_EQ(check.Ints()[2], 15);
  EXPECT_EQ(c.Call({"CL.THROTTLE", "k"}).str,
            "ERR wrong number of arguments for 'cl.throttle' command");
  EXPECT_TRUE(c.Call({"CL.THROTTLE", "k", "1", "2", "3", "4", "5"}).is_error());
  EXPECT_TRUE(c.Call({"CL.THROTTLE", "k", "x", "2", "3"}).is_error());
  EXPECT_EQ(c.Call({"CL.THROTTLE", "k", "1", "0", "3"}).str, "ERR Zero rates are not supported");
}

// redis-cell's rate limiter cases (limit 5 = max_burst 4, one per second) at one instant, and
// its end-to-end test (max_burst 0, 1 per 2 s): limited, then allowed after retry_after.
TEST_F(RlCommandsTest, ClThrottleRedisCellCases) {
  RespClient c(port());
  // Asking for more than the limit never passes and changes nothing.
  EXPECT_EQ(c.Call({"CL.THROTTLE", "cell", "4", "1", "1", "6"}).Ints(),
            (std::vector<int64_t>{1, 5, 5, -1, 0}));
  for (int i = 1; i <= 5; ++i) {
    EXPECT_EQ(c.Call({"CL.THROTTLE", "cell", "4", "1", "1"}).Ints(),
              (std::vector<int64_t>{0, 5, 5 - i, -1, i}));
  }
  EXPECT_EQ(c.Call({"CL.THROTTLE", "cell", "4", "1", "1"}).Ints(),
            (std::vector<int64_t>{1, 5, 0, 1, 5}));

  std::vector<std::string> cmd = {"CL.THROTTLE", "e2e", "0", "1", "2", "1"};
  EXPECT_EQ(c.Call(cmd).Ints(), (std::vector<int64_t>{0, 1, 0, -1, 2}));
  std::vector<int64_t> limited = c.Call(cmd).Ints();
  EXPECT_EQ(limited, (std::vector<int64_t>{1, 1, 0, 2, 2}));
  std::this_thread::sleep_for(seconds(limited[3]));
  EXPECT_EQ(c.Call(cmd).Ints(), (std::vector<int64_t>{0, 1, 0, -1, 2}));
}

TEST_F(RlCommandsTest, PipelinedRepliesInOrder) {
  RespClient c(port());
  std::string batch;
  for (int i = 0; i < 200; ++i) {
    batch += RespClient::Encode({"RL.CHECK", "pipe", "FIXED_WINDOW", "150", "1m"});
  }
  batch += "PING\r\n";  // inline, after multibulk
  ASSERT_TRUE(c.SendRaw(batch));
  for (int i = 0; i < 200; ++i) {
    Reply r = c.Read();
    ASSERT_EQ(r.type, '*');
    EXPECT_EQ(r.elements[0].integer, i < 150 ? 1 : 0) << i;
    if (i < 150) {
      EXPECT_EQ(r.elements[2].integer, 149 - i);
    }
  }
  EXPECT_EQ(c.Read().str, "PONG");
  EXPECT_EQ(c.Call({"DBSIZE"}).integer, 1);
}

// ---------------------------------------------------------------------------------------------
// The Redis key.

constexpr const char* kWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value";

TEST_F(RlCommandsTest, OneKeyOfTypeRatelimitAndWrongtype) {
  RespClient c(port());
  // Every state of one user key (inline limits, two policies, CL.THROTTLE) is one Redis key.
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "a", "GCRA", "5", "1m"}).str, "OK");
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "b", "SLIDING_LOG", "5", "1m"}).str, "OK");
  EXPECT_EQ(c.Call({"RL.CHECK", "rl:user:42", "GCRA", "5", "1m", "FIXED_WINDOW", "9", "1h"})
                .Ints()[0],
            1);
  EXPECT_EQ(c.Call({"RL.CHECK", "rl:user:42", "POLICY", "a"}).Ints()[0], 1);
  EXPECT_EQ(c.Call({"RL.CHECK", "rl:user:42", "POLICY", "b"}).Ints()[0], 1);
  EXPECT_EQ(c.Call({"CL.THROTTLE", "rl:user:42", "4", "1", "1"}).Ints()[0], 0);
  EXPECT_EQ(c.Call({"DBSIZE"}).integer, 1);
  EXPECT_EQ(c.Call({"TYPE", "rl:user:42"}).str, "ratelimit");
  EXPECT_EQ(c.Call({"GET", "rl:user:42"}).str, kWrongType);

  // The user's key is the Redis key: application data under that name answers WRONGTYPE.
  ASSERT_EQ(c.Call({"SET", "user:42", "app data"}).str, "OK");
  ASSERT_EQ(c.Call({"HSET", "h", "f", "v"}).integer, 1);
  for (const std::string key : {"user:42", "h"}) {
    EXPECT_EQ(c.Call({"RL.CHECK", key, "GCRA", "5", "1m"}).str, kWrongType);
    EXPECT_EQ(c.Call({"RL.PEEK", key, "GCRA", "5", "1m"}).str, kWrongType);
    EXPECT_EQ(c.Call({"RL.RESET", key, "GCRA", "5", "1m"}).str, kWrongType);
    EXPECT_EQ(c.Call({"CL.THROTTLE", key, "1", "1", "1"}).str, kWrongType);
    EXPECT_EQ(c.Call({"RL.CHECK", key, "POLICY", "a", "COST", "0"}).str, kWrongType);
  }
  EXPECT_EQ(c.Call({"GET", "user:42"}).str, "app data") << "left untouched";
  // Argument errors come first (as rl-server, which has no types).
  EXPECT_EQ(c.Call({"RL.CHECK", "user:42", "GCRA", "0", "1m"}).str,
            "ERR limit must be a positive integer");
  // COPY, RENAME and DEL treat it as any value.
  EXPECT_EQ(c.Call({"COPY", "rl:user:42", "rl:user:43"}).integer, 1);
  EXPECT_EQ(c.Call({"RL.PEEK", "rl:user:43", "POLICY", "a"}).Ints(),
            c.Call({"RL.PEEK", "rl:user:42", "POLICY", "a"}).Ints());
  EXPECT_EQ(c.Call({"DEBUG", "DIGEST-VALUE", "rl:user:43"}).elements.at(0).str,
            c.Call({"DEBUG", "DIGEST-VALUE", "rl:user:42"}).elements.at(0).str);
  EXPECT_EQ(c.Call({"RENAME", "rl:user:43", "rl:user:44"}).str, "OK");
  EXPECT_EQ(c.Call({"TYPE", "rl:user:44"}).str, "ratelimit");
  EXPECT_EQ(c.Call({"DEL", "rl:user:44"}).integer, 1);
}

TEST_F(RlCommandsTest, PttlIsTheTimeUntilFreshAndIdleKeysVanish) {
  RespClient c(port());
  // One limit: the key lives exactly until its state is fresh again (reset_after_ms).
  struct Case {
    std::vector<std::string> limit;
    int calls;
  } cases[] = {{{"FIXED_WINDOW", "3", "20s"}, 2},     {{"TOKEN_BUCKET", "10", "30s"}, 4},
               {{"GCRA", "10", "30s"}, 3},            {{"SLIDING_WINDOW", "5", "20s"}, 2},
               {{"SLIDING_LOG", "5", "20s"}, 3},      {{"LEAKY_BUCKET", "4", "20s"}, 2}};
  for (const Case& tc : cases) {
    const std::string key = "ttl:" + tc.limit[0];
    std::vector<std::string> cmd = {"RL.CHECK", key};
    cmd.insert(cmd.end(), tc.limit.begin(), tc.limit.end());
    Reply r;
    for (int i = 0; i < tc.calls; ++i) r = c.Call(cmd);
    const long long pttl = c.Call({"PTTL", key}).integer;
    ASSERT_EQ(r.type, '*') << Show(r);
    const int64_t reset_after = r.elements[4].integer;
    EXPECT_GT(pttl, 0) << key;
    EXPECT_LE(pttl, reset_after + 5) << key;
    EXPECT_GE(pttl, reset_after - 1000) << key << ": a generous bound for a loaded machine";
  }
  // Several limits: the longest wait until all are fresh.
  c.Call({"RL.CHECK", "ttl:multi", "GCRA", "10", "1s", "FIXED_WINDOW", "10", "40s"});
  const long long multi = c.Call({"PTTL", "ttl:multi"}).integer;
  EXPECT_GT(multi, 39000);
  EXPECT_LE(multi, 40000);

  // Nothing stored for a denied, zero-cost or peeking call on a fresh key.
  c.Call({"RL.CHECK", "ttl:none", "GCRA", "1", "1m", "COST", "2"});
  c.Call({"RL.CHECK", "ttl:none", "GCRA", "1", "1m", "COST", "0"});
  c.Call({"RL.PEEK", "ttl:none", "GCRA", "1", "1m"});
  EXPECT_EQ(c.Call({"EXISTS", "ttl:none"}).integer, 0);
  // RL.RESET of the last state deletes the key.
  ASSERT_EQ(c.Call({"RL.RESET", "ttl:multi", "GCRA", "10", "1s", "FIXED_WINDOW", "10", "40s"})
                .integer,
            2);
  EXPECT_EQ(c.Call({"EXISTS", "ttl:multi"}).integer, 0);

  // An idle key vanishes by itself (active expiry; nobody touches it).
  c.Call({"RL.CHECK", "ttl:short", "TOKEN_BUCKET", "10", "1s", "COST", "3"});
  EXPECT_LE(c.Call({"PTTL", "ttl:short"}).integer, 300);
  const long long expired_before = std::stoll(server().InfoField("stats", "expired_keys"));
  EXPECT_TRUE(WaitUntil(
      [&] { return std::stoll(server().InfoField("stats", "expired_keys")) > expired_before; },
      seconds(10), milliseconds(50)));
  EXPECT_EQ(c.Call({"EXISTS", "ttl:short"}).integer, 0);
}

TEST_F(RlCommandsTest, MemoryUsageReportsTheValue) {
  RespClient c(port());
  c.Call({"RL.CHECK", "mem:one", "TOKEN_BUCKET", "100", "1m"});
  const long long one = c.Call({"MEMORY", "USAGE", "mem:one"}).integer;
  EXPECT_GT(one, 0);
  c.Call({"RL.CHECK", "mem:four", "TOKEN_BUCKET", "100", "1m", "GCRA", "100", "1h",
          "SLIDING_WINDOW", "100", "1m", "FIXED_WINDOW", "100", "1d"});
  const long long four = c.Call({"MEMORY", "USAGE", "mem:four"}).integer;
  EXPECT_GE(four, one + 3 * 32) << "each state adds its entry";
  // A sliding log grows with what it holds.
  c.Call({"RL.CHECK", "mem:log", "SLIDING_LOG", "1000", "1m"});
  const long long log_small = c.Call({"MEMORY", "USAGE", "mem:log"}).integer;
  for (int i = 0; i < 100; ++i) {
    c.Call({"RL.CHECK", "mem:log", "SLIDING_LOG", "1000", "1m"});
    std::this_thread::sleep_for(milliseconds(1));  // distinct milliseconds: distinct runs
  }
  EXPECT_GT(c.Call({"MEMORY", "USAGE", "mem:log"}).integer, log_small);
  std::printf("MEMORY USAGE of a key with one token bucket: %lld bytes\n", one);
}

// COMMAND metadata: key at position 1, flags, docs (what cluster clients and ACLs read).
TEST_F(RlCommandsTest, CommandInfoKeysAndFlags) {
  RespClient c(port());
  for (const std::vector<std::string>& cmd :
       std::vector<std::vector<std::string>>{{"RL.CHECK", "k1", "GCRA", "5", "1s", "HEADERS"},
                                             {"RL.PEEK", "k1", "POLICY", "p"},
                                             {"RL.RESET", "k1", "GCRA", "5", "1s"},
                                             {"CL.THROTTLE", "k1", "1", "2", "3"}}) {
    std::vector<std::string> getkeys = {"COMMAND", "GETKEYS"};
    getkeys.insert(getkeys.end(), cmd.begin(), cmd.end());
    Reply keys = c.Call(getkeys);
    ASSERT_EQ(keys.elements.size(), 1u) << cmd[0] << " " << Show(keys);
    EXPECT_EQ(keys.elements[0].str, "k1");
  }
  auto flags_of = [&](const std::string& name) {
    Reply info = c.Call({"COMMAND", "INFO", name});
    std::vector<std::string> flags;
    if (info.elements.size() == 1 && info.elements[0].elements.size() > 2) {
      for (const Reply& f : info.elements[0].elements[2].elements) flags.push_back(f.str);
    }
    return flags;
  };
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (const std::string name : {"rl.check", "rl.reset", "cl.throttle", "rl.policy|set"}) {
    const auto flags = flags_of(name);
    EXPECT_TRUE(has(flags, "write") && has(flags, "denyoom")) << name;
  }
  const auto peek = flags_of("rl.peek");
  EXPECT_TRUE(has(peek, "readonly")) << "RL.PEEK runs on replicas";
  EXPECT_FALSE(has(peek, "write"));
  Reply docs = c.Call({"COMMAND", "DOCS", "rl.check"});
  ASSERT_EQ(docs.elements.size(), 2u) << Show(docs);
  ASSERT_NE(docs.elements[1].Get("summary"), nullptr);
  EXPECT_EQ(docs.elements[1].Get("summary")->str.rfind("Checks and consumes", 0), 0u);
}

// Redis's save points count changes: a call that changes a state counts, one that does not
// (denied, peek, zero cost) counts nothing, as it replicates nothing.
TEST_F(RlCommandsTest, OnlyChangesCountAsDirty) {
  RespClient c(port());
  auto dirty = [&] {
    return std::stoll(server().InfoField("persistence", "rdb_changes_since_last_save"));
  };
  const long long start = dirty();
  ASSERT_EQ(c.Call({"RL.CHECK", "dirty", "FIXED_WINDOW", "1", "1h"}).Ints()[0], 1);
  const long long after_allowed = dirty();
  EXPECT_GT(after_allowed, start);
  EXPECT_EQ(c.Call({"RL.CHECK", "dirty", "FIXED_WINDOW", "1", "1h"}).Ints()[0], 0);
  c.Call({"RL.PEEK", "dirty", "FIXED_WINDOW", "1", "1h"});
  c.Call({"RL.CHECK", "dirty", "FIXED_WINDOW", "1", "1h", "COST", "0"});
  c.Call({"CL.THROTTLE", "dirty", "0", "1", "3600", "0"});
  c.Call({"RL.RESET", "dirty", "GCRA", "1", "1h"});  // nothing there to remove
  EXPECT_EQ(dirty(), after_allowed);
}

// Over maxmemory every writer answers Redis's OOM error; reads still work.
TEST_F(RlCommandsTest, MaxmemoryRefusesWrites) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"RL.CHECK", "oom", "GCRA", "5", "1m"}).Ints()[0], 1);
  ASSERT_EQ(c.Call({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).str, "OK");
  ASSERT_EQ(c.Call({"CONFIG", "SET", "maxmemory", "1"}).str, "OK");
  const std::string oom = "OOM command not allowed when used memory > 'maxmemory'.";
  EXPECT_EQ(c.Call({"RL.CHECK", "oom", "GCRA", "5", "1m"}).str, oom);
  EXPECT_EQ(c.Call({"RL.CHECK", "oom2", "GCRA", "5", "1m", "HEADERS"}).str, oom);
  EXPECT_EQ(c.Call({"RL.RESET", "oom", "GCRA", "5", "1m"}).str, oom);
  EXPECT_EQ(c.Call({"CL.THROTTLE", "oom", "1", "1", "1"}).str, oom);
  EXPECT_EQ(c.Call({"RL.POLICY", "SET", "p", "GCRA", "5", "1m"}).str, oom);
  EXPECT_EQ(c.Call({"RL.PEEK", "oom", "GCRA", "5", "1m"}).Ints()[2], 3) << "reads still answer";
  EXPECT_TRUE(c.Call({"RL.POLICY", "GET", "p"}).is_null());
  ASSERT_EQ(c.Call({"CONFIG", "SET", "maxmemory", "0"}).str, "OK");
  EXPECT_EQ(c.Call({"RL.CHECK", "oom", "GCRA", "5", "1m"}).Ints()[2], 3);
}

// ---------------------------------------------------------------------------------------------
// Bad input: every error rl-server gives (tests/module/rl_parity_test.cc compares the texts),
// random argument soup, and forged RL.SETSTATE payloads never crash the server.

TEST_F(RlCommandsTest, RandomArgumentsNeverCrash) {
  RespClient c(port());
  const std::vector<std::string> verbs = {"RL.CHECK",   "RL.PEEK",     "RL.RESET",  "CL.THROTTLE",
                                          "RL.POLICY",  "RL.SETSTATE", "RL.REFUND", "RL.CHARGE",
                                          "RL.ACQUIRE", "RL.RELEASE"};
  const std::vector<std::string> words = {"TOKEN_BUCKET",
                                          "GCRA",
                                          "SLIDING_LOG",
                                          "SLIDING_WINDOW",
                                          "FIXED_WINDOW",
                                          "LEAKY_BUCKET",
                                          "POLICY",
                                          "COST",
                                          "HEADERS",
                                          "BURST",
                                          "BLOCK",
                                          "CONCURRENCY",
                                          "LEASE",
                                          "SHADOW",
                                          "FAIL_OPEN",
                                          "FAIL_CLOSED",
                                          "SET",
                                          "GET",
                                          "DEL",
                                          "LIST",
                                          "HELP",
                                          "pol",
                                          "0",
                                          "1",
                                          "5",
                                          "-1",
                                          "1099511627776",
                                          "1099511627775",
                                          "9223372036854775807",
                                          "9223372036854775808",
                                          "-9223372036854775808",
                                          "1s",
                                          "1ms",
                                          "10y",
                                          "3650d",
                                          "3651d",
                                          "1m",
                                          "x",
                                          "",
                                          std::string("\0\xff\r\n", 6),
                                          std::string(300, 'k')};
  std::mt19937_64 rng(2024);
  int replies = 0;
  for (int batch = 0; batch < 30; ++batch) {
    std::string wire;
    for (int i = 0; i < 100; ++i) {
      std::vector<std::string> cmd = {verbs[rng() % verbs.size()], "fuzz:" + std::to_string(rng() % 4)};
      const size_t n = rng() % 12;
      for (size_t k = 0; k < n; ++k) cmd.push_back(words[rng() % words.size()]);
      wire += RespClient::Encode(cmd);
    }
    ASSERT_TRUE(c.SendRaw(wire));
    for (int i = 0; i < 100; ++i) {
      Reply r = c.Read();
      ASSERT_NE(r.type, 'X') << "connection lost after " << replies << " replies\n"
                             << server().LogTail();
      ++replies;
    }
  }
  EXPECT_EQ(c.Call({"PING"}).str, "PONG");
}

TEST_F(RlCommandsTest, ForgedSetStateIsRefusedOrHarmless) {
  RespClient c(port());
  const int64_t now_ms = std::stoll(c.Call({"TIME"}).elements.at(0).str) * 1000;
  EncodedEntry gcra;
  gcra.algorithm = 1;
  gcra.window_ms = 1000;
  gcra.expiry_ms = now_ms + 60000;
  gcra.words = {now_ms, 0};
  EncodedEntry log = gcra;
  log.algorithm = 2;
  log.log = true;
  log.words.clear();
  log.runs = {{now_ms - 10, 2}, {now_ms, 3}};

  // Refused with an error, nothing stored.
  std::string dup = EncodeState({gcra, gcra});
  std::string unknown_algorithm = EncodeState({gcra});
  unknown_algorithm[11] = 9;
  EncodedEntry zero_window = gcra;
  zero_window.window_ms = 0;
  EncodedEntry backwards = log;
  backwards.runs = {{now_ms, 1}, {now_ms - 5, 1}};
  EncodedEntry zero_count = log;
  zero_count.runs = {{now_ms, 0}};
  std::string many(3, '\0');
  many[0] = 1;
  many[1] = static_cast<char>(0xff);
  many[2] = static_cast<char>(0xff);
  const std::string good = EncodeState({gcra, log});
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"", "ERR invalid rate-limit state: truncated header"},
      {std::string("\x03\x00\x00", 3),
       "ERR invalid rate-limit state: unsupported encoding version 3"},
      {good.substr(0, good.size() - 1), "ERR invalid rate-limit state: truncated log"},
      {good + "x", "ERR invalid rate-limit state: trailing bytes"},
      {dup, "ERR invalid rate-limit state: duplicate state"},
      {unknown_algorithm, "ERR invalid rate-limit state: unknown algorithm"},
      {EncodeState({zero_window}), "ERR invalid rate-limit state: bad window"},
      {EncodeState({backwards}), "ERR invalid rate-limit state: bad log time"},
      {EncodeState({zero_count}), "ERR invalid rate-limit state: bad log count"},
      {many, "ERR invalid rate-limit state: too many states"},
  };
  for (const auto& [payload, error] : refused) {
    EXPECT_EQ(c.Call({"RL.SETSTATE", "forged", payload}).str, error);
  }
  EXPECT_EQ(c.Call({"EXISTS", "forged"}).integer, 0);
  EXPECT_EQ(c.Call({"RL.SETSTATE", "forged"}).str,
            "ERR wrong number of arguments for 'rl.setstate' command");
  ASSERT_EQ(c.Call({"SET", "str", "x"}).str, "OK");
  EXPECT_EQ(c.Call({"RL.SETSTATE", "str", good}).str, kWrongType);

  // A well-formed state is stored with its expiry and answers like the real thing.
  ASSERT_EQ(c.Call({"RL.SETSTATE", "forged", good}).str, "OK");
  EXPECT_EQ(c.Call({"TYPE", "forged"}).str, "ratelimit");
  const long long pttl = c.Call({"PTTL", "forged"}).integer;
  EXPECT_GT(pttl, 55000);
  EXPECT_LE(pttl, 61000);
  // Five requests logged in the last second: a peek at 10 per second leaves 4 after itself.
  EXPECT_EQ(c.Call({"RL.PEEK", "forged", "SLIDING_LOG", "10", "1s"}).Ints()[2], 4);
  // Already fresh: deletes the key, as the master did when it wrote it.
  EncodedEntry past = gcra;
  past.expiry_ms = now_ms - 1000;
  EXPECT_EQ(c.Call({"RL.SETSTATE", "forged", EncodeState({past})}).str, "OK");
  EXPECT_EQ(c.Call({"EXISTS", "forged"}).integer, 0);

  // Hostile but well-formed words and times: every command answers, the server lives.
  std::mt19937_64 rng(11);
  const int64_t extremes[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, now_ms, now_ms + 1000,
                              int64_t{1} << 61, INT64_MAX - 1, INT64_MAX};
  auto pick = [&] { return rng() % 3 ? extremes[rng() % 10] : static_cast<int64_t>(rng()); };
  const char* algorithms[] = {"TOKEN_BUCKET", "GCRA", "SLIDING_LOG", "SLIDING_WINDOW",
                              "FIXED_WINDOW", "LEAKY_BUCKET"};
  for (int i = 0; i < 300; ++i) {
    EncodedEntry e;
    e.algorithm = static_cast<uint8_t>(rng() % 6);
    e.window_ms = rng() % 2 ? 1000 : 1 + rng() % 315360000000ull;
    e.expiry_ms = rng() % 2 ? now_ms + static_cast<int64_t>(rng() % 100000) : pick();
    if (e.algorithm == 2) {
      e.log = true;
      int64_t t = rng() % 2 ? now_ms - 500 : pick() / 4;
      for (int k = 0, n = static_cast<int>(rng() % 4); k < n; ++k) {
        e.runs.emplace_back(t, 1 + static_cast<int64_t>(rng() % 1000));
        t += static_cast<int64_t>(rng() % 300);
      }
    } else {
      e.words = {pick(), pick()};
      if (e.algorithm == 3) e.words.push_back(pick());
    }
    const std::string key = "hostile:" + std::to_string(i % 7);
    Reply set = c.Call({"RL.SETSTATE", key, EncodeState({e})});
    ASSERT_NE(set.type, 'X') << i;
    const std::string algorithm = algorithms[e.algorithm];
    for (const std::vector<std::string>& cmd : std::vector<std::vector<std::string>>{
             {"RL.CHECK", key, algorithm, "5", "1s"},
             {"RL.CHECK", key, algorithm, "1099511627776", "3650d", "COST", "1099511627776"},
             {"RL.PEEK", key, algorithm, "5", "1s", "HEADERS"},
             {"RL.CHECK", key, algorithm, "5", "1s", "HEADERS"},
             {"RL.RESET", key, algorithm, "5", "1s"}}) {
      Reply r = c.Call(cmd);
      ASSERT_NE(r.type, 'X') << i << " " << cmd[0] << "\n" << server().LogTail();
    }
    const long long ttl = c.Call({"PTTL", key}).integer;
    EXPECT_TRUE(ttl == -2 || ttl > 0) << "a stored state always has an expiry, got " << ttl;
  }
  EXPECT_EQ(c.Call({"PING"}).str, "PONG");
}

// ---------------------------------------------------------------------------------------------
// Load arguments.

TEST(RlLoadTest, PoliciesFileAtLoad) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  TempFile toml(
      "# as rl-server's rl.toml\nport = 6380\n[policies]\n"
      "api = \"SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d\"\n"
      "login = \"SLIDING_LOG 5 1m FAIL_CLOSED\"\n");
  RedisServer server(RlOptions("POLICIES " + toml.path()));
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(server.Call({"RL.POLICY", "GET", "api"}).str,
            "SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d");
  EXPECT_EQ(server.Call({"RL.POLICY", "GET", "login"}).str, "SLIDING_LOG 5 1m FAIL_CLOSED");
  EXPECT_EQ(server.Call({"RL.CHECK", "u", "POLICY", "login"}).Ints(),
            (std::vector<int64_t>{1, 5, 4, 0, 60000}));
  EXPECT_EQ(RlStat(server, "policies"), 2);
  EXPECT_NE(server.ReadLog().find("rl 0.1.0 loaded, 2 policies"), std::string::npos);
}

TEST(RlLoadTest, BadLoadArgumentsRefuseToStart) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  TempFile broken("[policies]\napi = \"SLIDING_WINDOW 0 1m\"\n");
  struct Case {
    std::string args;
    std::string log;
  } cases[] = {
      {"POLICIES " + broken.path(),
       "rl: cannot load policies: policy 'api': limit must be a positive integer"},
      {"POLICIES /nonexistent/rl.toml", "rl: cannot load policies: /nonexistent/rl.toml"},
      {"POLICIES", "rl: unknown load argument 'POLICIES' (usage: POLICIES /path/rl.toml)"},
      {"VERBOSE yes", "rl: unknown load argument 'VERBOSE'"},
  };
  for (const Case& tc : cases) {
    RedisServer server(RlOptions(tc.args));
    ::testing::AssertionResult started = server.Start();
    EXPECT_FALSE(started) << tc.args;
    EXPECT_NE(server.ReadLog().find(tc.log), std::string::npos) << tc.args << "\n"
                                                                 << server.LogTail();
  }
}

}  // namespace
}  // namespace rl::test

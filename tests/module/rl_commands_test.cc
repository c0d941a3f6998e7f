// The RL.* contract of rl.so in one real redis-server: the cases rl-server's tests cover
// (tests/server/rl_commands_test.cc: the seed scenario for every algorithm, RESP2/RESP3 shapes,
// HEADERS, all-or-nothing limits, options, named and shadow policies, redis-cell's CL.THROTTLE,
// pipelining), and the POLICIES load argument. rl_key_test.cc covers the Redis key, and
// rl_bad_input_test.cc what must never crash.
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

class RlCommandsTest : public RlServerTest {};

class SeedScenarioTest : public RlCommandsTest,
                         public ::testing::WithParamInterface<const char*> {};

// Limit 5, 8 parallel clients: exactly 5 allowed, 3 denied with a positive retry-after; another
// key is unaffected; after the retry-after the next call passes.
TEST_P(SeedScenarioTest, FiveOfEightThenRecovers) {
  const std::string algorithm = GetParam();
  const std::string key = "seed:" + algorithm;
  const std::vector<std::string> cmd = {"RL.CHECK", key, algorithm, "5", "1s"};
  constexpr int kClients = 8;
  const std::vector<Reply> replies = CallAtOnce(
      kClients, [&] { return std::make_unique<RespClient>(port()); }, cmd);
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
  std::vector<std::string> cmd = {
      "RL.CHECK", "multi", "SLIDING_WINDOW", "100", "1m", "FIXED_WINDOW", "2", "1m"};
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

// A policy set again with another window carries each key's use over, as in rl-server.
TEST_F(RlCommandsTest, PolicyWindowChangeCarriesTheKeysUse) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "win", "GCRA", "2", "1m"}).str, "OK");
  ASSERT_EQ(c.Call({"RL.CHECK", "wk", "POLICY", "win"}).Ints()[0], 1);
  ASSERT_EQ(c.Call({"RL.CHECK", "wk", "POLICY", "win"}).Ints()[0], 1);
  ASSERT_EQ(c.Call({"RL.CHECK", "wk", "POLICY", "win"}).Ints()[0], 0);
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "win", "GCRA", "2", "2m"}).str, "OK");
  EXPECT_EQ(c.Call({"RL.CHECK", "wk", "POLICY", "win"}).Ints()[0], 0) << "no fresh burst";
  EXPECT_EQ(c.Call({"RL.CHECK", "wk-new", "POLICY", "win"}).Ints()[0], 1);
}

TEST_F(RlCommandsTest, PolicySetGetDelList) {
  RespClient c(port());
  EXPECT_EQ(c.Call({"RL.POLICY", "SET", "p1", "TOKEN_BUCKET", "3", "1m"}).str, "OK");
  EXPECT_EQ(c.Call({"rl.policy", "set", "p2", "SLIDING_WINDOW", "100", "1m", "FIXED_WINDOW", "5000",
                    "1d"})
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
  EXPECT_EQ(c.Call({"RL.POLICY", "NOPE"}).str,
            "ERR unknown subcommand 'NOPE'. Try RL.POLICY HELP.");
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
  EXPECT_NE(server.ReadLog().find("rl 0.3.0 loaded, 2 policies"), std::string::npos);
  // MODULE LIST takes an integer version: major * 10000 + minor * 100 + patch.
  const Reply modules = server.Call({"MODULE", "LIST"});
  ASSERT_EQ(modules.elements.size(), 1u);
  const std::vector<Reply>& fields = modules.elements[0].elements;
  ASSERT_GE(fields.size(), 4u);
  EXPECT_EQ(fields[1].str, "rl");
  EXPECT_EQ(fields[3].integer, 300);
}

TEST(RlLoadTest, BadLoadArgumentsRefuseToStart) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  TempFile broken("[policies]\napi = \"SLIDING_WINDOW 0 1m\"\n");
  TempFile non_ascii("[policies]\napi = \"GCRA 1 1s\"\nport = 1\xc5\xa0\n");
  struct Case {
    std::string args;
    std::string log;
  } cases[] = {
      {"POLICIES " + broken.path(),
       "rl: cannot load policies: policy 'api': limit must be between 1 and 1099511627776"},
      {"POLICIES /nonexistent/rl.toml",
       "rl: cannot load policies: cannot read config file /nonexistent/rl.toml"},
      // rl-server's reader and its guards: a directory is not read as an empty file, and
      // non-ASCII outside a string never reaches toml++.
      {"POLICIES " + ::testing::TempDir(), "is a directory, not a TOML file"},
      {"POLICIES " + non_ascii.path(), "non-ASCII character outside a quoted string or comment"},
      {"POLICIES",
       "rl: unknown load argument 'POLICIES' (usage: [POLICIES /path/rl.toml] [MAXMEMORY-SHARE "
       "0.8] [MAX-KEYS n] [OVERFLOW fail-open|fail-closed])"},
      {"VERBOSE yes", "rl: unknown load argument 'VERBOSE'"},
      {"MAXMEMORY-SHARE 1.5", "rl: MAXMEMORY-SHARE must be a number in (0, 1], got '1.5'"},
      {"MAXMEMORY-SHARE 0", "rl: MAXMEMORY-SHARE must be a number in (0, 1], got '0'"},
      {"MAXMEMORY-SHARE nan", "rl: MAXMEMORY-SHARE must be a number in (0, 1], got 'nan'"},
      {"MAX-KEYS -1", "rl: MAX-KEYS must be an integer >= 0 (0 = none), got '-1'"},
      {"OVERFLOW maybe", "rl: OVERFLOW must be fail-open or fail-closed, got 'maybe'"},
      {"OVERFLOW", "rl: unknown load argument 'OVERFLOW'"},
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

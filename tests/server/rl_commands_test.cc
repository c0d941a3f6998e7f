// RL.CHECK / RL.PEEK / RL.RESET / RL.POLICY / CL.THROTTLE against the real server: the seed
// scenario for every algorithm, RESP2 and RESP3 reply shapes, HEADERS, named policies, shadow
// mode, and redis-cell's documented CL.THROTTLE answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "resp_client.h"
#include "server_process.h"

namespace rl::test {
namespace {

class RlCommandsTest : public SharedServerTest<RlCommandsTest> {};

struct SeedCase {
  const char* algorithm;
};

class SeedScenarioTest : public RlCommandsTest, public ::testing::WithParamInterface<SeedCase> {};

// Limit 5, 8 parallel clients: exactly 5 allowed, 3 denied with a positive retry-after; another
// key is unaffected. (Recovery after the retry-after: handlers_test.cc, on a manual clock.)
TEST_P(SeedScenarioTest, FiveOfEightThenRecovers) {
  const std::string algorithm = GetParam().algorithm;
  const std::string key = "seed:" + algorithm;
  const std::vector<std::string> cmd = {"RL.CHECK", key, algorithm, "5", "1s"};
  constexpr int kClients = 8;
  const std::vector<Reply> replies = CallAtOnce(
      kClients, [&] { return std::make_unique<RespClient>(port()); }, cmd);
  int allowed = 0, denied = 0;
  int64_t max_retry = 0;
  for (const Reply& r : replies) {
    ASSERT_EQ(r.type, '*') << r.str;
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
  // Passing again after the retry-after is handlers_test.cc's (a manual clock, no sleep).
  EXPECT_GT(max_retry, 0);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, SeedScenarioTest,
                         ::testing::Values(SeedCase{"TOKEN_BUCKET"}, SeedCase{"GCRA"},
                                           SeedCase{"SLIDING_LOG"}, SeedCase{"SLIDING_WINDOW"},
                                           SeedCase{"FIXED_WINDOW"}, SeedCase{"LEAKY_BUCKET"}),
                         [](const auto& info) { return std::string(info.param.algorithm); });

TEST_F(RlCommandsTest, Resp2ArrayAndResp3Map) {
  RespClient c(port());
  Reply r = c.Call({"rl.check", "shape", "token_bucket", "10", "1m"});
  ASSERT_EQ(r.type, '*');
  EXPECT_EQ(r.Ints(), (std::vector<int64_t>{1, 10, 9, 0, 6000}));

  Reply hello = c.Call({"HELLO", "3"});
  ASSERT_EQ(hello.type, '%');
  r = c.Call({"RL.CHECK", "shape", "TOKEN_BUCKET", "10", "1m", "COST", "2"});
  ASSERT_EQ(r.type, '%');
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
}

TEST_F(RlCommandsTest, Options) {
  RespClient c(port());
  Reply r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "1s", "COST", "-1"});
  EXPECT_TRUE(r.is_error());
  r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "1s", "BOGUS"});
  EXPECT_EQ(r.str, "ERR syntax error");
  r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "1s", "COST", "x"});
  EXPECT_TRUE(r.is_error());
  r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "1s", "COST", "0"});
  EXPECT_EQ(r.Ints()[2], 5) << "cost 0 peeks";
  r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "1s", "COST", "6"});
  EXPECT_EQ(r.Ints()[0], 0);
  EXPECT_EQ(r.Ints()[3], -1) << "cost above capacity: never";
  r = c.Call({"RL.CHECK", "opt", "NOPE", "5", "1s"});
  EXPECT_TRUE(r.is_error());
  r = c.Call({"RL.CHECK", "opt", "GCRA", "5", "soon"});
  EXPECT_TRUE(r.is_error());
  r = c.Call({"RL.CHECK", "opt"});
  EXPECT_EQ(r.str, "ERR wrong number of arguments for 'rl.check' command");
  r = c.Call({"RL.CHECK", "opt", "POLICY", "no-such-policy"});
  EXPECT_TRUE(r.is_error());
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
  EXPECT_NE(h.Get("X-RateLimit-Reset"), nullptr);
  EXPECT_NE(h.Get("RateLimit-Policy"), nullptr);
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
}

// A connection keeps the policies it checked (no lock per lookup) only while no policy changed:
// a redefinition or deletion made on another connection (another I/O thread's) is what its next
// check uses, also inside MULTI/EXEC.
TEST_F(RlCommandsTest, PolicyChangesReachAConnectionThatCheckedBefore) {
  RespClient c(port());
  RespClient admin(port());
  ASSERT_EQ(admin.Call({"RL.POLICY", "SET", "cached", "FIXED_WINDOW", "1", "1h"}).str, "OK");
  ASSERT_EQ(admin.Call({"RL.POLICY", "SET", "other", "FIXED_WINDOW", "7", "1h"}).str, "OK");
  EXPECT_EQ(c.Call({"RL.CHECK", "k", "POLICY", "cached"}).Ints()[1], 1);  // the limit
  EXPECT_EQ(c.Call({"RL.CHECK", "k", "POLICY", "other"}).Ints()[1], 7);
  EXPECT_EQ(c.Call({"RL.CHECK", "k", "POLICY", "cached"}).Ints()[0], 0);
  ASSERT_EQ(admin.Call({"RL.POLICY", "SET", "cached", "FIXED_WINDOW", "5", "1h"}).str, "OK");
  Reply r = c.Call({"RL.CHECK", "k", "POLICY", "cached"});
  EXPECT_EQ(r.Ints()[0], 1);
  EXPECT_EQ(r.Ints()[1], 5);
  ASSERT_EQ(c.Call({"MULTI"}).str, "OK");
  ASSERT_EQ(c.Call({"RL.CHECK", "k", "POLICY", "cached"}).str, "QUEUED");
  ASSERT_EQ(admin.Call({"RL.POLICY", "SET", "cached", "FIXED_WINDOW", "9", "1h"}).str, "OK");
  Reply exec = c.Call({"EXEC"});
  ASSERT_EQ(exec.type, '*');
  ASSERT_EQ(exec.elements.size(), 1u);
  EXPECT_EQ(exec.elements[0].Ints()[1], 9);
  EXPECT_EQ(admin.Call({"RL.POLICY", "DEL", "cached"}).integer, 1);
  EXPECT_TRUE(c.Call({"RL.CHECK", "k", "POLICY", "cached"}).is_error());
  EXPECT_EQ(c.Call({"RL.CHECK", "k", "POLICY", "other"}).Ints()[1], 7);
  EXPECT_EQ(admin.Call({"RL.POLICY", "DEL", "other"}).integer, 1);
}

TEST_F(RlCommandsTest, ShadowPolicyAllowsAndCounts) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "shadowed", "FIXED_WINDOW", "1", "1m", "SHADOW"}).str,
            "OK");
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
  Reply info = c.Call({"INFO", "stats"});
  EXPECT_NE(info.str.find("policy_shadowed:checks=3,allowed=3,denied=0,shadow_denied=2"),
            std::string::npos)
      << info.str;
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
  EXPECT_TRUE(c.Call({"CL.THROTTLE", "k", "1", "0", "3"}).is_error());
}

// Issue 10 item 8: a policy named like CL.THROTTLE's or inline limits' labels has state of its
// own: the internal scopes are empty or hold a space, which no policy name can.
TEST_F(RlCommandsTest, PolicyNamedClThrottleHasItsOwnState) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "cl.throttle", "GCRA", "30", "60s", "BURST", "16"}).str,
            "OK");
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "(inline)", "GCRA", "30", "60s", "BURST", "16"}).str, "OK");
  EXPECT_EQ(c.Call({"CL.THROTTLE", "same", "15", "30", "60"}).Ints()[2], 15);
  EXPECT_EQ(c.Call({"CL.THROTTLE", "same", "15", "30", "60"}).Ints()[2], 14);
  EXPECT_EQ(c.Call({"RL.CHECK", "same", "GCRA", "30", "60s", "BURST", "16"}).Ints()[2], 15);
  EXPECT_EQ(c.Call({"RL.CHECK", "same", "POLICY", "cl.throttle"}).Ints()[2], 15)
      << "the policy does not see CL.THROTTLE's state";
  EXPECT_EQ(c.Call({"RL.CHECK", "same", "POLICY", "(inline)"}).Ints()[2], 15)
      << "nor inline limits' state";
  EXPECT_EQ(c.Call({"CL.THROTTLE", "same", "15", "30", "60"}).Ints()[2], 13)
      << "nor CL.THROTTLE the policy's";
  EXPECT_TRUE(
      c.Call({"RL.POLICY", "SET", "cl.throttle (redis-cell)", "GCRA", "1", "1m"}).is_error());
  EXPECT_TRUE(c.Call({"RL.CHECK", "same", "POLICY", "cl.throttle (redis-cell)", "GCRA", "1", "1m"})
                  .is_error());
}

// redis-cell's rate limiter cases (limit 5 = max_burst 4, one per second) at one instant, and
// its end-to-end test (max_burst 0, 1 per 2 s) up to the limited answer.
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
  EXPECT_EQ(c.Call(cmd).Ints(), (std::vector<int64_t>{1, 1, 0, 2, 2}));
  // Allowed again after retry_after: handlers_test.cc, on a manual clock.
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
  EXPECT_GE(c.Call({"DBSIZE"}).integer, 1);
}

// The wire form of a RESP2 reply, with the two times of a check's reply (retry_after_ms,
// reset_after_ms: the last two of five integers) moved into *times, since they count down with
// the clock between two runs of the same commands.
std::string WireForm(const Reply& r, std::vector<int64_t>* times) {
  switch (r.type) {
    case '+':
    case '-':
      return std::string(1, r.type) + r.str + "\r\n";
    case ':':
      return ":" + std::to_string(r.integer) + "\r\n";
    case '$':
      return "$" + std::to_string(r.str.size()) + "\r\n" + r.str + "\r\n";
    case '*': {
      std::string out = "*" + std::to_string(r.elements.size()) + "\r\n";
      const bool check =
          r.elements.size() == 5 && std::all_of(r.elements.begin(), r.elements.end(),
                                                [](const Reply& e) { return e.type == ':'; });
      for (size_t i = 0; i < r.elements.size(); ++i) {
        if (check && i >= 3) {
          times->push_back(r.elements[i].integer);
          out += ":<time>\r\n";
        } else {
          out += WireForm(r.elements[i], times);
        }
      }
      return out;
    }
    default:
      return std::string("?") + r.type + r.str;
  }
}

// A pipeline whose checks the server reads ahead (and loads their states early) answers exactly
// as the same commands sent one at a time: new and existing keys, allowed and denied, malformed
// checks, a policy defined in the middle of the pipeline, inline commands, a transaction.
TEST_F(RlCommandsTest, PipelinedChecksAnswerAsSentOneByOne) {
  // p: a key prefix per run, so both start fresh (their policies too).
  auto policy_of = [](const std::string& p) { return "ahead_" + p + std::to_string(::getpid()); };
  auto commands = [&](const std::string& p) {
    const std::string policy = policy_of(p);
    const std::vector<std::string> tb = {"TOKEN_BUCKET", "3", "1m"};
    auto check = [&](const std::string& key, std::vector<std::string> limits) {
      std::vector<std::string> c = {"RL.CHECK", p + key};
      c.insert(c.end(), limits.begin(), limits.end());
      return RespClient::Encode(c);
    };
    const std::vector<std::string> two = {"SLIDING_WINDOW", "2", "1m", "FIXED_WINDOW", "5", "1h"};
    return std::vector<std::string>{
        // clang-format off
        check("a", tb), check("a", tb), check("b", tb), check("a", tb), check("a", tb),
        check("b", tb), check("c", {"TOKEN_BUCKET", "3", "1m", "COST", "5"}),
        check("a", {"NOPE", "3", "1m"}), check("a", {"TOKEN_BUCKET", "3"}),
        RespClient::Encode({"RL.CHECK", p + "a"}), RespClient::Encode({"rl.check", p + "d", "TOKEN_BUCKET", "3", "1m"}),
        check("e", two), check("e", two), check("e", two), check("a", tb),
        check("f", {"POLICY", policy}),
        RespClient::Encode({"RL.POLICY", "SET", policy, "GCRA", "2", "1m"}),
        check("f", {"POLICY", policy}), check("f", {"POLICY", policy}),
        check("f", {"POLICY", policy}), check("f", {"POLICY", "no-such-policy"}),
        RespClient::Encode({"RL.PEEK", p + "a", "TOKEN_BUCKET", "3", "1m"}),
        "RL.CHECK " + p + "g TOKEN_BUCKET 3 1m\r\n",  // inline, between multibulks
        check("g", tb), "PING\r\n", check("g", tb), RespClient::Encode({"MULTI"}),
        check("h", tb), check("h", tb), RespClient::Encode({"EXEC"}), check("h", tb),
        RespClient::Encode({"PING"}), check("b", tb)};
    // clang-format on
  };
  // A reply as its wire form, with the run's policy name (errors echo it) as "<policy>".
  auto wire = [&](const Reply& r, const std::string& p, std::vector<int64_t>* times) {
    std::string out = WireForm(r, times);
    const std::string name = policy_of(p);
    for (size_t at; (at = out.find(name)) != std::string::npos;)
      out.replace(at, name.size(), "<policy>");
    return out;
  };
  const auto start = std::chrono::steady_clock::now();
  RespClient one(port());
  std::vector<int64_t> one_times;
  std::vector<std::string> one_by_one;
  for (const std::string& c : commands("one")) {
    ASSERT_TRUE(one.SendRaw(c));
    one_by_one.push_back(wire(one.Read(), "one", &one_times));
  }
  RespClient burst(port());
  std::vector<int64_t> burst_times;
  std::string all;
  for (const std::string& c : commands("burst")) all += c;
  ASSERT_TRUE(burst.SendRaw(all));
  for (size_t i = 0; i < one_by_one.size(); ++i) {
    EXPECT_EQ(wire(burst.Read(), "burst", &burst_times), one_by_one[i]) << "command " << i;
  }
  const int64_t elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
  ASSERT_EQ(burst_times.size(), one_times.size());
  for (size_t i = 0; i < one_times.size(); ++i) {
    // The same up to the clock: the runs' checks were apart by other times (at most all of it).
    EXPECT_LE(std::abs(burst_times[i] - one_times[i]), elapsed_ms + 1) << i;
  }
  EXPECT_EQ(burst.Call({"RL.POLICY", "DEL", policy_of("one")}).integer, 1);
  EXPECT_EQ(burst.Call({"RL.POLICY", "DEL", policy_of("burst")}).integer, 1);
}

}  // namespace
}  // namespace rl::test

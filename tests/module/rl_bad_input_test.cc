// Bad input never crashes rl.so: random argument soup on every command, and forged RL.SETSTATE
// payloads (what replicas and the AOF receive) refused with an error or stored as a state every
// command can work with. The texts of the argument errors are compared with rl-server's in
// rl_parity_test.cc; tampered RESTORE payloads are in rl_persistence_test.cc.
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

class RlBadInputTest : public RlServerTest {};

constexpr const char* kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

TEST_F(RlBadInputTest, RandomArgumentsNeverCrash) {
  RespClient c(port());
  const std::vector<std::string> verbs = {"RL.CHECK",   "RL.PEEK",     "RL.RESET",  "CL.THROTTLE",
                                          "RL.POLICY",  "RL.SETSTATE", "RL.REFUND", "RL.CHARGE",
                                          "RL.ACQUIRE", "RL.RELEASE",  "RL.APPLY"};
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
      std::vector<std::string> cmd = {verbs[rng() % verbs.size()],
                                      "fuzz:" + std::to_string(rng() % 4)};
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

TEST_F(RlBadInputTest, ForgedSetStateIsRefusedOrHarmless) {
  RespClient c(port());
  const int64_t now_ms = TimeMs(c.Call({"TIME"}));
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
      {std::string("\x04\x00\x00", 3),
       "ERR invalid rate-limit state: unsupported encoding version 4"},
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
  // An expiry past what Redis's clock arithmetic holds: the TTL is capped at a century.
  EncodedEntry far = gcra;
  far.expiry_ms = INT64_MAX;
  EXPECT_EQ(c.Call({"RL.SETSTATE", "far", EncodeState({far})}).str, "OK");
  const long long century = 100LL * 365 * 24 * 3600 * 1000;
  EXPECT_GT(c.Call({"PTTL", "far"}).integer, century - 60000);
  EXPECT_LE(c.Call({"PTTL", "far"}).integer, century);
  // Already fresh: deletes the key, as the master did when it wrote it.
  EncodedEntry past = gcra;
  past.expiry_ms = now_ms - 1000;
  EXPECT_EQ(c.Call({"RL.SETSTATE", "forged", EncodeState({past})}).str, "OK");
  EXPECT_EQ(c.Call({"EXISTS", "forged"}).integer, 0);

  // Hostile but well-formed words and times: every command answers, the server lives.
  std::mt19937_64 rng(11);
  const int64_t extremes[] = {
      INT64_MIN,        INT64_MIN + 1, -1,       0, 1, now_ms, now_ms + 1000,
      int64_t{1} << 61, INT64_MAX - 1, INT64_MAX};
  auto pick = [&] { return rng() % 3 ? extremes[rng() % 10] : static_cast<int64_t>(rng()); };
  const char* algorithms[] = {"TOKEN_BUCKET",   "GCRA",         "SLIDING_LOG",
                              "SLIDING_WINDOW", "FIXED_WINDOW", "LEAKY_BUCKET"};
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
    EXPECT_TRUE(ttl == -2 || (ttl > 0 && ttl <= century))
        << "a stored state always has an expiry, got " << ttl;
  }
  EXPECT_EQ(c.Call({"PING"}).str, "PONG");
}

}  // namespace
}  // namespace rl::test

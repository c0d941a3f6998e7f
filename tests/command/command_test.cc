// The shared command layer in-process: RL.* grammar, validation, shadow mode and reply shapes,
// run on an rl::Limiter over a manual clock and written with resp::Writer (no socket). What is
// tested here holds for rl-server and rl.so alike, since both call these functions.
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "resp/writer.h"
#include "rl/clock.h"
#include "rl/command/commands.h"
#include "rl/command/docs.h"
#include "rl/limiter.h"

namespace rl::command {
namespace {

class CommandTest : public ::testing::Test {
 protected:
  CommandTest()
      : clock_(0, 1'700'000'000'000),
        limiter_(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_}),
        engine_(limiter_) {
    policies_["api"] = std::make_shared<Policy>(*ParsePolicy("api", "GCRA 2 1m"));
    policies_["trial"] =
        std::make_shared<Policy>(*ParsePolicy("trial", "FIXED_WINDOW 1 1m SHADOW"));
    policies_["exports"] = std::make_shared<Policy>(
        *ParsePolicy("exports", "CONCURRENCY 1 LEASE 5m FIXED_WINDOW 20 1h"));
  }

  // Runs one command through the command layer; returns the raw RESP bytes.
  std::string Run(std::vector<std::string> args, int protocol = 2) {
    std::vector<std::string_view> views(args.begin(), args.end());
    std::string out;
    resp::Writer w(&out, protocol);
    PolicyLookup lookup = [this](std::string_view name) -> std::shared_ptr<const Policy> {
      auto it = policies_.find(std::string(name));
      return it == policies_.end() ? nullptr : it->second;
    };
    const std::string name = args[0];
    if (name == "RL.CHECK") RunCheck(engine_, w, Verb::kCheck, views, lookup, cache_);
    if (name == "RL.PEEK") RunCheck(engine_, w, Verb::kPeek, views, lookup);
    if (name == "RL.RESET") RunReset(engine_, w, views, lookup);
    if (name == "CL.THROTTLE") RunThrottle(engine_, w, views);
    if (name == "RL.REFUND") RunAdjust(engine_, w, Verb::kRefund, views, lookup);
    if (name == "RL.CHARGE") RunAdjust(engine_, w, Verb::kCharge, views, lookup);
    if (name == "RL.ACQUIRE") RunAcquire(engine_, w, views, lookup);
    if (name == "RL.RELEASE") RunRelease(engine_, w, views);
    return out;
  }

  ManualClock clock_;
  Limiter limiter_;
  LimiterEngine engine_;
  LimitCache* cache_ = nullptr;  // RL.CHECK's, when a test sets it
  std::map<std::string, std::shared_ptr<const Policy>> policies_;
};

TEST_F(CommandTest, InlineCheckRepliesFiveIntegers) {
  EXPECT_EQ(Run({"RL.CHECK", "k", "TOKEN_BUCKET", "2", "1m"}),
            "*5\r\n:1\r\n:2\r\n:1\r\n:0\r\n:30000\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "TOKEN_BUCKET", "2", "1m"}),
            "*5\r\n:1\r\n:2\r\n:0\r\n:0\r\n:60000\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "TOKEN_BUCKET", "2", "1m"}),
            "*5\r\n:0\r\n:2\r\n:0\r\n:30000\r\n:60000\r\n");
}

// LIMITS: every limit's own result, last (after HEADERS and the lease), in the order given, each
// a map (RESP2: flat pairs) named as the header fields name it; binding marks fields 2-5's limit.
TEST_F(CommandTest, LimitsListsEveryLimit) {
  const std::string entry_1m =
      "*18\r\n$4\r\nname\r\n$10\r\ndefault-1m\r\n$7\r\nallowed\r\n:1\r\n$5\r\nlimit\r\n:3\r\n"
      "$9\r\nwindow_ms\r\n:60000\r\n$9\r\nremaining\r\n:2\r\n$14\r\nretry_after_ms\r\n:0\r\n"
      "$14\r\nreset_after_ms\r\n:60000\r\n$7\r\nbinding\r\n:1\r\n$11\r\nconcurrency\r\n:0\r\n";
  const std::string entry_1h =
      "*18\r\n$4\r\nname\r\n$10\r\ndefault-1h\r\n$7\r\nallowed\r\n:1\r\n$5\r\nlimit\r\n:20\r\n"
      "$9\r\nwindow_ms\r\n:3600000\r\n$9\r\nremaining\r\n:19\r\n$14\r\nretry_after_ms\r\n:0\r\n"
      "$14\r\nreset_after_ms\r\n:3600000\r\n$7\r\nbinding\r\n:0\r\n$11\r\nconcurrency\r\n:0\r\n";
  EXPECT_EQ(Run({"RL.CHECK", "k", "FIXED_WINDOW", "3", "1m", "FIXED_WINDOW", "20", "1h", "LIMITS"}),
            "*6\r\n:1\r\n:3\r\n:2\r\n:0\r\n:60000\r\n*2\r\n" + entry_1m + entry_1h);
  // RESP3: a "limits" field of maps; with HEADERS both come, the limits last.
  const std::string r3 = Run({"RL.PEEK", "k", "FIXED_WINDOW", "3", "1m", "FIXED_WINDOW", "20", "1h",
                              "COST", "0", "HEADERS", "LIMITS"},
                             3);
  EXPECT_EQ(r3.substr(0, 4), "%7\r\n");
  EXPECT_NE(r3.find("$7\r\nheaders\r\n"), std::string::npos) << r3;
  EXPECT_NE(r3.find("$6\r\nlimits\r\n*2\r\n%9\r\n$4\r\nname\r\n$10\r\ndefault-1m\r\n"),
            std::string::npos)
      << r3;
  EXPECT_GT(r3.find("$6\r\nlimits\r\n"), r3.find("$7\r\nheaders\r\n"));
  // RL.ACQUIRE: the lease id, then the limits (the CONCURRENCY limit is one of them).
  const std::string a = Run({"RL.ACQUIRE", "job", "CONCURRENCY", "2", "LIMITS"});
  EXPECT_EQ(a.substr(0, 4), "*7\r\n");
  EXPECT_NE(a.find("$40\r\n"), std::string::npos) << a;
  EXPECT_NE(a.find("*1\r\n*18\r\n$4\r\nname\r\n$7\r\ndefault\r\n"), std::string::npos) << a;
  EXPECT_NE(a.find("$11\r\nconcurrency\r\n:1\r\n"), std::string::npos) << a;
  EXPECT_EQ(Run({"RL.CHECK", "k", "FIXED_WINDOW", "3", "1m", "LIMITS", "LIMITS"}),
            "-ERR LIMITS given more than once\r\n");
  EXPECT_EQ(Run({"RL.RESET", "k", "FIXED_WINDOW", "3", "1m", "LIMITS"}), "-ERR syntax error\r\n");
}

TEST_F(CommandTest, Resp3IsAMap) {
  const std::string r = Run({"RL.CHECK", "k", "GCRA", "5", "1s"}, 3);
  EXPECT_EQ(r.substr(0, 4), "%5\r\n");
  EXPECT_NE(r.find("$14\r\nretry_after_ms\r\n"), std::string::npos);
}

TEST_F(CommandTest, PolicyByNameAndInlineDefinitionShareOneState) {
  // Stored policy "api" (GCRA 2 1m), then the same policy sent inline by a client: one count.
  EXPECT_EQ(Run({"RL.CHECK", "t1", "POLICY", "api"}).substr(0, 8), "*5\r\n:1\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "t1", "POLICY", "api", "GCRA", "2", "1m"}).substr(0, 8),
            "*5\r\n:1\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "t1", "POLICY", "api"}).substr(0, 8), "*5\r\n:0\r\n");
  // The same limits without the policy name are another state (inline scope).
  EXPECT_EQ(Run({"RL.CHECK", "t1", "GCRA", "2", "1m"}).substr(0, 8), "*5\r\n:1\r\n");
  // An inline definition needs no stored policy, but a valid name.
  EXPECT_EQ(Run({"RL.CHECK", "t1", "POLICY", "new", "GCRA", "1", "1m"}).substr(0, 8),
            "*5\r\n:1\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "t1", "POLICY", "a\x01", "GCRA", "1", "1m"}).substr(0, 28),
            "-ERR invalid policy name 'a?");
}

TEST_F(CommandTest, ShadowPolicyNeverDeniesAndSaysSo) {
  Run({"RL.CHECK", "t", "POLICY", "trial"});
  EXPECT_EQ(Run({"RL.CHECK", "t", "POLICY", "trial"}), "*5\r\n:1\r\n:1\r\n:0\r\n:0\r\n:60000\r\n");
  const std::string r3 = Run({"RL.CHECK", "t", "POLICY", "trial"}, 3);
  EXPECT_NE(r3.find("shadow_denied\r\n:1\r\n"), std::string::npos) << r3;
}

TEST_F(CommandTest, ErrorsAreRepliesAndChangeNothing) {
  EXPECT_EQ(Run({"RL.CHECK", "k", "GCRA", "5", "1s", "BOGUS"}), "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "GCRA", "5", "1s", "COST", "x"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "GCRA", "5", "1s", "COST", "-1"}),
            "-ERR COST must not be negative\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "GCRA", "5", "1s", "COST", "1", "COST", "2"}),
            "-ERR COST given more than once\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "GCRA", "5", "1s", "HEADERS", "HEADERS"}),
            "-ERR HEADERS given more than once\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "POLICY", "nope"}), "-ERR no such policy 'nope'\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "SLIDING_LOG", "5", "1s", "BURST", "9"}),
            "-ERR BURST is not allowed with SLIDING_LOG\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "GCRA", "5", "1s", "GCRA", "9", "1s"}).substr(0, 24),
            "-ERR duplicate limit GCR");
  EXPECT_EQ(Run({"RL.RESET", "k", "GCRA", "5", "1s", "COST", "1"}), "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "junk\r\n"}).substr(0, 24), "-ERR expected a limit (T");
  EXPECT_EQ(limiter_.KeyCount(), 0u);
}

// ---- Refunds, charges, penalty blocks, leases ----

TEST_F(CommandTest, RefundAndChargeReplyAsACheckOfCostZero) {
  EXPECT_EQ(Run({"RL.CHECK", "llm", "TOKEN_BUCKET", "100", "1m", "COST", "50"}),
            "*5\r\n:1\r\n:100\r\n:50\r\n:0\r\n:30000\r\n");
  // Estimated 50, used 20: 30 back.
  EXPECT_EQ(Run({"RL.REFUND", "llm", "TOKEN_BUCKET", "100", "1m", "COST", "30"}),
            "*5\r\n:1\r\n:100\r\n:80\r\n:0\r\n:12000\r\n");
  // Used 200 more than estimated: 120 in debt, repaid in 72 s.
  EXPECT_EQ(Run({"RL.CHARGE", "llm", "TOKEN_BUCKET", "100", "1m", "COST", "200"}),
            "*5\r\n:0\r\n:100\r\n:0\r\n:72000\r\n:132000\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "llm", "TOKEN_BUCKET", "100", "1m"}),
            "*5\r\n:0\r\n:100\r\n:0\r\n:72600\r\n:132000\r\n");
  const std::string r3 = Run({"RL.REFUND", "llm", "TOKEN_BUCKET", "100", "1m", "COST", "0"}, 3);
  EXPECT_EQ(r3.substr(0, 4), "%5\r\n");
  const std::string h = Run({"RL.CHARGE", "llm", "POLICY", "api", "COST", "1", "HEADERS"});
  EXPECT_EQ(h.substr(0, 4), "*6\r\n");
}

TEST_F(CommandTest, RefundAndChargeErrorsChangeNothing) {
  Run({"RL.CHECK", "k", "GCRA", "5", "1s"});
  const std::string before = Run({"RL.PEEK", "k", "GCRA", "5", "1s", "COST", "0"});
  EXPECT_EQ(Run({"RL.REFUND", "k", "GCRA", "5", "1s"}),
            "-ERR RL.REFUND needs COST n (the amount to give back)\r\n");
  EXPECT_EQ(Run({"RL.CHARGE", "k", "GCRA", "5", "1s"}),
            "-ERR RL.CHARGE needs COST n (the amount to take)\r\n");
  EXPECT_EQ(Run({"RL.CHARGE", "k", "GCRA", "5", "1s", "COST", "-3"}),
            "-ERR COST must not be negative\r\n");
  EXPECT_EQ(Run({"RL.CHARGE", "k", "GCRA", "5", "1s", "COST", "1099511627777"}),
            "-ERR COST must be at most 1099511627776\r\n");
  EXPECT_EQ(Run({"RL.CHARGE", "k", "GCRA", "5", "1s", "COST", "99999999999999999999"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(Run({"RL.REFUND", "k", "LEAKY_BUCKET", "5", "1s", "COST", "1"}).substr(0, 34),
            "-ERR LEAKY_BUCKET cannot refund: i");
  EXPECT_EQ(Run({"RL.REFUND", "k", "CONCURRENCY", "5", "COST", "1"}),
            "-ERR CONCURRENCY takes no REFUND: end a lease with Release (RL.RELEASE)\r\n");
  EXPECT_EQ(Run({"RL.PEEK", "k", "GCRA", "5", "1s", "COST", "0"}), before);
}

TEST_F(CommandTest, BlockIsShownByPeekAndLiftedByReset) {
  const std::vector<std::string> login = {"RL.CHECK", "u", "FIXED_WINDOW", "2", "15m",
                                          "BLOCK",    "1h"};
  Run(login);
  Run(login);
  EXPECT_EQ(Run(login), "*5\r\n:0\r\n:2\r\n:0\r\n:3600000\r\n:3600000\r\n");
  clock_.Advance(20 * 60 * 1000);
  EXPECT_EQ(Run({"RL.PEEK", "u", "FIXED_WINDOW", "2", "15m", "BLOCK", "1h"}),
            "*5\r\n:0\r\n:2\r\n:0\r\n:2400000\r\n:2400000\r\n");
  EXPECT_EQ(Run({"RL.RESET", "u", "FIXED_WINDOW", "2", "15m"}), ":1\r\n");
  EXPECT_EQ(Run(login).substr(0, 8), "*5\r\n:1\r\n");
}

TEST_F(CommandTest, AcquireRepliesWithALeaseIdOrNil) {
  const std::string first = Run({"RL.ACQUIRE", "job", "CONCURRENCY", "1", "LEASE", "30s"});
  ASSERT_EQ(first.substr(0, 28), "*6\r\n:1\r\n:1\r\n:0\r\n:0\r\n:30000\r\n");
  ASSERT_EQ(first.substr(28, 5), "$40\r\n") << first;
  const std::string id = first.substr(33, 40);
  EXPECT_EQ(Run({"RL.ACQUIRE", "job", "CONCURRENCY", "1", "LEASE", "30s"}),
            "*6\r\n:0\r\n:1\r\n:0\r\n:30000\r\n:30000\r\n$-1\r\n");
  const std::string r3 = Run({"RL.ACQUIRE", "job", "CONCURRENCY", "1"}, 3);
  EXPECT_EQ(r3.substr(0, 4), "%6\r\n");
  EXPECT_NE(r3.find("$5\r\nlease\r\n_\r\n"), std::string::npos) << r3;
  EXPECT_EQ(Run({"RL.RELEASE", "other", id}), "-ERR lease id was issued for another key\r\n");
  EXPECT_EQ(Run({"RL.RELEASE", "job", "nope"}),
            "-ERR invalid lease id (expected the 40 hex digits RL.ACQUIRE returned)\r\n");
  EXPECT_EQ(Run({"RL.RELEASE", "job", id, "extra"}),
            "-ERR wrong number of arguments for 'rl.release' command\r\n");
  EXPECT_EQ(Run({"RL.RELEASE", "job", id}), ":1\r\n");
  EXPECT_EQ(Run({"RL.RELEASE", "job", id}), ":0\r\n");
  // With rate limits and HEADERS: the lease id stays last.
  const std::string h = Run({"RL.ACQUIRE", "job", "CONCURRENCY", "1", "FIXED_WINDOW", "20", "1h",
                             "COST", "2", "HEADERS"});
  EXPECT_EQ(h.substr(0, 8), "*7\r\n:1\r\n");
  EXPECT_EQ(h.substr(h.size() - 47, 5), "$40\r\n") << h;
  EXPECT_EQ(
      Run({"RL.ACQUIRE", "job", "FIXED_WINDOW", "20", "1h"}),
      "-ERR Acquire (RL.ACQUIRE) needs a CONCURRENCY limit (e.g. CONCURRENCY 3 LEASE 5m)\r\n");
  EXPECT_EQ(
      Run({"RL.CHECK", "job", "CONCURRENCY", "1"}),
      "-ERR a CONCURRENCY limit holds leases: take one with Acquire (RL.ACQUIRE) and end it with "
      "Release (RL.RELEASE)\r\n");
  EXPECT_EQ(Run({"RL.PEEK", "job", "CONCURRENCY", "1"}).substr(0, 8), "*5\r\n:0\r\n");
}

TEST_F(CommandTest, AcquireWithAPolicy) {
  const std::string a = Run({"RL.ACQUIRE", "t", "POLICY", "exports"});
  ASSERT_EQ(a.substr(0, 8), "*6\r\n:1\r\n") << a;
  EXPECT_EQ(Run({"RL.ACQUIRE", "t", "POLICY", "exports"}).substr(0, 8), "*6\r\n:0\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "t", "POLICY", "exports"}).substr(0, 36),
            "-ERR a CONCURRENCY limit holds lease");
  const std::string id = a.substr(a.size() - 42, 40);
  EXPECT_EQ(Run({"RL.RELEASE", "t", id}), ":1\r\n");
  // The caller's own definition under the policy's state.
  EXPECT_EQ(Run({"RL.ACQUIRE", "t", "POLICY", "exports", "CONCURRENCY", "1"}).substr(0, 8),
            "*6\r\n:1\r\n");
  EXPECT_EQ(Run({"RL.ACQUIRE", "t", "POLICY", "exports"}).substr(0, 8), "*6\r\n:0\r\n");
}

TEST_F(CommandTest, HeadersAreAFlatArrayInResp2AndAMapInResp3) {
  const std::string r2 = Run({"RL.CHECK", "h", "POLICY", "api", "HEADERS"});
  EXPECT_EQ(r2.substr(0, 4), "*6\r\n");
  EXPECT_NE(r2.find("*10\r\n$17\r\nX-RateLimit-Limit\r\n$1\r\n2\r\n"), std::string::npos) << r2;
  EXPECT_NE(r2.find("\"api\";q=2;w=60"), std::string::npos);
  const std::string r3 = Run({"RL.CHECK", "h", "POLICY", "api", "HEADERS"}, 3);
  EXPECT_NE(r3.find("$7\r\nheaders\r\n%5\r\n"), std::string::npos) << r3;
}

TEST_F(CommandTest, ThrottleSpeaksRedisCell) {
  // redis-cell's README example.
  EXPECT_EQ(Run({"CL.THROTTLE", "user123", "15", "30", "60", "1"}),
            "*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n");
  EXPECT_EQ(Run({"CL.THROTTLE", "user123", "15", "30", "60", "1", "x"}),
            "-ERR wrong number of arguments for 'cl.throttle' command\r\n");
  EXPECT_EQ(Run({"CL.THROTTLE", "user123", "15", "0", "60"}),
            "-ERR Zero rates are not supported\r\n");
}

TEST_F(CommandTest, ThrottleStateIsApartFromAnyPolicy) {
  // A policy may be named like redis-cell's command; it still has a state of its own.
  policies_["cl.throttle"] =
      std::make_shared<Policy>(*ParsePolicy("cl.throttle", "GCRA 31 60s BURST 1"));
  Run({"CL.THROTTLE", "k", "0", "30", "60"});
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "0", "30", "60"}).substr(0, 8), "*5\r\n:1\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "POLICY", "cl.throttle"}).substr(0, 8), "*5\r\n:1\r\n");
}

// ---- The per-connection cache of the last parsed limit list ----

// Parses `args` (as sent) for RL.CHECK with `cache`.
absl::Status ParseWith(LimitCache* cache, std::vector<std::string_view> args, Request* r) {
  return ParseRequest(Verb::kCheck, args, nullptr, r, cache);
}

// The cache's token comparison reads short tokens a word at a time: a one-byte difference at
// any position of any length (around the 4-, 8- and 16-byte load widths) must still tell them
// apart, and a same-length list that differs in one byte must be parsed, not taken from the cache.
TEST(LimitCacheTest, EveryByteOfEveryLengthIsCompared) {
  for (size_t n = 0; n <= 24; ++n) {
    const std::string a(n, 'x');
    EXPECT_TRUE(SameShortBytes(a.data(), std::string(a).data(), n)) << n;
    for (size_t i = 0; i < n; ++i) {
      std::string b = a;
      b[i] = 'y';
      EXPECT_FALSE(SameShortBytes(a.data(), b.data(), n)) << n << " at " << i;
    }
  }
  LimitCache cache;
  Request first;
  ASSERT_TRUE(ParseWith(&cache, {"RL.CHECK", "a", "TOKEN_BUCKET", "100", "1m"}, &first).ok());
  Request other;
  ASSERT_TRUE(ParseWith(&cache, {"RL.CHECK", "a", "TOKEN_BUCKET", "109", "1m"}, &other).ok());
  EXPECT_EQ(other.limits.data(), other.inline_limits.data());  // parsed again
  EXPECT_EQ(other.limits[0], (Limit{Algorithm::kTokenBucket, 109, 60000}));
}

TEST(LimitCacheTest, TheSameBytesAreParsedOnce) {
  LimitCache cache;
  Request first;
  ASSERT_TRUE(ParseWith(&cache, {"RL.CHECK", "a", "TOKEN_BUCKET", "100", "1m"}, &first).ok());
  ASSERT_EQ(first.limits.size(), 1u);
  EXPECT_EQ(first.limits.data(), first.inline_limits.data());  // parsed
  Request again;
  ASSERT_TRUE(ParseWith(&cache, {"RL.CHECK", "b", "TOKEN_BUCKET", "100", "1m"}, &again).ok());
  ASSERT_EQ(again.limits.size(), 1u);
  EXPECT_NE(again.limits.data(), again.inline_limits.data());  // from the cache
  EXPECT_EQ(again.limits[0], (Limit{Algorithm::kTokenBucket, 100, 60000}));
  EXPECT_EQ(again.key, "b");
  EXPECT_EQ(again.scope, kInlineScope);
  // COST and HEADERS after the same list still hit, and are read from this request.
  Request options;
  ASSERT_TRUE(ParseWith(&cache,
                        {"RL.CHECK", "c", "TOKEN_BUCKET", "100", "1m", "COST", "7", "HEADERS"},
                        &options)
                  .ok());
  EXPECT_NE(options.limits.data(), options.inline_limits.data());
  EXPECT_EQ(options.cost, 7);
  EXPECT_TRUE(options.headers);
}

// last() is the list stored last, whatever comes next (rl-server's prefetch guesses with it).
TEST(LimitCacheTest, LastIsTheListStoredLast) {
  LimitCache cache;
  EXPECT_TRUE(cache.last().empty());
  Request r;
  ASSERT_TRUE(
      ParseWith(&cache, {"RL.CHECK", "k", "GCRA", "5", "1s", "FIXED_WINDOW", "9", "1h"}, &r).ok());
  ASSERT_EQ(cache.last().size(), 2u);
  EXPECT_EQ(cache.last()[0], (Limit{Algorithm::kGcra, 5, 1000}));
  EXPECT_EQ(cache.last()[1], (Limit{Algorithm::kFixedWindow, 9, 3600000}));
  ASSERT_TRUE(ParseWith(&cache, {"RL.CHECK", "k", "TOKEN_BUCKET", "3", "1m"}, &r).ok());
  ASSERT_EQ(cache.last().size(), 1u);
  EXPECT_EQ(cache.last()[0], (Limit{Algorithm::kTokenBucket, 3, 60000}));
}

TEST(LimitCacheTest, WhatFollowsTheCachedBytesIsStillParsed) {
  LimitCache cache;
  Request r;
  ASSERT_TRUE(ParseWith(&cache, {"RL.CHECK", "k", "TOKEN_BUCKET", "100", "1m"}, &r).ok());
  // The cached tokens are a prefix of a longer limit or list: not the cached parse.
  Request burst;
  ASSERT_TRUE(
      ParseWith(&cache, {"RL.CHECK", "k", "TOKEN_BUCKET", "100", "1m", "BURST", "20"}, &burst)
          .ok());
  ASSERT_EQ(burst.limits.size(), 1u);
  EXPECT_EQ(burst.limits[0].burst, 20);
  Request two;
  ASSERT_TRUE(ParseWith(&cache,
                        {"RL.CHECK", "k", "TOKEN_BUCKET", "100", "1m", "FIXED_WINDOW", "5", "1d"},
                        &two)
                  .ok());
  ASSERT_EQ(two.limits.size(), 2u);
  EXPECT_EQ(two.limits[1], (Limit{Algorithm::kFixedWindow, 5, 86400000}));
  // A repeated list after the two-limit one: the two-limit list is what is cached now.
  Request again;
  ASSERT_TRUE(ParseWith(&cache,
                        {"RL.CHECK", "j", "TOKEN_BUCKET", "100", "1m", "FIXED_WINDOW", "5", "1d"},
                        &again)
                  .ok());
  EXPECT_NE(again.limits.data(), again.inline_limits.data());
  EXPECT_EQ(again.limits.size(), 2u);
  // A token that is neither COST nor HEADERS after the cached list: parsed, the syntax error kept.
  Request junk;
  EXPECT_EQ(
      ParseWith(&cache,
                {"RL.CHECK", "k", "TOKEN_BUCKET", "100", "1m", "FIXED_WINDOW", "5", "1d", "BOGUS"},
                &junk)
          .message(),
      "syntax error");
  // Other bytes (case, a number) are other lists.
  Request lower;
  ASSERT_TRUE(ParseWith(&cache, {"RL.CHECK", "k", "token_bucket", "100", "1M"}, &lower).ok());
  EXPECT_EQ(lower.limits[0], (Limit{Algorithm::kTokenBucket, 100, 60000}));
  Request other;
  ASSERT_TRUE(ParseWith(&cache, {"RL.CHECK", "k", "token_bucket", "101", "1M"}, &other).ok());
  EXPECT_EQ(other.limits[0].limit, 101);
}

TEST(LimitCacheTest, ErrorsAreNeverCachedAndPolicyFormsShareTheList) {
  LimitCache cache;
  Request bad;
  EXPECT_FALSE(ParseWith(&cache, {"RL.CHECK", "k", "GCRA", "0", "1m"}, &bad).ok());
  EXPECT_FALSE(ParseWith(&cache, {"RL.CHECK", "k", "GCRA", "0", "1m"}, &bad).ok());
  Request dup;
  EXPECT_FALSE(
      ParseWith(&cache, {"RL.CHECK", "k", "GCRA", "5", "1s", "GCRA", "9", "1s"}, &dup).ok());
  Request good;
  ASSERT_TRUE(ParseWith(&cache, {"RL.CHECK", "k", "GCRA", "5", "1s"}, &good).ok());
  // `POLICY name <limit>...` uses the same cached list, under the named policy's scope; the name
  // is still checked.
  Request named;
  ASSERT_TRUE(
      ParseWith(&cache, {"RL.CHECK", "k", "POLICY", "api", "GCRA", "5", "1s"}, &named).ok());
  EXPECT_NE(named.limits.data(), named.inline_limits.data());
  EXPECT_EQ(named.scope, "api");
  EXPECT_EQ(named.policy_name, "api");
  Request badname;
  EXPECT_FALSE(
      ParseWith(&cache, {"RL.CHECK", "k", "POLICY", "a b", "GCRA", "5", "1s"}, &badname).ok());
}

TEST_F(CommandTest, ChecksWithACacheAnswerAsWithout) {
  LimitCache cache;
  cache_ = &cache;
  EXPECT_EQ(Run({"RL.CHECK", "k", "TOKEN_BUCKET", "2", "1m"}),
            "*5\r\n:1\r\n:2\r\n:1\r\n:0\r\n:30000\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "TOKEN_BUCKET", "2", "1m"}),
            "*5\r\n:1\r\n:2\r\n:0\r\n:0\r\n:60000\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "TOKEN_BUCKET", "2", "1m"}).substr(0, 8), "*5\r\n:0\r\n");
  // The cached list followed by BURST: the burst counts.
  EXPECT_EQ(Run({"RL.CHECK", "j", "TOKEN_BUCKET", "2", "1m", "BURST", "5"}).substr(0, 16),
            "*5\r\n:1\r\n:5\r\n:4\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "TOKEN_BUCKET", "2", "1m", "COST", "x"}),
            "-ERR value is not an integer or out of range\r\n");
}

TEST(CommandDocs, HelpAndUsageComeFromTheRows) {
  const CommandDoc* policy = FindRlCommandDoc("rl.policy");
  ASSERT_NE(policy, nullptr);
  const std::vector<std::string> lines = HelpLines(*policy);
  ASSERT_GE(lines.size(), 11u);
  EXPECT_EQ(lines[0], "RL.POLICY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  // Redis's HELP syntax, one renderer for every container of both front ends.
  EXPECT_EQ(lines[1],
            "SET <name> [CONCURRENCY <n> [LEASE <ttl>]] <limit> [<limit> ...] [SHADOW] "
            "[FAIL_OPEN|FAIL_CLOSED]");
  EXPECT_EQ(lines[2], "    Defines or replaces a named policy.");
  EXPECT_EQ(lines.back(),
            "<limit> is: (TOKEN_BUCKET|GCRA|SLIDING_LOG|SLIDING_WINDOW|FIXED_WINDOW|LEAKY_BUCKET|"
            "ALIGNED_WINDOW) "
            "<limit> <window> [BURST <burst>] [BLOCK <block>]");
  EXPECT_EQ(Usage(*FindRlCommandDoc("rl.check")),
            "RL.CHECK <key> (<limit> [<limit> ...]|POLICY <name> [<limit> [<limit> ...]]) "
            "[COST <n>] [MAXWAIT <duration>] [HEADERS] [LIMITS]");
  EXPECT_EQ(Usage(*FindRlCommandDoc("rl.refund")),
            "RL.REFUND <key> (<limit> [<limit> ...]|POLICY <name> [<limit> [<limit> ...]]) "
            "COST <n> [HEADERS] [LIMITS]");
  EXPECT_EQ(Usage(*FindRlCommandDoc("rl.charge")),
            "RL.CHARGE <key> (<limit> [<limit> ...]|POLICY <name> [<limit> [<limit> ...]]) "
            "COST <n> [HEADERS] [LIMITS]");
  EXPECT_EQ(Usage(*FindRlCommandDoc("rl.acquire")),
            "RL.ACQUIRE <key> (CONCURRENCY <n> [LEASE <ttl>] [<limit> [<limit> ...]]|POLICY "
            "<name> [CONCURRENCY <n> [LEASE <ttl>]] [<limit> [<limit> ...]]) [COST <n>] "
            "[HEADERS] [LIMITS]");
  EXPECT_EQ(Usage(*FindRlCommandDoc("rl.release")), "RL.RELEASE <key> <lease_id>");
  // The <limit> block documents BLOCK beside BURST.
  const ArgDoc& limit = FindRlCommandDoc("rl.check")->arguments[1].arguments[0];
  ASSERT_EQ(limit.name, "limit");
  EXPECT_EQ(limit.arguments.back().token, "BLOCK");
  for (const CommandDoc& doc : RlCommandDocs()) {
    EXPECT_EQ(doc.first_key, doc.name == "rl.policy" ? 0 : 1) << doc.name;
  }
}

}  // namespace
}  // namespace rl::command

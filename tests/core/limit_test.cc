// Tests for the shared spec parser (rl/limit.h): durations, limits, policies, their canonical
// text and every error path a client can reach from the wire.
#include "rl/limit.h"

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace rl {
namespace {

// The status message as a std::string (Debian's abseil has its own string_view type).
std::string Message(const absl::Status& status) { return std::string(status.message()); }

absl::StatusOr<std::vector<Limit>> ParseAll(std::string_view spec, size_t* pos) {
  static thread_local std::string storage;
  storage = std::string(spec);
  static thread_local std::vector<std::string_view> tokens;
  tokens = SplitSpec(storage);
  return ParseLimits(absl::MakeConstSpan(tokens), pos);
}

absl::StatusOr<std::vector<Limit>> ParseAll(std::string_view spec) {
  size_t pos = 0;
  return ParseAll(spec, &pos);
}

TEST(AlgorithmTest, NamesRoundTripCaseInsensitively) {
  const Algorithm all[] = {Algorithm::kTokenBucket, Algorithm::kGcra,
                           Algorithm::kSlidingLog,  Algorithm::kSlidingWindow,
                           Algorithm::kFixedWindow, Algorithm::kLeakyBucket,
                           Algorithm::kConcurrency};
  for (Algorithm a : all) {
    const std::string name(AlgorithmName(a));
    EXPECT_EQ(ParseAlgorithm(name), a) << name;
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(ParseAlgorithm(lower), a) << lower;
  }
  EXPECT_EQ(AlgorithmName(Algorithm::kSlidingWindow), "SLIDING_WINDOW");
  EXPECT_EQ(ParseAlgorithm("Gcra"), Algorithm::kGcra);
  EXPECT_EQ(ParseAlgorithm("sliding_Log"), Algorithm::kSlidingLog);
}

TEST(AlgorithmTest, RejectsOthers) {
  EXPECT_FALSE(ParseAlgorithm("").has_value());
  EXPECT_FALSE(ParseAlgorithm("TOKEN").has_value());
  EXPECT_FALSE(ParseAlgorithm("TOKEN_BUCKETS").has_value());
  EXPECT_FALSE(ParseAlgorithm(" GCRA").has_value());
  EXPECT_FALSE(ParseAlgorithm("COST").has_value());
  EXPECT_FALSE(ParseAlgorithm("BURST").has_value());
}

TEST(LimitTest, ParsesEachAlgorithm) {
  std::vector<std::string_view> tokens = {"sliding_window", "100", "1m", "COST", "3"};
  size_t pos = 0;
  absl::StatusOr<Limit> limit = ParseLimit(absl::MakeConstSpan(tokens), &pos);
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->algorithm, Algorithm::kSlidingWindow);
  EXPECT_EQ(limit->limit, 100);
  EXPECT_EQ(limit->window_ms, 60000);
  EXPECT_EQ(limit->burst, 0);
  EXPECT_EQ(limit->capacity(), 100);
  EXPECT_EQ(pos, 3u);

  tokens = {"x", "TOKEN_BUCKET", "10", "1s", "burst", "50"};
  pos = 1;
  limit = ParseLimit(absl::MakeConstSpan(tokens), &pos);
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->algorithm, Algorithm::kTokenBucket);
  EXPECT_EQ(limit->burst, 50);
  EXPECT_EQ(limit->capacity(), 50);
  EXPECT_EQ(pos, 6u);

  for (const char* spec : {"GCRA 5 1s BURST 1", "LEAKY_BUCKET 5 1s BURST 100", "SLIDING_LOG 5 1s",
                           "FIXED_WINDOW 5 1d", "TOKEN_BUCKET 1 250ms"}) {
    EXPECT_TRUE(ParseAll(spec).ok()) << spec;
  }
}

TEST(LimitTest, LimitRange) {
  EXPECT_EQ((*ParseAll("FIXED_WINDOW 1099511627776 1s"))[0].limit, kMaxLimit);
  for (const char* spec : {"FIXED_WINDOW 0 1s", "FIXED_WINDOW -1 1s", "FIXED_WINDOW +1 1s",
                           "FIXED_WINDOW 1.5 1s", "FIXED_WINDOW ten 1s", "FIXED_WINDOW 1k 1s"}) {
    absl::StatusOr<std::vector<Limit>> limits = ParseAll(spec);
    ASSERT_FALSE(limits.ok()) << spec;
    EXPECT_EQ(Message(limits.status()), "limit must be between 1 and 1099511627776") << spec;
  }
  for (const char* spec :
       {"FIXED_WINDOW 1099511627777 1s", "FIXED_WINDOW 99999999999999999999999 1s"}) {
    absl::StatusOr<std::vector<Limit>> limits = ParseAll(spec);
    ASSERT_FALSE(limits.ok()) << spec;
    EXPECT_EQ(Message(limits.status()), "limit must be between 1 and 1099511627776") << spec;
  }
}

TEST(LimitTest, BurstRules) {
  EXPECT_EQ(Message(ParseAll("TOKEN_BUCKET 10 1s BURST 0").status()),
            "burst must be between 1 and 1099511627776");
  EXPECT_EQ(Message(ParseAll("TOKEN_BUCKET 10 1s BURST x").status()),
            "burst must be between 1 and 1099511627776");
  EXPECT_EQ(Message(ParseAll("TOKEN_BUCKET 10 1s BURST 1099511627777").status()),
            "burst must be between 1 and 1099511627776");
  EXPECT_EQ(Message(ParseAll("GCRA 10 1s BURST").status()), "BURST needs a value");
  for (const char* algorithm : {"SLIDING_LOG", "SLIDING_WINDOW", "FIXED_WINDOW"}) {
    absl::StatusOr<std::vector<Limit>> limits = ParseAll(std::string(algorithm) + " 10 1s BURST 5");
    ASSERT_FALSE(limits.ok()) << algorithm;
    EXPECT_EQ(Message(limits.status()), "BURST is not allowed with " + std::string(algorithm));
  }
}

TEST(LimitTest, MissingOrUnknownPieces) {
  EXPECT_EQ(Message(ParseAll("").status()), "missing limit (e.g. SLIDING_WINDOW 100 1m)");
  EXPECT_EQ(Message(ParseAll("GCRA").status()),
            "GCRA needs a limit and a window, e.g. GCRA 100 1m");
  EXPECT_EQ(Message(ParseAll("gcra 10").status()),
            "GCRA needs a limit and a window, e.g. GCRA 100 1m");
  EXPECT_EQ(Message(ParseAll("FOO 10 1s").status()),
            "unknown algorithm 'FOO' (use TOKEN_BUCKET, GCRA, SLIDING_LOG, SLIDING_WINDOW, "
            "FIXED_WINDOW, LEAKY_BUCKET, CONCURRENCY or ALIGNED_WINDOW)");
  EXPECT_EQ(Message(ParseAll("SLIDING_WINDOW 10 COST").status()),
            "invalid window 'COST' (use e.g. 250ms, 1s, 1m, 1h, 1d)");
}

TEST(LimitTest, ParseLimitsStopsAtFirstNonAlgorithmToken) {
  size_t pos = 0;
  absl::StatusOr<std::vector<Limit>> limits =
      ParseAll("SLIDING_WINDOW 100 1m fixed_window 5000 1d COST 3 HEADERS", &pos);
  ASSERT_TRUE(limits.ok()) << limits.status();
  ASSERT_EQ(limits->size(), 2u);
  EXPECT_EQ((*limits)[1].algorithm, Algorithm::kFixedWindow);
  EXPECT_EQ((*limits)[1].window_ms, 86400000);
  EXPECT_EQ(pos, 6u);

  pos = 0;
  limits = ParseAll("TOKEN_BUCKET 10 1s BURST 20 GCRA 1 1m", &pos);
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(limits->size(), 2u);
  EXPECT_EQ(pos, 8u);
}

TEST(LimitTest, FailureLeavesPosUntouched) {
  size_t pos = 0;
  EXPECT_FALSE(ParseAll("SLIDING_WINDOW 100 1m FIXED_WINDOW 0 1d", &pos).ok());
  EXPECT_EQ(pos, 0u);
}

TEST(LimitTest, AtMostEightLimits) {
  std::string spec;
  for (int i = 1; i <= 8; ++i) spec += "FIXED_WINDOW 10 " + std::to_string(i) + "s ";
  absl::StatusOr<std::vector<Limit>> limits = ParseAll(spec);
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(limits->size(), kMaxLimitsPerCheck);
  spec += "FIXED_WINDOW 10 9s";
  EXPECT_EQ(Message(ParseAll(spec).status()), "too many limits (at most 8 per check)");
}

TEST(LimitTest, DuplicatesShareStateAndAreRejected) {
  EXPECT_EQ(Message(ParseAll("SLIDING_WINDOW 100 1m SLIDING_WINDOW 50 60s").status()),
            "duplicate limit SLIDING_WINDOW 1m (limits of one algorithm need different windows)");
  // Different algorithm or window: separate state, fine.
  EXPECT_TRUE(ParseAll("SLIDING_WINDOW 100 1m FIXED_WINDOW 100 1m").ok());
  EXPECT_TRUE(ParseAll("SLIDING_WINDOW 100 1m SLIDING_WINDOW 100 1h").ok());
}

TEST(LimitTest, FormatRoundTrips) {
  for (const char* spec : {"TOKEN_BUCKET 100 1m BURST 20", "GCRA 5 1500ms", "SLIDING_LOG 1 1ms",
                           "SLIDING_WINDOW 1099511627776 3650d", "FIXED_WINDOW 5000 1d",
                           "LEAKY_BUCKET 10 1s BURST 1000"}) {
    absl::StatusOr<std::vector<Limit>> limits = ParseAll(spec);
    ASSERT_TRUE(limits.ok()) << spec << ": " << limits.status();
    EXPECT_EQ(FormatLimit((*limits)[0]), spec);
  }
  // Canonicalisation: units shortened, names upper-cased, a default BURST dropped.
  EXPECT_EQ(FormatLimit((*ParseAll("token_bucket 10 60000ms burst 10"))[0]), "TOKEN_BUCKET 10 1m");
  Limit limit = (*ParseAll("gcra 7 90s BURST 9"))[0];
  EXPECT_EQ(FormatLimit(limit), "GCRA 7 90s BURST 9");
  EXPECT_EQ((*ParseAll(FormatLimit(limit)))[0], limit);
}

TEST(LimitTest, BlockOption) {
  auto limits = ParseAll("FIXED_WINDOW 5 15m BLOCK 1h");
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ((*limits)[0].block_ms, 3600 * 1000);
  EXPECT_EQ(FormatLimit((*limits)[0]), "FIXED_WINDOW 5 15m BLOCK 1h");
  // With BURST, in either order; case-insensitive.
  limits = ParseAll("token_bucket 10 1s block 30s burst 20");
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ((*limits)[0].burst, 20);
  EXPECT_EQ((*limits)[0].block_ms, 30000);
  EXPECT_EQ(FormatLimit((*limits)[0]), "TOKEN_BUCKET 10 1s BURST 20 BLOCK 30s");
  EXPECT_EQ(Message(ParseAll("GCRA 1 1s BLOCK").status()), "BLOCK needs a value");
  EXPECT_EQ(Message(ParseAll("GCRA 1 1s BLOCK 1h BLOCK 2h").status()),
            "BLOCK given more than once");
  EXPECT_EQ(Message(ParseAll("GCRA 1 1s BURST 2 BURST 3").status()), "BURST given more than once");
  EXPECT_EQ(Message(ParseAll("GCRA 1 1s BLOCK 0").status()),
            "window '0' out of range (1ms to 3650d)");
  EXPECT_EQ(Message(ParseAll("GCRA 1 1s BLOCK -5").status()),
            "invalid window '-5' (use e.g. 250ms, 1s, 1m, 1h, 1d)");
  EXPECT_EQ(Message(ParseAll("GCRA 1 1s LEASE 1m").status()), "LEASE is only for CONCURRENCY");
  // Built in code: the same rules.
  Limit l{Algorithm::kGcra, 1, 1000};
  l.block_ms = kMaxWindowMs + 1;
  EXPECT_FALSE(ValidateLimits({l}).ok());
  l.block_ms = -1;
  EXPECT_FALSE(ValidateLimits({l}).ok());
}

TEST(LimitTest, ConcurrencyLimit) {
  auto limits = ParseAll("CONCURRENCY 3 LEASE 5m FIXED_WINDOW 20 1h");
  ASSERT_TRUE(limits.ok()) << limits.status();
  ASSERT_EQ(limits->size(), 2u);
  EXPECT_EQ((*limits)[0].algorithm, Algorithm::kConcurrency);
  EXPECT_EQ((*limits)[0].limit, 3);
  EXPECT_EQ((*limits)[0].window_ms, 5 * 60 * 1000);
  EXPECT_EQ(FormatLimit((*limits)[0]), "CONCURRENCY 3 LEASE 5m");
  // The default ttl, left out of the canonical text.
  limits = ParseAll("concurrency 1");
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ((*limits)[0].window_ms, kDefaultLeaseMs);
  EXPECT_EQ(FormatLimit((*limits)[0]), "CONCURRENCY 1");
  EXPECT_EQ(Message(ParseAll("CONCURRENCY").status()),
            "CONCURRENCY needs the most leases held at once, e.g. CONCURRENCY 3 [LEASE 5m]");
  for (const char* bad : {"CONCURRENCY 0", "CONCURRENCY 10001", "CONCURRENCY -1", "CONCURRENCY x",
                          "CONCURRENCY 99999999999999999999999"}) {
    EXPECT_EQ(Message(ParseAll(bad).status()), "CONCURRENCY must be between 1 and 10000") << bad;
  }
  EXPECT_EQ(Message(ParseAll("CONCURRENCY 3 LEASE").status()), "LEASE needs a duration");
  EXPECT_EQ(Message(ParseAll("CONCURRENCY 3 LEASE 0").status()),
            "window '0' out of range (1ms to 3650d)");
  EXPECT_EQ(Message(ParseAll("CONCURRENCY 3 BLOCK 1h").status()),
            "BLOCK is not allowed with CONCURRENCY");
  EXPECT_EQ(Message(ParseAll("CONCURRENCY 3 BURST 4").status()),
            "BURST is not allowed with CONCURRENCY");
  EXPECT_EQ(Message(ParseAll("CONCURRENCY 3 CONCURRENCY 4 LEASE 1s").status()),
            "more than one CONCURRENCY limit (one per check)");
  // In a policy, with rate limits, round-tripping.
  auto policy =
      ParsePolicy("exports", std::string_view("CONCURRENCY 3 LEASE 10m FIXED_WINDOW 20 1h"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(FormatPolicy(*policy), "CONCURRENCY 3 LEASE 10m FIXED_WINDOW 20 1h");
  EXPECT_TRUE(ParsePolicy("exports", FormatPolicy(*policy))->limits == policy->limits);
}

TEST(PolicyTest, ParsesLimitsAndFlags) {
  absl::StatusOr<Policy> policy =
      ParsePolicy("api", std::string_view("SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->name, "api");
  EXPECT_EQ(policy->limits.size(), 2u);
  EXPECT_FALSE(policy->shadow);
  EXPECT_EQ(policy->failure_mode, FailureMode::kFailOpen);

  policy = ParsePolicy("api", std::string_view("GCRA 1 1s fail_closed Shadow"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_TRUE(policy->shadow);
  EXPECT_EQ(policy->failure_mode, FailureMode::kFailClosed);

  policy = ParsePolicy("api", std::string_view("  GCRA 1 1s\tSHADOW\nFAIL_OPEN  "));
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_TRUE(policy->shadow);
  EXPECT_EQ(policy->failure_mode, FailureMode::kFailOpen);

  // A repeated flag is a mistake worth reporting, not something to accept silently.
  EXPECT_EQ(ParsePolicy("api", std::string_view("GCRA 1 1s SHADOW SHADOW")).status().message(),
            "SHADOW given more than once");
  EXPECT_EQ(
      ParsePolicy("api", std::string_view("GCRA 1 1s FAIL_CLOSED FAIL_CLOSED")).status().message(),
      "failure mode given more than once");
}

TEST(PolicyTest, TokenOverloadMatchesStringOverload) {
  const std::vector<std::string_view> tokens = {"TOKEN_BUCKET", "10", "1s",
                                                "BURST",        "30", "SHADOW"};
  absl::StatusOr<Policy> a = ParsePolicy("p", absl::MakeConstSpan(tokens));
  absl::StatusOr<Policy> b =
      ParsePolicy("p", std::string_view("TOKEN_BUCKET 10 1s BURST 30 SHADOW"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->limits, b->limits);
  EXPECT_EQ(a->shadow, b->shadow);
}

TEST(PolicyTest, Errors) {
  EXPECT_EQ(Message(ParsePolicy("api", std::string_view("GCRA 1 1s FOO")).status()),
            "syntax error near 'FOO'");
  EXPECT_EQ(Message(ParsePolicy("api", std::string_view("GCRA 1 1s SHADOW GCRA 1 1m")).status()),
            "syntax error near 'GCRA'");
  EXPECT_EQ(Message(ParsePolicy("api", std::string_view("GCRA 1 1s COST 5")).status()),
            "syntax error near 'COST'");
  EXPECT_EQ(
      Message(ParsePolicy("api", std::string_view("GCRA 1 1s FAIL_OPEN FAIL_CLOSED")).status()),
      "FAIL_OPEN and FAIL_CLOSED exclude each other");
  EXPECT_EQ(Message(ParsePolicy("api", std::string_view("")).status()),
            "missing limit (e.g. SLIDING_WINDOW 100 1m)");
  EXPECT_EQ(Message(ParsePolicy("api", std::string_view("SHADOW")).status()),
            "unknown algorithm 'SHADOW' (use TOKEN_BUCKET, GCRA, SLIDING_LOG, SLIDING_WINDOW, "
            "FIXED_WINDOW, LEAKY_BUCKET, CONCURRENCY or ALIGNED_WINDOW)");
  EXPECT_FALSE(ParsePolicy("api", std::string_view("GCRA 0 1s")).ok());
}

TEST(PolicyTest, NameRules) {
  const std::string_view spec = "GCRA 1 1s";
  EXPECT_TRUE(ParsePolicy("a", spec).ok());
  EXPECT_TRUE(ParsePolicy(std::string(128, 'n'), spec).ok());
  EXPECT_TRUE(ParsePolicy("tenant:{42}/route-1_x.y~!", spec).ok());
  for (const std::string& name :
       {std::string(), std::string(129, 'n'), std::string("a b"), std::string("a\tb"),
        std::string("a\r\nb"), std::string("caf\xc3\xa9"), std::string("a\0b", 3),
        std::string("\x7f")}) {
    absl::StatusOr<Policy> policy = ParsePolicy(name, spec);
    ASSERT_FALSE(policy.ok()) << name;
    EXPECT_EQ(Message(policy.status()).rfind("invalid policy name '", 0), 0u);
    EXPECT_EQ(Message(policy.status()).find('\n'), std::string::npos);
  }
}

TEST(PolicyTest, FormatRoundTrips) {
  for (const char* spec :
       {"SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d", "GCRA 1 1s SHADOW",
        "TOKEN_BUCKET 10 1s BURST 30 FAIL_CLOSED", "LEAKY_BUCKET 5 250ms SHADOW FAIL_CLOSED"}) {
    absl::StatusOr<Policy> policy = ParsePolicy("p", std::string_view(spec));
    ASSERT_TRUE(policy.ok()) << spec << ": " << policy.status();
    EXPECT_EQ(FormatPolicy(*policy), spec);
    absl::StatusOr<Policy> again = ParsePolicy("p", std::string_view(FormatPolicy(*policy)));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->limits, policy->limits);
    EXPECT_EQ(again->shadow, policy->shadow);
    EXPECT_EQ(again->failure_mode, policy->failure_mode);
  }
  EXPECT_EQ(FormatPolicy(*ParsePolicy("p", std::string_view("gcra 1 1000ms fail_open shadow"))),
            "GCRA 1 1s SHADOW");
}

TEST(SplitSpecTest, SplitsOnAnyWhitespace) {
  EXPECT_TRUE(SplitSpec("").empty());
  EXPECT_TRUE(SplitSpec(" \t\r\n").empty());
  EXPECT_EQ(SplitSpec("a"), (std::vector<std::string_view>{"a"}));
  EXPECT_EQ(SplitSpec("  a\tbb \n ccc\r\n"), (std::vector<std::string_view>{"a", "bb", "ccc"}));
}

TEST(ValidateTest, PoliciesBuiltInCode) {
  Policy policy;
  policy.name = "p";
  EXPECT_FALSE(ValidatePolicy(policy).ok());  // no limits
  policy.limits.push_back(Limit{Algorithm::kGcra, 10, 1000, 0});
  EXPECT_TRUE(ValidatePolicy(policy).ok());
  policy.limits[0].burst = 5;
  EXPECT_TRUE(ValidatePolicy(policy).ok());
  policy.limits[0].burst = -1;
  EXPECT_FALSE(ValidatePolicy(policy).ok());
  policy.limits[0] = Limit{Algorithm::kFixedWindow, 10, 1000, 5};
  EXPECT_FALSE(ValidatePolicy(policy).ok());  // BURST on a window algorithm
  policy.limits[0] = Limit{Algorithm::kFixedWindow, 0, 1000, 0};
  EXPECT_FALSE(ValidatePolicy(policy).ok());
  policy.limits[0] = Limit{Algorithm::kFixedWindow, 1, kMaxWindowMs + 1, 0};
  EXPECT_FALSE(ValidatePolicy(policy).ok());
  policy.limits[0] = Limit{static_cast<Algorithm>(99), 1, 1000, 0};
  EXPECT_FALSE(ValidatePolicy(policy).ok());
  policy.limits[0] = Limit{Algorithm::kFixedWindow, 1, 1000, 0};
  policy.limits.push_back(policy.limits[0]);
  EXPECT_FALSE(ValidatePolicy(policy).ok());  // duplicate
  policy.limits.pop_back();
  policy.name = "bad name";
  EXPECT_FALSE(ValidatePolicy(policy).ok());
}

}  // namespace
}  // namespace rl

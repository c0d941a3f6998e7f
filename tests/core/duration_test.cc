// Tests for durations (rl/limit.h): every unit, the range, a bare number refused with the fix or
// read as milliseconds in text that earlier versions stored, and the canonical rendering.
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "rl/limit.h"

namespace rl {
namespace {

std::string Message(const absl::Status& status) { return std::string(status.message()); }

absl::Status ParseSpec(std::string_view spec) {
  const std::vector<std::string_view> tokens = SplitSpec(spec);
  size_t pos = 0;
  return ParseLimits(absl::MakeConstSpan(tokens), &pos).status();
}

TEST(DurationTest, ParsesEveryUnit) {
  EXPECT_EQ(*ParseDurationMs("250ms"), 250);
  EXPECT_EQ(*ParseDurationMs("1s"), 1000);
  EXPECT_EQ(*ParseDurationMs("60s"), 60000);
  EXPECT_EQ(*ParseDurationMs("1m"), 60000);
  EXPECT_EQ(*ParseDurationMs("1h"), 3600000);
  EXPECT_EQ(*ParseDurationMs("1d"), 86400000);
  EXPECT_EQ(*ParseDurationMs("007s"), 7000);
  EXPECT_EQ(*ParseDurationMs("1MS"), 1);
  EXPECT_EQ(*ParseDurationMs("2M"), 120000);
  EXPECT_EQ(*ParseDurationMs("3H"), 3 * 3600000);
  EXPECT_EQ(*ParseDurationMs("1D"), 86400000);
}

TEST(DurationTest, RangeEdges) {
  EXPECT_EQ(*ParseDurationMs("3650d"), kMaxWindowMs);
  EXPECT_EQ(*ParseDurationMs(std::to_string(kMaxWindowMs), BareDuration::kMilliseconds),
            kMaxWindowMs);
  EXPECT_EQ(*ParseDurationMs(std::to_string(kMaxWindowMs) + "ms"), kMaxWindowMs);
  EXPECT_EQ(*ParseDurationMs("87600h"), kMaxWindowMs);
  EXPECT_FALSE(ParseDurationMs("3651d").ok());
  EXPECT_FALSE(ParseDurationMs("87601h").ok());
  EXPECT_FALSE(ParseDurationMs(std::to_string(kMaxWindowMs + 1)).ok());
  EXPECT_FALSE(ParseDurationMs("0").ok());
  EXPECT_FALSE(ParseDurationMs("0ms").ok());
  EXPECT_FALSE(ParseDurationMs("0d").ok());
  EXPECT_FALSE(ParseDurationMs("00s").ok());
}

// A number without a unit is refused with the fix in the message: people migrating from Lua
// scripts and redis-cell mean seconds, earlier versions read milliseconds.
TEST(DurationTest, ABareNumberIsRefusedWithTheFix) {
  EXPECT_EQ(Message(ParseDurationMs("60").status()), "window '60' needs a unit: 60s, 1m, 250ms");
  EXPECT_EQ(Message(ParseDurationMs("1").status()), "window '1' needs a unit: 1s, 1m, 250ms");
  EXPECT_EQ(Message(ParseSpec("TOKEN_BUCKET 10 60")), "window '60' needs a unit: 60s, 1m, 250ms");
  EXPECT_EQ(Message(ParseSpec("GCRA 10 1s BLOCK 30")), "BLOCK '30' needs a unit: 30s, 1m, 250ms");
  EXPECT_EQ(Message(ParseSpec("CONCURRENCY 3 LEASE 300")),
            "LEASE '300' needs a unit: 300s, 1m, 250ms");
  EXPECT_EQ(Message(ParsePolicy("p", std::string_view("SLIDING_WINDOW 100 60")).status()),
            "window '60' needs a unit: 60s, 1m, 250ms");
  // Zero or too large is out of range whatever the unit.
  EXPECT_EQ(Message(ParseDurationMs("0").status()), "window '0' out of range (1ms to 3650d)");
}

// Text that earlier versions stored or replicated keeps its meaning: a bare number was
// milliseconds.
TEST(DurationTest, LegacyTextReadsABareNumberAsMilliseconds) {
  EXPECT_EQ(*ParseDurationMs("250", BareDuration::kMilliseconds), 250);
  EXPECT_EQ(*ParseDurationMs("1", BareDuration::kMilliseconds), 1);
  EXPECT_EQ(*ParseDurationMs("1m", BareDuration::kMilliseconds), 60000);
  EXPECT_FALSE(ParseDurationMs("0", BareDuration::kMilliseconds).ok());
  absl::StatusOr<Policy> policy = ParsePolicy(
      "old", std::string_view("TOKEN_BUCKET 10 60000 BLOCK 5000 CONCURRENCY 2 LEASE 30"),
      BareDuration::kMilliseconds);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(FormatPolicy(*policy), "TOKEN_BUCKET 10 1m BLOCK 5s CONCURRENCY 2 LEASE 30ms");
}

TEST(DurationTest, OverflowIsAnErrorNotAWrap) {
  for (const char* text : {"99999999999999999999d", "99999999999999999999", "9223372036854775807",
                           "9223372036854775808ms", "18446744073709551617s", "106751991167301d",
                           "153722867280912931m"}) {
    absl::StatusOr<int64_t> ms = ParseDurationMs(text);
    ASSERT_FALSE(ms.ok()) << text << " -> " << *ms;
    EXPECT_EQ(ms.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(Message(ms.status()).find("out of range"), std::string::npos) << Message(ms.status());
  }
}

TEST(DurationTest, RejectsMalformed) {
  for (const char* text :
       {"",    "5x",   "ms",   "s",    "-1s", "+1s", " 1s", "1s ",   "1 s", "1.5s",
        "1e3", "0x10", "1sec", "1min", "1w",  "1y",  "1ss", "1msms", "s1",  "1\r\n"}) {
    absl::StatusOr<int64_t> ms = ParseDurationMs(text);
    EXPECT_FALSE(ms.ok()) << "'" << text << "'";
    EXPECT_EQ(ms.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(Message(ParseDurationMs("5x").status()),
            "invalid window '5x' (use e.g. 250ms, 1s, 1m, 1h, 1d)");
}

TEST(DurationTest, ErrorMessagesAreOneSafeLine) {
  const std::string hostile = "1\r\n+OK\r\n" + std::string(1000, 'x');
  absl::StatusOr<int64_t> ms = ParseDurationMs(hostile);
  ASSERT_FALSE(ms.ok());
  const std::string message = Message(ms.status());
  EXPECT_EQ(message.find('\r'), std::string::npos);
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_LT(message.size(), 150u);
}

TEST(DurationTest, FormatIsShortestExactUnit) {
  EXPECT_EQ(FormatDuration(1), "1ms");
  EXPECT_EQ(FormatDuration(250), "250ms");
  EXPECT_EQ(FormatDuration(1000), "1s");
  EXPECT_EQ(FormatDuration(1500), "1500ms");
  EXPECT_EQ(FormatDuration(60000), "1m");
  EXPECT_EQ(FormatDuration(90000), "90s");
  EXPECT_EQ(FormatDuration(3600000), "1h");
  EXPECT_EQ(FormatDuration(5400000), "90m");
  EXPECT_EQ(FormatDuration(86400000), "1d");
  EXPECT_EQ(FormatDuration(90000000), "25h");
  EXPECT_EQ(FormatDuration(kMaxWindowMs), "3650d");
  EXPECT_EQ(FormatDuration(0), "0ms");
  EXPECT_EQ(FormatDuration(-5), "-5ms");
}

TEST(DurationTest, FormatRoundTrips) {
  for (int64_t ms :
       {int64_t{1}, int64_t{999}, int64_t{1000}, int64_t{1001}, int64_t{59999}, int64_t{60000},
        int64_t{3600000}, int64_t{86400000} * 7, kMaxWindowMs - 1, kMaxWindowMs}) {
    EXPECT_EQ(*ParseDurationMs(FormatDuration(ms)), ms) << ms;
  }
}

}  // namespace
}  // namespace rl

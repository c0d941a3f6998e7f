// Tests for HeaderValues (rl/headers.h): exact header text for allowed, denied, "never" and
// multi-limit decisions, rounding up, quoting, hostile values, and a CONCURRENCY limit's entry.
#include "rl/headers.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rl/key_state.h"
#include "rl/limiter.h"

namespace rl {
namespace {

constexpr int64_t kWallNowMs = 1'700'000'000'000;  // an exact second

std::optional<std::string> Find(const std::vector<HeaderField>& fields, const std::string& name) {
  std::optional<std::string> value;
  for (const HeaderField& field : fields) {
    if (field.name == name) {
      EXPECT_FALSE(value.has_value()) << "duplicate header " << name;
      value = field.value;
    }
  }
  return value;
}

LimitResult Result(bool allowed, int64_t limit, int64_t window_ms, int64_t remaining,
                   int64_t retry_after_ms, int64_t reset_after_ms) {
  LimitResult r;
  r.allowed = allowed;
  r.limit = limit;
  r.window_ms = window_ms;
  r.remaining = remaining;
  r.retry_after_ms = retry_after_ms;
  r.reset_after_ms = reset_after_ms;
  return r;
}

// A decision whose top-level values are those of limits[binding], as the limiter builds it.
Decision Make(std::vector<LimitResult> limits, uint8_t binding) {
  Decision d;
  d.count = static_cast<uint8_t>(limits.size());
  d.binding = binding;
  bool allowed = true;
  for (size_t i = 0; i < limits.size(); ++i) {
    d.limits[i] = limits[i];
    allowed = allowed && limits[i].allowed;
  }
  const LimitResult& b = limits[binding];
  d.allowed = allowed;
  d.limit = b.limit;
  d.remaining = b.remaining;
  d.retry_after_ms = b.retry_after_ms;
  d.reset_after_ms = b.reset_after_ms;
  return d;
}

TEST(HeadersTest, AllowedSingleLimit) {
  const Decision d = Make({Result(true, 100, 60000, 42, 0, 16001)}, 0);
  const std::vector<HeaderField> fields = HeaderValues(d, "api", kWallNowMs);
  ASSERT_EQ(fields.size(), 5u);
  EXPECT_EQ(fields[0].name, "X-RateLimit-Limit");
  EXPECT_EQ(fields[0].value, "100");
  EXPECT_EQ(fields[1].name, "X-RateLimit-Remaining");
  EXPECT_EQ(fields[1].value, "42");
  EXPECT_EQ(fields[2].name, "X-RateLimit-Reset");
  EXPECT_EQ(fields[2].value, "1700000017");  // 16.001 s rounds up to 17
  EXPECT_EQ(fields[3].name, "RateLimit-Policy");
  EXPECT_EQ(fields[3].value, "\"api\";q=100;w=60");
  EXPECT_EQ(fields[4].name, "RateLimit");
  EXPECT_EQ(fields[4].value, "\"api\";r=42;t=17");
  EXPECT_FALSE(Find(fields, "Retry-After").has_value());
}

TEST(HeadersTest, ExactSecondsAreNotRoundedFurther) {
  const Decision d = Make({Result(true, 10, 1000, 9, 0, 1000)}, 0);
  const std::vector<HeaderField> fields = HeaderValues(d, "p", kWallNowMs);
  EXPECT_EQ(*Find(fields, "X-RateLimit-Reset"), "1700000001");
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"p\";r=9;t=1");
  EXPECT_EQ(*Find(fields, "RateLimit-Policy"), "\"p\";q=10;w=1");
}

TEST(HeadersTest, ResetUsesWallClockFraction) {
  // 0.999 s into a second plus 2 ms of reset ends in the next second: rounded up.
  const Decision d = Make({Result(true, 10, 1000, 9, 0, 2)}, 0);
  EXPECT_EQ(*Find(HeaderValues(d, "p", kWallNowMs + 999), "X-RateLimit-Reset"), "1700000002");
  EXPECT_EQ(*Find(HeaderValues(d, "p", kWallNowMs + 998), "X-RateLimit-Reset"), "1700000001");
  EXPECT_EQ(*Find(HeaderValues(d, "p", kWallNowMs), "RateLimit"), "\"p\";r=9;t=1");
}

TEST(HeadersTest, FreshStateResetsNow) {
  const Decision d = Make({Result(true, 10, 1000, 10, 0, 0)}, 0);
  const std::vector<HeaderField> fields = HeaderValues(d, "p", kWallNowMs);
  EXPECT_EQ(*Find(fields, "X-RateLimit-Reset"), "1700000000");
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"p\";r=10;t=0");
}

TEST(HeadersTest, SubSecondWindowShowsAsOneSecond) {
  const Decision d = Make({Result(true, 5, 250, 4, 0, 50)}, 0);
  const std::vector<HeaderField> fields = HeaderValues(d, "fast", kWallNowMs);
  EXPECT_EQ(*Find(fields, "RateLimit-Policy"), "\"fast\";q=5;w=1");
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"fast\";r=4;t=1");
}

TEST(HeadersTest, DeniedCarriesRetryAfterRoundedUp) {
  const Decision d = Make({Result(false, 100, 60000, 0, 1001, 59000)}, 0);
  const std::vector<HeaderField> fields = HeaderValues(d, "api", kWallNowMs);
  ASSERT_EQ(fields.size(), 6u);
  EXPECT_EQ(fields[5].name, "Retry-After");
  EXPECT_EQ(fields[5].value, "2");
  EXPECT_EQ(*Find(fields, "X-RateLimit-Remaining"), "0");
  EXPECT_EQ(*Find(fields, "X-RateLimit-Reset"), "1700000059");
  // When denied, t is the retry: Retry-After never points before the end of the window.
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"api\";r=0;t=2");
}

TEST(HeadersTest, DeniedOneMillisecondIsOneSecond) {
  const Decision d = Make({Result(false, 1, 1000, 0, 1, 1)}, 0);
  const std::vector<HeaderField> fields = HeaderValues(d, "p", kWallNowMs);
  EXPECT_EQ(*Find(fields, "Retry-After"), "1");
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"p\";r=0;t=1");
}

TEST(HeadersTest, NeverOmitsRetryAfter) {
  // Cost above capacity: no delay would help, so no Retry-After; t is the full reset.
  const Decision d = Make({Result(false, 10, 60000, 7, kRetryNever, 18000)}, 0);
  const std::vector<HeaderField> fields = HeaderValues(d, "api", kWallNowMs);
  EXPECT_FALSE(Find(fields, "Retry-After").has_value());
  EXPECT_EQ(fields.size(), 5u);
  EXPECT_EQ(*Find(fields, "X-RateLimit-Remaining"), "7");
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"api\";r=7;t=18");
  EXPECT_EQ(*Find(fields, "X-RateLimit-Reset"), "1700000018");
}

TEST(HeadersTest, AllowedLeakyBucketDelayIsNotRetryAfter) {
  // An accepted leaky-bucket call carries its queueing delay; it is not a denial.
  const Decision d = Make({Result(true, 10, 10000, 3, 2500, 7000)}, 0);
  const std::vector<HeaderField> fields = HeaderValues(d, "q", kWallNowMs);
  EXPECT_FALSE(Find(fields, "Retry-After").has_value());
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"q\";r=3;t=7");
}

TEST(HeadersTest, MultiLimitNamesEachWindow) {
  const Decision d = Make(
      {Result(true, 100, 60000, 99, 0, 600), Result(true, 5000, 86400000, 12, 0, 80000000)}, 1);
  const std::vector<HeaderField> fields = HeaderValues(d, "api", kWallNowMs);
  EXPECT_EQ(*Find(fields, "RateLimit-Policy"), "\"api-1m\";q=100;w=60, \"api-1d\";q=5000;w=86400");
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"api-1d\";r=12;t=80000");
  EXPECT_EQ(*Find(fields, "X-RateLimit-Limit"), "5000");
  EXPECT_EQ(*Find(fields, "X-RateLimit-Remaining"), "12");
  EXPECT_EQ(*Find(fields, "X-RateLimit-Reset"), "1700080000");
}

TEST(HeadersTest, MultiLimitDeniedByOne) {
  const Decision d =
      Make({Result(false, 100, 60000, 0, 30500, 60000),
            Result(true, 5000, 86400000, 4000, 0, 9000000), Result(true, 10, 1500, 9, 0, 150)},
           0);
  const std::vector<HeaderField> fields = HeaderValues(d, "api", kWallNowMs);
  EXPECT_EQ(*Find(fields, "RateLimit-Policy"),
            "\"api-1m\";q=100;w=60, \"api-1d\";q=5000;w=86400, \"api-1500ms\";q=10;w=2");
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"api-1m\";r=0;t=31");
  EXPECT_EQ(*Find(fields, "Retry-After"), "31");
}

TEST(HeadersTest, SharedWindowsGetDistinctNames) {
  const Decision d =
      Make({Result(true, 100, 60000, 50, 0, 1000), Result(true, 10, 60000, 2, 0, 48000)}, 1);
  const std::vector<HeaderField> fields = HeaderValues(d, "api", kWallNowMs);
  EXPECT_EQ(*Find(fields, "RateLimit-Policy"), "\"api-1m-1\";q=100;w=60, \"api-1m-2\";q=10;w=60");
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"api-1m-2\";r=2;t=48");
}

TEST(HeadersTest, NamesAreQuotedSafely) {
  const Decision d = Make({Result(true, 1, 1000, 1, 0, 0)}, 0);
  EXPECT_EQ(*Find(HeaderValues(d, "a\"b\\c", kWallNowMs), "RateLimit"), "\"a\\\"b\\\\c\";r=1;t=0");
  // Control bytes and non-ASCII cannot appear in a Structured Fields string (or a header line).
  EXPECT_EQ(*Find(HeaderValues(d, "x\r\ny\xc3\xa9", kWallNowMs), "RateLimit-Policy"),
            "\"x??y??\";q=1;w=1");
  // No name: the draft's customary "default".
  EXPECT_EQ(*Find(HeaderValues(d, "", kWallNowMs), "RateLimit"), "\"default\";r=1;t=0");
}

TEST(HeadersTest, NoPerLimitResultsStillGivesCoreHeaders) {
  Decision d;
  d.allowed = false;
  d.limit = 5;
  d.remaining = 0;
  d.retry_after_ms = 1200;
  d.reset_after_ms = 4000;
  d.count = 0;
  const std::vector<HeaderField> fields = HeaderValues(d, "p", kWallNowMs);
  EXPECT_FALSE(Find(fields, "RateLimit-Policy").has_value());
  EXPECT_EQ(*Find(fields, "X-RateLimit-Limit"), "5");
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"p\";r=0;t=2");
  EXPECT_EQ(*Find(fields, "Retry-After"), "2");
}

// A failure mode evaluated no limit: its zeros mean "unknown". Printed as rate-limit headers
// they would tell a client it has no allowance (X-RateLimit-Limit: 0); only when to ask again
// (fail-closed) is known. A shadow policy's fail-closed decision is allowed: nothing at all.
TEST(HeadersTest, FailureModeDecisionsCarryNoRateLimitFields) {
  Decision open;
  open.decided_by = DecidedBy::kFailOpen;
  EXPECT_TRUE(HeaderValues(open, "api", kWallNowMs).empty());

  Decision closed;
  closed.decided_by = DecidedBy::kFailClosed;
  closed.allowed = false;
  closed.retry_after_ms = 1500;
  const std::vector<HeaderField> fields = HeaderValues(closed, "api", kWallNowMs);
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields[0].name, "Retry-After");
  EXPECT_EQ(fields[0].value, "2");

  Decision shadow = closed;
  ApplyShadow(shadow);
  EXPECT_TRUE(HeaderValues(shadow, "api", kWallNowMs).empty());

  // The local fallback and an overflow decision evaluated real limits: headers as usual.
  Decision fallback = Make({Result(true, 1, 60'000, 0, 0, 60'000)}, 0);
  fallback.decided_by = DecidedBy::kFallback;
  EXPECT_EQ(*Find(HeaderValues(fallback, "api", kWallNowMs), "X-RateLimit-Limit"), "1");
}

// The name each limit's entry gets, as the draft fields print it (and RL.* LIMITS replies name it).
TEST(HeadersTest, EntryNamesMatchTheDraftFields) {
  const Decision d =
      Make({Result(true, 3, 60'000, 2, 0, 1000), Result(true, 20, 3'600'000, 19, 0, 1000),
            Result(true, 9, 60'000, 8, 0, 1000)},
           0);
  EXPECT_EQ(HeaderEntryName(d, 0, "reports"), "reports-1m-1");
  EXPECT_EQ(HeaderEntryName(d, 1, "reports"), "reports-1h");
  EXPECT_EQ(HeaderEntryName(d, 2, ""), "default-1m-3");
  EXPECT_EQ(*Find(HeaderValues(d, "reports", kWallNowMs), "RateLimit-Policy"),
            R"("reports-1m-1";q=3;w=60, "reports-1h";q=20;w=3600, "reports-1m-3";q=9;w=60)");
}

TEST(HeadersTest, HostileValuesStayInRange) {
  Decision d = Make({Result(true, int64_t{1} << 40, kMaxWindowMs, -5, 0, -3)}, 0);
  d.binding = 200;  // out of range: falls back to the first limit
  std::vector<HeaderField> fields = HeaderValues(d, "p", std::numeric_limits<int64_t>::max());
  EXPECT_EQ(*Find(fields, "X-RateLimit-Remaining"), "0");
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"p\";r=0;t=0");
  EXPECT_EQ(*Find(fields, "RateLimit-Policy"), "\"p\";q=1099511627776;w=315360000");
  EXPECT_EQ(*Find(fields, "X-RateLimit-Reset"),
            std::to_string(std::numeric_limits<int64_t>::max() / 1000 + 1));

  d = Make({Result(true, 1, 1000, std::numeric_limits<int64_t>::max(), 0,
                   std::numeric_limits<int64_t>::max())},
           0);
  fields = HeaderValues(d, "p", kWallNowMs);
  // Structured Fields integers have at most 15 digits.
  EXPECT_EQ(*Find(fields, "RateLimit"), "\"p\";r=999999999999999;t=999999999999999");
  EXPECT_EQ(*Find(fields, "X-RateLimit-Reset"),
            std::to_string(std::numeric_limits<int64_t>::max() / 1000 + 1));
  EXPECT_EQ(*Find(HeaderValues(d, "p", -kWallNowMs * 1000), "X-RateLimit-Remaining"),
            std::to_string(std::numeric_limits<int64_t>::max()));
}

// A CONCURRENCY limit has no window: its window_ms is a lease's ttl, so its RateLimit-Policy
// entry carries no w (it said w=60, the default ttl). The same from Limiter and from KeyState
// (rl.so), for acquires and peeks; its rate limit keeps its w.
TEST(HeadersTest, ConcurrencyEntryHasNoWindow) {
  absl::StatusOr<Policy> policy =
      ParsePolicy("exports", std::string_view("CONCURRENCY 3 FIXED_WINDOW 20 1h"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  const std::string want = "\"exports-1m\";q=3, \"exports-1h\";q=20;w=3600";
  Limiter limiter;
  absl::StatusOr<Lease> lease = limiter.Acquire(*policy, "k");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(*Find(HeaderValues(lease->decision(), policy->name, kWallNowMs), "RateLimit-Policy"),
            want);
  absl::StatusOr<Decision> peek = limiter.Peek(*policy, "k");
  ASSERT_TRUE(peek.ok()) << peek.status();
  EXPECT_EQ(*Find(HeaderValues(*peek, policy->name, kWallNowMs), "RateLimit-Policy"), want);

  KeyState state;
  std::string id;
  bool changed = false;
  absl::StatusOr<Decision> d =
      state.Acquire(policy->name, "k", policy->limits, 1, kWallNowMs, &id, &changed);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*Find(HeaderValues(*d, policy->name, kWallNowMs), "RateLimit-Policy"), want);
  d = state.Peek(policy->name, policy->limits, 1, kWallNowMs);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*Find(HeaderValues(*d, policy->name, kWallNowMs), "RateLimit-Policy"), want);

  // Alone, with a ttl of its own.
  policy = ParsePolicy("one", std::string_view("CONCURRENCY 2 LEASE 5m"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  lease = limiter.Acquire(*policy, "k");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(*Find(HeaderValues(lease->decision(), policy->name, kWallNowMs), "RateLimit-Policy"),
            "\"one\";q=2");
}

}  // namespace
}  // namespace rl

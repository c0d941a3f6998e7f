// Descriptor matching (RuleSet::Match) as envoyproxy/ratelimit's GetLimit does it: the most
// specific descriptor wins, per-value overrides, a key without value for any value, wildcard
// values, nested descriptors, several domains; and the engine and metric keys of a match.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rl/clock.h"
#include "rl/envoy/config.h"
#include "rl/limiter.h"

namespace rl::envoy {
namespace {

constexpr char kConfig[] = R"(domain: edge
descriptors:
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: tenant
    value: gold
    rate_limit: {unit: minute, requests_per_unit: 1000}
  - key: path
    value: /api/*
    rate_limit: {unit: second, requests_per_unit: 5}
  - key: path
    value: /api/admin*
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: path
    value: /v*/users/*/photos
    rate_limit: {unit: hour, requests_per_unit: 7}
  - key: remote_address
    descriptors:
      - key: path
        value: /login
        rate_limit: {unit: hour, requests_per_unit: 3}
      - key: path
        rate_limit: {unit: day, requests_per_unit: 100}
  - key: unlimited_user
    rate_limit: {unlimited: true}
)";

std::shared_ptr<const RuleSet> Load(const char* yaml) {
  auto set = RuleSet::LoadString(yaml, "edge.yaml");
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *set : nullptr;
}

uint32_t Rpu(const RuleSet& set, std::vector<Entry> entries, std::string_view domain = "edge") {
  const Rule* rule = set.Match(domain, entries, nullptr);
  return rule == nullptr ? UINT32_MAX : rule->requests_per_unit;
}

TEST(MatchTest, APerValueDescriptorOverridesTheKeyAlone) {
  auto set = Load(kConfig);
  EXPECT_EQ(Rpu(*set, {{"tenant", "gold"}}), 1000u);
  EXPECT_EQ(Rpu(*set, {{"tenant", "silver"}}), 10u);
  EXPECT_EQ(Rpu(*set, {{"tenant", ""}}), 10u);  // an empty value is the key alone
  EXPECT_EQ(Rpu(*set, {{"nobody", "x"}}), UINT32_MAX);
  EXPECT_EQ(Rpu(*set, {{"tenant", "gold"}}, "other-domain"), UINT32_MAX);
  EXPECT_EQ(Rpu(*set, {}), UINT32_MAX);
}

TEST(MatchTest, WildcardsMatchInFileOrderAfterTheExactValue) {
  auto set = Load(kConfig);
  EXPECT_EQ(Rpu(*set, {{"path", "/api/x"}}), 5u);
  // "/api/*" comes first in the file, so it wins over "/api/admin*" (as upstream: first match).
  EXPECT_EQ(Rpu(*set, {{"path", "/api/admin/1"}}), 5u);
  EXPECT_EQ(Rpu(*set, {{"path", "/api/"}}), 5u);  // '*' matches the empty run too
  EXPECT_EQ(Rpu(*set, {{"path", "/apx"}}), UINT32_MAX);
  EXPECT_EQ(Rpu(*set, {{"path", "/v2/users/42/photos"}}), 7u);  // stars in the middle
  EXPECT_EQ(Rpu(*set, {{"path", "/v2/users/42/videos"}}), UINT32_MAX);
}

TEST(MatchTest, NestedDescriptorsNeedEveryEntryAndTheMostSpecificWins) {
  auto set = Load(kConfig);
  EXPECT_EQ(Rpu(*set, {{"remote_address", "10.0.0.1"}, {"path", "/login"}}), 3u);
  EXPECT_EQ(Rpu(*set, {{"remote_address", "10.0.0.1"}, {"path", "/home"}}), 100u);
  // The parent has no rate_limit of its own.
  EXPECT_EQ(Rpu(*set, {{"remote_address", "10.0.0.1"}}), UINT32_MAX);
  // More entries than the config has: no limit (upstream: request depth does not match).
  EXPECT_EQ(Rpu(*set, {{"tenant", "gold"}, {"path", "/login"}}), UINT32_MAX);
  EXPECT_EQ(Rpu(*set, {{"remote_address", "a"}, {"path", "/login"}, {"x", "y"}}), UINT32_MAX);
  // Order matters: entries are levels.
  EXPECT_EQ(Rpu(*set, {{"path", "/login"}, {"remote_address", "10.0.0.1"}}), UINT32_MAX);
}

TEST(MatchTest, UnlimitedMatchesWithNoLimit) {
  auto set = Load(kConfig);
  const Rule* rule = set->Match("edge", {{"unlimited_user", "u"}}, nullptr);
  ASSERT_NE(rule, nullptr);
  EXPECT_TRUE(rule->unlimited);
}

TEST(MatchTest, EngineKeyIsTheRequestsDescriptorEscaped) {
  auto set = Load(kConfig);
  std::string key = "stale";
  const std::vector<Entry> entries = {{"remote_address", "10.0.0.1"}, {"path", "/a|b=c\\"}};
  ASSERT_NE(set->Match("edge", entries, &key), nullptr);
  EXPECT_EQ(key, "edge|remote_address=10.0.0.1|path=/a\\|b\\=c\\\\");
  // Each value has a state of its own under the key-alone descriptor, as upstream's cache key.
  std::string a, b;
  set->Match("edge", {{"tenant", "a"}}, &a);
  set->Match("edge", {{"tenant", "b"}}, &b);
  EXPECT_NE(a, b);
  // Escaping keeps descriptors apart that plain joining would merge.
  std::string x, y;
  EngineKey("d", {{"a", "b|c=d"}}, &x);
  EngineKey("d", {{"a", "b"}, {"c", "d"}}, &y);
  EXPECT_NE(x, y);
  // No match: cleared.
  EXPECT_EQ(set->Match("edge", {{"nobody", "x"}}, &key), nullptr);
  EXPECT_EQ(key, "");
}

TEST(MatchTest, StatKeysAsUpstreamBuildsThem) {
  auto set = Load(kConfig);
  EXPECT_EQ(set->Match("edge", {{"tenant", "gold"}}, nullptr)->stat_key, "edge.tenant_gold");
  EXPECT_EQ(set->Match("edge", {{"tenant", "x"}}, nullptr)->stat_key, "edge.tenant");
  EXPECT_EQ(set->Match("edge", {{"path", "/api/x"}}, nullptr)->stat_key, "edge.path_/api/*");
  EXPECT_EQ(set->Match("edge", {{"remote_address", "1"}, {"path", "/p"}}, nullptr)->stat_key,
            "edge.remote_address.path");
  EXPECT_EQ(DetailedStatKey("edge", {{"remote_address", "1"}, {"path", ""}}),
            "edge.remote_address_1.path_");
  const Rule override_rule =
      RuleSet::OverrideRule("edge", {{"tenant", "t"}, {"path", ""}}, 42, Unit::kHour);
  EXPECT_EQ(override_rule.stat_key, "edge.tenant_t.path");
  EXPECT_EQ(override_rule.limit.algorithm, Algorithm::kAlignedWindow);
  EXPECT_EQ(override_rule.limit.window_ms, 3'600'000);
  EXPECT_EQ(override_rule.limit.limit, 42);
}

TEST(MatchTest, SeveralFilesAreSeveralDomains) {
  auto set = RuleSet::LoadFiles({{"a.yaml",
                                  "domain: a\ndescriptors:\n  - key: k\n"
                                  "    rate_limit: {unit: second, requests_per_unit: 1}\n"},
                                 {"b.yaml",
                                  "domain: b\ndescriptors:\n  - key: k\n"
                                  "    rate_limit: {unit: second, requests_per_unit: 2}\n"}});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(Rpu(**set, {{"k", "v"}}, "a"), 1u);
  EXPECT_EQ(Rpu(**set, {{"k", "v"}}, "b"), 2u);
  EXPECT_EQ((*set)->Domains(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ((*set)->rule_count(), 2u);
}

// share_threshold: every value a wildcard matches counts in one state, named by the wildcard.
TEST(MatchTest, ShareThresholdSharesOneStateAcrossAWildcardsValues) {
  auto set = Load(R"(domain: s
descriptors:
  - key: path
    value: /files/*
    share_threshold: true
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: path
    value: /own/*
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 2}
)");
  std::string a, b, detailed;
  ASSERT_NE(set->Match("s", {{"path", "/files/a"}}, &a, &detailed), nullptr);
  ASSERT_NE(set->Match("s", {{"path", "/files/b"}}, &b, nullptr), nullptr);
  EXPECT_EQ(a, "s|path=/files/*");
  EXPECT_EQ(a, b);
  EXPECT_EQ(detailed, "s.path_/files/*");
  ASSERT_NE(set->Match("s", {{"path", "/own/a"}}, &a, &detailed), nullptr);
  ASSERT_NE(set->Match("s", {{"path", "/own/b"}}, &b, nullptr), nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(detailed, "s.path_/own/a");
  auto refused = RuleSet::LoadString(
      "domain: s\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n", "x.yaml");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "x.yaml:5: 'share_threshold' in descriptor 's.k_v': can only be used with wildcard "
            "values (containing '*'), but found key 'k_v'");
}

// A matched rule on the engine: each descriptor its own state under its engine key, the per-value
// override with its own allowance, and the window the clock's minute.
TEST(MatchTest, MatchedRulesRunOnTheEngine) {
  auto set = Load(kConfig);
  // 2023-11-14 22:13:20 UTC: 20 s into the minute.
  ManualClock clock(1'700'000'000'000, 1'700'000'000'000);
  Limiter limiter(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  const auto check = [&](std::vector<Entry> entries) {
    std::string key;
    const Rule* rule = set->Match("edge", entries, &key);
    EXPECT_NE(rule, nullptr);
    absl::StatusOr<Decision> d = limiter.Check("", key, {rule->limit}, 1);
    EXPECT_TRUE(d.ok()) << d.status();
    return *d;
  };
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(check({{"tenant", "silver"}}).allowed) << i;
  const Decision denied = check({{"tenant", "silver"}});
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.retry_after_ms, 40'000);            // the end of the clock's minute
  EXPECT_TRUE(check({{"tenant", "bronze"}}).allowed);  // another value, another state
  const Decision gold = check({{"tenant", "gold"}});
  EXPECT_TRUE(gold.allowed);
  EXPECT_EQ(gold.remaining, 999);
  clock.Advance(40'000);
  EXPECT_TRUE(check({{"tenant", "silver"}}).allowed);
}

}  // namespace
}  // namespace rl::envoy

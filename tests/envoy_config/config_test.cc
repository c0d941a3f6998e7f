// Loading envoyproxy/ratelimit's YAML (RuleSet::Load*): every field, units and their windows, the
// `rl` extension, directories of files, and bad configs whose errors name file, line and key.
#include "rl/envoy/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace rl::envoy {
namespace {

const Rule& Only(const RuleSet& set, std::vector<Entry> entries, std::string_view domain = "d") {
  const Rule* rule = set.Match(domain, entries, nullptr);
  if (rule == nullptr) {
    ADD_FAILURE() << "no rule";
    static const Rule none;
    return none;
  }
  return *rule;
}

std::string ErrorOf(std::string_view yaml, std::string_view file = "limits.yaml") {
  auto set = RuleSet::LoadString(yaml, file);
  return set.ok() ? "loaded" : std::string(set.status().message());
}

TEST(ConfigTest, EveryUnitIsAnAlignedWindowOfUpstreamsLength) {
  const std::pair<const char*, int64_t> units[] = {
      {"SECOND", 1},       {"minute", 60},        {"Hour", 3600},       {"DAY", 86400},
      {"WEEK", 7 * 86400}, {"MONTH", 30 * 86400}, {"YEAR", 365 * 86400}};
  for (const auto& [unit, seconds] : units) {
    const std::string yaml = std::string("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n") +
                             "      unit: " + unit + "\n      requests_per_unit: 7\n";
    auto set = RuleSet::LoadString(yaml, "u.yaml");
    ASSERT_TRUE(set.ok()) << unit << ": " << set.status();
    const Rule& rule = Only(**set, {{"k", "v"}});
    EXPECT_EQ(rule.limit.algorithm, Algorithm::kAlignedWindow) << unit;
    EXPECT_EQ(rule.limit.window_ms, seconds * 1000) << unit;
    EXPECT_EQ(rule.limit.limit, 7) << unit;
    EXPECT_EQ(rule.requests_per_unit, 7u);
    EXPECT_EQ(UnitSeconds(rule.unit), seconds);
    EXPECT_EQ(ParseUnit(UnitName(rule.unit)), rule.unit);
  }
}

TEST(ConfigTest, NameReplacesShadowModeDetailedMetric) {
  auto set = RuleSet::LoadString(R"(domain: d
descriptors:
  - key: a
    shadow_mode: true
    detailed_metric: yes
    rate_limit:
      name: per_a
      unit: second
      requests_per_unit: 3
      replaces:
        - name: global
        - name: other
  - key: b
    rate_limit:
      unlimited: true
      requests_per_unit: 5
  - key: c
    value_to_metric: true
    metadata: {anything: [1, 2, {x: y}]}
    rate_limit: {unit: second, requests_per_unit: 0}
)",
                                 "f.yaml");
  ASSERT_TRUE(set.ok()) << set.status();
  const Rule& a = Only(**set, {{"a", "1"}});
  EXPECT_EQ(a.name, "per_a");
  EXPECT_EQ(a.replaces, (std::vector<std::string>{"global", "other"}));
  EXPECT_TRUE(a.shadow_mode);
  EXPECT_TRUE(a.detailed_metric);
  EXPECT_FALSE(a.unlimited);
  EXPECT_EQ(a.file, "f.yaml");
  EXPECT_EQ(a.line, 6);
  const Rule& b = Only(**set, {{"b", "1"}});
  EXPECT_TRUE(b.unlimited);
  EXPECT_FALSE(b.shadow_mode);
  EXPECT_EQ(Only(**set, {{"c", "1"}}).requests_per_unit, 0u);
}

TEST(ConfigTest, TheRlKeyPicksAnyAlgorithm) {
  auto set = RuleSet::LoadString(R"(domain: d
descriptors:
  - key: sliding
    rate_limit: {unit: minute, requests_per_unit: 100, rl: {algorithm: sliding_window}}
  - key: bucket
    rate_limit:
      unit: second
      requests_per_unit: 10
      rl: {algorithm: TOKEN_BUCKET, burst: 50, block: 1m}
  - key: gcra
    rate_limit: {unit: hour, requests_per_unit: 60, rl: {algorithm: gcra}}
  - key: fixed
    rate_limit: {unit: hour, requests_per_unit: 60, rl: {algorithm: fixed_window}}
  - key: inflight
    rate_limit: {unit: second, requests_per_unit: 4, rl: {algorithm: concurrency, lease: 30s}}
)",
                                 "x.yaml");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(Only(**set, {{"sliding", ""}}).limit, (Limit{Algorithm::kSlidingWindow, 100, 60'000}));
  EXPECT_EQ(Only(**set, {{"bucket", ""}}).limit,
            (Limit{Algorithm::kTokenBucket, 10, 1'000, 50, 60'000}));
  EXPECT_EQ(Only(**set, {{"gcra", ""}}).limit, (Limit{Algorithm::kGcra, 60, 3'600'000}));
  EXPECT_EQ(Only(**set, {{"fixed", ""}}).limit, (Limit{Algorithm::kFixedWindow, 60, 3'600'000}));
  EXPECT_EQ(Only(**set, {{"inflight", ""}}).limit, (Limit{Algorithm::kConcurrency, 4, 30'000}));
}

// Each bad config: the error names the file, the line and the key.
TEST(ConfigTest, BadConfigsNameFileLineAndKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: minutes\n"
       "      requests_per_unit: 1\n",
       "limits.yaml:5: 'unit' in descriptor 'd.k': invalid rate limit unit 'minutes'"},
      {"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {requests_per_unit: 1}\n",
       "limits.yaml:4: 'unit' in descriptor 'd.k': invalid rate limit unit ''"},
      {"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: "
       "-1}\n",
       "limits.yaml:4: 'requests_per_unit' in descriptor 'd.k': expected a whole number"},
      {"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, unit: second}\n",
       "limits.yaml:4: 'unit' in descriptor 'd.k': should not specify rate limit unit when "
       "unlimited"},
      {"domain: d\ndescriptors:\n  - key: k\n    ratelimit: {unit: second}\n",
       "limits.yaml:4: 'ratelimit' in descriptor 'd.k': unknown key here"},
      {"domain: d\ndescriptors:\n  - value: v\n",
       "limits.yaml:3: 'key' in domain 'd': descriptor has empty key"},
      {"domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n",
       "limits.yaml:5: 'key' in descriptor 'd.k_v': duplicate descriptor composite key 'd.k_v'"},
      {"descriptors: []\n", "limits.yaml:1: 'domain': config file cannot have empty domain"},
      {"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n"
       "      requests_per_unit: 1\n      rl: {algorithm: bogus}\n",
       "limits.yaml:7: 'rl.algorithm' in descriptor 'd.k': unknown algorithm 'bogus'"},
      {"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n"
       "      requests_per_unit: 1\n      rl: {algorithm: sliding_window, burst: 5}\n",
       "limits.yaml:7: 'rl' in descriptor 'd.k': BURST"},
      {"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      name: n\n      unit: second\n"
       "      replaces: [{name: n}]\n",
       "limits.yaml:7: 'replaces' in descriptor 'd.k': should not contain the name"},
      {"domain: d\ndescriptors:\n  - key: k\n    quota_mode: true\n",
       "limits.yaml:4: 'quota_mode' in descriptor 'd.k': is not supported by rl"},
      {"domain: d\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n",
       "limits.yaml:4: 'shadow_mode' in descriptor 'd.k': expected true or false"},
      {"domain: d\ndescriptors:\n  - key: [k\n", "limits.yaml:4: error loading config file"},
      {"domain: d\ndomain: e\n", "limits.yaml:2: 'domain': appears twice"},
  };
  for (const auto& [yaml, want] : cases) {
    const std::string got = ErrorOf(yaml);
    EXPECT_EQ(got.rfind(want, 0), 0u) << "got: " << got << "\nwant prefix: " << want;
  }
}

// Whatever a file holds, loading it answers an error, never a crash or an exception.
TEST(ConfigTest, MalformedFilesAreErrorsNeverCrashes) {
  std::string nested = "domain: d\ndescriptors:\n";
  for (int i = 0; i < 100; ++i) {
    nested +=
        std::string(2 * i + 2, ' ') + "- key: k\n" + std::string(2 * i + 4, ' ') + "descriptors:\n";
  }
  const std::string inputs[] = {"\t",
                                "{{{{",
                                std::string(100'000, '['),
                                std::string("\0\xff\xfe", 3),
                                "a: *unknown_alias",
                                "- - -",
                                "domain: [d]",
                                "domain: d\ndescriptors: {key: k}",
                                "domain: d\ndescriptors:\n  - 5",
                                "domain: d\ndescriptors:\n  - key: k\n    rate_limit: 5",
                                "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {rl: [1]}",
                                nested};
  for (const std::string& input : inputs) {
    auto set = RuleSet::LoadString(input, "bad.yaml");
    EXPECT_FALSE(set.ok()) << input.substr(0, 40);
    if (!set.ok()) {
      EXPECT_EQ(set.status().message().substr(0, 9), "bad.yaml:");
    }
  }
}

class DirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rl_envoy_config_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

std::string Domain(const std::string& name, int rpu) {
  return "domain: " + name + "\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, " +
         "requests_per_unit: " + std::to_string(rpu) + "}\n";
}

TEST_F(DirectoryTest, EveryYamlFileIsADomain) {
  Write("a.yaml", Domain("a", 1));
  Write("b.yml", Domain("b", 2));
  Write("notes.txt", "not yaml: [");
  Write(".hidden.yaml", "not yaml: [");
  auto set = RuleSet::LoadDirectory(dir_.string());
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->Domains(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Only(**set, {{"k", "x"}}, "b").requests_per_unit, 2u);
}

// A Kubernetes ConfigMap volume: the files are symlinks into a hidden, versioned directory.
TEST_F(DirectoryTest, SymlinkedFilesAsAConfigMapMountsThem) {
  std::filesystem::create_directories(dir_ / "..2026_12_02_00_00_00.1" / "nested");
  Write("..2026_12_02_00_00_00.1/edge.yaml", Domain("edge", 3));
  std::filesystem::create_directory_symlink("..2026_12_02_00_00_00.1", dir_ / "..data");
  std::filesystem::create_symlink("..data/edge.yaml", dir_ / "edge.yaml");
  auto set = RuleSet::LoadDirectory(dir_.string());
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->Domains(), (std::vector<std::string>{"edge"}));
}

TEST_F(DirectoryTest, ADomainInTwoFilesIsAnErrorNamingTheSecond) {
  Write("a.yaml", Domain("same", 1));
  Write("b.yaml", Domain("same", 2));
  auto set = RuleSet::LoadDirectory(dir_.string());
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().message(),
            (dir_ / "b.yaml").string() + ":1: 'domain': duplicate domain 'same' in config file");
}

TEST_F(DirectoryTest, AnErrorInAnyFileLoadsNothing) {
  Write("a.yaml", Domain("a", 1));
  Write("b.yaml", "domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight}\n");
  auto set = RuleSet::LoadDirectory(dir_.string());
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("b.yaml:4: 'unit'"), std::string::npos) << set.status();
  EXPECT_FALSE(RuleSet::LoadDirectory((dir_ / "missing").string()).ok());
}

}  // namespace
}  // namespace rl::envoy

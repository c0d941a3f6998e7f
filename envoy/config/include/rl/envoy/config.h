// envoyproxy/ratelimit's configuration, read and matched as it does: YAML files with a `domain`
// and nested `descriptors` (`key`, optional `value`, wildcard values such as `foo*`,
// `rate_limit` with `unit` and `requests_per_unit`, `unlimited`, `name`, `replaces`,
// `shadow_mode`, `detailed_metric`), one domain a file, several files a directory. A RuleSet is
// immutable once loaded: a reload builds a new one and the caller swaps the shared_ptr, so a
// reload that fails leaves the old set in use and never a half-loaded one.
//
// By default a rate_limit is an ALIGNED_WINDOW (a fixed window on the Unix clock's grid, as
// envoyproxy/ratelimit counts); the extension key `rl` under rate_limit picks another rl algorithm
// (docs/envoy-config.md). Depends on rl::core only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rl/limit.h"

namespace rl::envoy {

// One entry of a request's descriptor.
struct Entry {
  std::string key;
  std::string value;
};

// envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit, without UNKNOWN.
enum class Unit : uint8_t { kSecond, kMinute, kHour, kDay, kWeek, kMonth, kYear };

// The unit's length as envoyproxy/ratelimit divides time by it: a MONTH is 30 days and a YEAR 365
// days; every window starts at a multiple of it counted from the Unix epoch (so a WEEK starts on
// Thursday 00:00 UTC).
int64_t UnitSeconds(Unit unit);
// "SECOND", "MINUTE", ... "YEAR".
std::string_view UnitName(Unit unit);
// Case-insensitive inverse of UnitName.
std::optional<Unit> ParseUnit(std::string_view name);
// One descriptor's rate_limit: what a matched descriptor is limited by.
struct Rule {
  std::string name;                   // rate_limit.name; may be empty
  std::vector<std::string> replaces;  // the names (of other rules) this one replaces
  // No limit: the descriptor is allowed and counted as within the limit; `limit` is not valid.
  bool unlimited = false;
  bool shadow_mode = false;      // evaluated and counted, but the answer is always OK
  bool detailed_metric = false;  // metrics under DetailedStatKey(request), not stat_key
  // For DescriptorStatus.current_limit. requests_per_unit may be 0 (as envoyproxy/ratelimit
  // allows): every request is then over the limit, and `limit` is not valid (the engine takes no
  // limit of 0): check `requests_per_unit == 0` before calling the engine.
  uint32_t requests_per_unit = 0;
  Unit unit = Unit::kSecond;
  // What the engine checks: by default ALIGNED_WINDOW requests_per_unit per unit; the `rl` key
  // may choose another algorithm, a BURST or a BLOCK. A CONCURRENCY limit (rl: {algorithm:
  // concurrency}) is taken with Limiter::Acquire, one lease per request, ending after its LEASE
  // ttl (Envoy's API has no release), never with a plain check.
  rl::Limit limit;
  // The metric key as envoyproxy/ratelimit builds it: "domain.key_value.key2" along the
  // descriptor's configured path (a wildcard keeps its pattern: "domain.path_/api/*").
  std::string stat_key;
  std::string file;  // where the rule was written (for messages)
  int line = 0;
};

// The metric key of a request descriptor under a detailed_metric rule: "domain.key_value..." with
// the request's own values (every entry written key_value, as envoyproxy/ratelimit does).
std::string DetailedStatKey(std::string_view domain, absl::Span<const Entry> entries);

// The engine key of a request descriptor's state: its domain and entries, escaped so that no two
// descriptors share one ("domain|key=value|key2=value2", with '\', '|' and '=' inside a name or
// value written "\\", "\|" and "\="). The state of one descriptor is the same whichever rule
// matched it (as envoyproxy/ratelimit's cache key): a reload that keeps a limit keeps its counts.
void EngineKey(std::string_view domain, absl::Span<const Entry> entries, std::string* out);

class RuleSet {
 public:
  // Every *.yaml and *.yml file directly in `dir` (names starting with '.' skipped; symlinks
  // followed, so a Kubernetes ConfigMap volume works), read in name order; each file is one
  // domain and a domain in two files is an error, as upstream. Errors name the file, the line
  // and the key. All or nothing: an error returns no set.
  static absl::StatusOr<std::shared_ptr<const RuleSet>> LoadDirectory(const std::string& dir);
  // One file's text (`file_name` is only for messages).
  static absl::StatusOr<std::shared_ptr<const RuleSet>> LoadString(std::string_view yaml,
                                                                   std::string_view file_name);
  // Several files' texts: (file name, text) pairs, as LoadDirectory reads them.
  static absl::StatusOr<std::shared_ptr<const RuleSet>> LoadFiles(
      absl::Span<const std::pair<std::string, std::string>> files);

  ~RuleSet();
  RuleSet(const RuleSet&) = delete;
  RuleSet& operator=(const RuleSet&) = delete;

  // The rule of one request descriptor, as envoyproxy/ratelimit finds it: walking the entries
  // level by level, each entry takes the descriptor with its key and exactly its value, else the
  // first (in file order) whose wildcard value matches, else the one with its key and no value;
  // the rule applies only when the walk reaches the last entry on a descriptor with a rate_limit
  // (so the most specific descriptor wins and a descriptor with more entries than the config
  // has no limit). nullptr: no limit for this descriptor (unknown domain included). When
  // `engine_key` is not null it receives EngineKey(domain, entries) for a match (cleared
  // otherwise).
  const Rule* Match(std::string_view domain, absl::Span<const Entry> entries,
                    std::string* engine_key) const;
  // The same, and `detailed_stat_key` (when not null) receives the metric key of a
  // detailed_metric rule for this request: DetailedStatKey(domain, entries), except that an entry
  // matched by a share_threshold wildcard is written with the wildcard ("domain.path_/files*").
  // Under share_threshold the engine key too names the wildcard instead of the value, so every
  // value it matches shares one state (as envoyproxy/ratelimit's cache key).
  const Rule* Match(std::string_view domain, absl::Span<const Entry> entries,
                    std::string* engine_key, std::string* detailed_stat_key) const;

  // The rule for a request that carries its own limit (RateLimitDescriptor.limit):
  // envoyproxy/ratelimit uses it instead of the configuration, no shadow mode, its stat key the
  // descriptor's ("domain.key_value.key2_value2"), an ALIGNED_WINDOW. requests_per_unit 0 is
  // over the limit for every request, as in Rule.
  static Rule OverrideRule(std::string_view domain, absl::Span<const Entry> entries,
                           uint32_t requests_per_unit, Unit unit);

  // The domains, sorted; and the number of rules in all (for logs and INFO).
  std::vector<std::string> Domains() const;
  size_t rule_count() const;

  struct Impl;
  // For the loader: a set over a built tree.
  static std::shared_ptr<const RuleSet> Make(std::unique_ptr<Impl> impl);

 private:
  explicit RuleSet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rl::envoy

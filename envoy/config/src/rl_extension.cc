// The `rl` extension key of a rate_limit (see rl_extension.h).
#include "rl_extension.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "rule_set_impl.h"

namespace rl::envoy {
namespace {

// Where the error is (the node, its key) and what it is.
struct Fault {
  YAML::Mark* where;
  std::string* key;
  absl::Status operator()(const YAML::Node& node, std::string_view sub, std::string_view message) {
    *where = node.Mark();
    *key = Cat(kExtensionKey, sub.empty() ? "" : ".", sub);
    return absl::InvalidArgumentError(std::string(message));
  }
};

std::string AlgorithmList() {
  std::string names;
  for (rl::Algorithm a : rl::Algorithms()) {
    names.append(names.empty() ? "" : ", ").append(rl::AlgorithmName(a));
  }
  return names;
}

}  // namespace

absl::StatusOr<rl::Limit> ExtensionLimit(const YAML::Node& ext, uint32_t requests_per_unit,
                                         Unit unit, YAML::Mark* where, std::string* fault_key) {
  Fault Fail{where, fault_key};
  rl::Limit limit{rl::Algorithm::kAlignedWindow, requests_per_unit, UnitSeconds(unit) * 1000};
  if (!ext.IsDefined() || ext.IsNull()) return limit;
  if (!ext.IsMap()) return Fail(ext, "", "expected a mapping (algorithm, burst, block, lease)");
  bool lease_given = false;
  for (const auto& kv : ext) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    const YAML::Node& v = kv.second;
    if (!v.IsScalar()) return Fail(v, key, "expected a single value");
    const std::string& text = v.Scalar();
    if (key == "algorithm") {
      std::optional<rl::Algorithm> a = rl::ParseAlgorithm(text);
      if (!a.has_value()) {
        return Fail(v, key, Cat("unknown algorithm '", text, "' (", AlgorithmList(), ")"));
      }
      limit.algorithm = *a;
    } else if (key == "burst") {
      if (!absl::SimpleAtoi(text, &limit.burst) || limit.burst <= 0) {
        return Fail(v, key, "expected a positive whole number");
      }
    } else if (key == "block" || key == "lease") {
      absl::StatusOr<int64_t> ms = rl::ParseDurationMs(text);
      if (!ms.ok()) return Fail(v, key, std::string(ms.status().message()));
      if (key == "block") limit.block_ms = *ms;
      if (key == "lease") limit.window_ms = *ms, lease_given = true;
    } else {
      return Fail(kv.first, key, "unknown key (algorithm, burst, block, lease)");
    }
  }
  if (limit.algorithm == rl::Algorithm::kConcurrency) {
    // requests_per_unit leases at once; each ends after its lease ttl (Envoy never releases).
    if (!lease_given) limit.window_ms = rl::kDefaultLeaseMs;
  } else if (lease_given) {
    return Fail(ext["lease"], "lease", "only for algorithm CONCURRENCY");
  }
  if (requests_per_unit == 0) return limit;  // over the limit for every request (see Rule)
  const absl::Status valid = rl::ValidateLimits(absl::MakeConstSpan(&limit, 1));
  if (!valid.ok()) return Fail(ext, "", std::string(valid.message()));
  return limit;
}

}  // namespace rl::envoy

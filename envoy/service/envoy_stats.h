// ShouldRateLimit's counters as envoyproxy/ratelimit names them (its Prometheus names:
// ratelimit_service_rate_limit_{total_hits,over_limit,near_limit,within_limit,shadow_mode} with
// labels domain and key, the rule's stat key), so existing dashboards keep working. Bounded: at
// most kMaxSeries (domain, key) pairs; later ones are counted under key="_other" (a rule with
// detailed_metric puts request values in its key, which a client controls).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace rl::envoy {

struct RuleCounters {
  std::atomic<uint64_t> total_hits{0};
  std::atomic<uint64_t> over_limit{0};
  std::atomic<uint64_t> near_limit{0};
  std::atomic<uint64_t> within_limit{0};
  std::atomic<uint64_t> shadow_mode{0};
};

// What one descriptor's decision adds: `hits` (its cost) into the counters of its outcome.
struct HitOutcome {
  uint64_t hits = 0;
  bool over_limit = false;  // its limit denied it (in shadow mode too)
  bool shadow = false;      // denied but answered OK (shadow mode)
  uint64_t near_limit = 0;  // hits past 80% of the limit that were still allowed
};

class EnvoyStats {
 public:
  static constexpr size_t kMaxSeries = 1000;
  static constexpr std::string_view kOtherKey = "_other";

  // The counters of (domain, key); stable for the life of this object. Thread-safe.
  RuleCounters* Find(std::string_view domain, std::string_view key);
  void Add(RuleCounters* c, const HitOutcome& outcome);
  // Calls that failed (backend error, bad request), by gRPC status name.
  void CountError(std::string_view code);
  // The Prometheus families, appended to `page`.
  void Render(std::string* page) const;

 private:
  mutable absl::Mutex mu_;
  // "domain\0key" -> counters.
  absl::flat_hash_map<std::string, std::unique_ptr<RuleCounters>> series_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, uint64_t> errors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rl::envoy

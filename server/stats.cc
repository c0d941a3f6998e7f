// Per-thread counters; see stats.h.
#include "stats.h"

namespace rl::server {

void WorkerStats::RecordCheck(std::string_view policy, bool allowed, bool shadow, int64_t limit,
                              int64_t remaining) {
  absl::MutexLock lock(&mu_);
  auto it = per_policy_.find(absl::string_view(policy.data(), policy.size()));
  if (it == per_policy_.end()) it = per_policy_.emplace(std::string(policy), PolicyCounters{}).first;
  PolicyCounters& c = it->second;
  ++c.checks;
  if (shadow) {
    ++c.shadow_denied;
    ++c.allowed;
  } else if (allowed) {
    ++c.allowed;
    if (limit > 0 && remaining * 5 < limit) ++c.near_limit;
  } else {
    ++c.denied;
  }
}

void WorkerStats::AddTo(std::map<std::string, PolicyCounters>* out) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [name, counters] : per_policy_) (*out)[name].Add(counters);
}

}  // namespace rl::server

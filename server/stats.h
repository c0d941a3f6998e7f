// Server counters for INFO: per I/O thread, so the hot path increments plain counters owned by
// its thread; INFO sums them. Per-policy counters (checks/allowed/denied/...) are keyed by
// policy name ("" = inline limits, "cl.throttle" = CL.THROTTLE).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace rl::server {

struct PolicyCounters {
  uint64_t checks = 0;
  uint64_t allowed = 0;
  uint64_t denied = 0;
  uint64_t shadow_denied = 0;  // denials a SHADOW policy turned into allows
  uint64_t near_limit = 0;     // allowed with less than 20% of the limit remaining

  void Add(const PolicyCounters& o) {
    checks += o.checks;
    allowed += o.allowed;
    denied += o.denied;
    shadow_denied += o.shadow_denied;
    near_limit += o.near_limit;
  }
};

// Owned by one I/O thread; written only by it, read by INFO from any thread.
class WorkerStats {
 public:
  // One rate-limit decision. `denied` is the engine's answer, `shadow` whether a shadow policy
  // turned it into an allow.
  void RecordCheck(std::string_view policy, bool allowed, bool shadow, int64_t limit,
                   int64_t remaining);
  void RecordCommand() { commands_.fetch_add(1, std::memory_order_relaxed); }

  uint64_t commands() const { return commands_.load(std::memory_order_relaxed); }
  // Adds this worker's per-policy counters into *out.
  void AddTo(std::map<std::string, PolicyCounters>* out) const;

 private:
  std::atomic<uint64_t> commands_{0};
  // Uncontended except while INFO reads it.
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, PolicyCounters> per_policy_ ABSL_GUARDED_BY(mu_);
};

// Server-wide counters not tied to a thread (connections come and go on any thread).
struct GlobalStats {
  std::atomic<int64_t> connected_clients{0};
  std::atomic<uint64_t> total_connections{0};
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> output_limit_disconnects{0};
  std::atomic<uint64_t> idle_disconnects{0};
};

}  // namespace rl::server

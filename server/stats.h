// Server counters for INFO and /metrics: per I/O thread, so the hot path bumps relaxed atomics
// owned by its thread (single writer: a load and a store, no locked instruction, no mutex);
// readers sum the threads. Check counters (checks/allowed/denied/...) are kept by kind: inline
// limits and CL.THROTTLE each have their own, and named policies are keyed by name, so no policy
// name (not even "cl.throttle" or "(inline)") can share a line with an internal user.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
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

// Who a rate-limit decision was for.
enum class CheckKind : uint8_t { kInline, kThrottle, kPolicy };

// Summed check counters of all threads, by kind.
struct CheckCounters {
  PolicyCounters inline_limits;  // RL.* commands with inline limits
  PolicyCounters throttle;       // CL.THROTTLE
  PolicyCounters retired;        // policies forgotten since (kept in the server-wide totals)
  absl::flat_hash_map<std::string, PolicyCounters> per_policy;  // named policies

  // Everything counted, retired policies included.
  PolicyCounters Total() const {
    PolicyCounters t = inline_limits;
    t.Add(throttle);
    t.Add(retired);
    for (const auto& [name, c] : per_policy) t.Add(c);
    return t;
  }
};

// Command processing time (parse + execute, not I/O) by family: RL.* and CL.THROTTLE vs the rest.
enum CommandFamily : int { kFamilyRl = 0, kFamilyOther = 1, kCommandFamilies = 2 };
inline constexpr std::string_view kFamilyNames[kCommandFamilies] = {"rl", "other"};
// Upper bounds of the histogram buckets in nanoseconds; one more bucket holds the rest (+Inf).
// A pipelined RL.CHECK takes well under a microsecond, hence the fine low end.
inline constexpr std::array<int64_t, 12> kLatencyBoundsNs = {
    250,    500,     1'000,     2'500,      5'000,       10'000,
    25'000, 100'000, 1'000'000, 10'000'000, 100'000'000, 1'000'000'000};

// A summed copy of the histograms: per family, per-bucket counts (not cumulative), sum and count.
struct LatencySnapshot {
  std::array<std::array<uint64_t, kLatencyBoundsNs.size() + 1>, kCommandFamilies> buckets{};
  std::array<uint64_t, kCommandFamilies> sum_ns{};
  std::array<uint64_t, kCommandFamilies> count{};
};

// Owned by one I/O thread; written only by it, read by INFO and /metrics from any thread.
class WorkerStats {
 public:
  // One rate-limit decision. `policy` names the policy (kind kPolicy only), `allowed` is the
  // engine's answer, `shadow` whether a shadow policy turned a denial into an allow.
  void RecordCheck(CheckKind kind, std::string_view policy, bool allowed, bool shadow,
                   int64_t limit, int64_t remaining);
  void RecordCommand() { Bump(commands_); }
  // Command latency with one clock read per command: a batch of pipelined commands starts the
  // clock (StartTiming), and each command's time runs from the end of the previous one (or the
  // batch start) to its own end, so it covers parsing and execution but not network I/O. (A
  // command rejected before its handler runs, e.g. unknown, is counted into the next one.)
  void StartTiming() { mark_ns_ = NowNs(); }
  void RecordLatency(CommandFamily family) {
    int64_t now = NowNs();
    RecordLatency(family, now - mark_ns_);
    mark_ns_ = now;
  }
  void RecordLatency(CommandFamily family, int64_t ns);
  // The steady time (ns) the last command ended, or the batch started: what the limiter reads as
  // `now` while the next command runs (CommandClock). Owner thread only.
  int64_t mark_ns() const { return mark_ns_; }

  uint64_t commands() const { return commands_.load(std::memory_order_relaxed); }
  // RL.* and CL.THROTTLE commands: the only ones that change limiter state or policies.
  uint64_t rl_commands() const { return latency_[kFamilyRl].count.load(std::memory_order_relaxed); }
  // Drops the counters of a policy that no longer exists, folding them into the retired totals
  // (so server-wide totals never go backwards). Owner thread only (the lookup in RecordCheck
  // takes no lock); the server posts it to every I/O thread when a policy goes.
  void Forget(const std::string& policy);
  // Adds this worker's check counters into *out (in one consistent read).
  void AddTo(CheckCounters* out) const;
  // Adds this worker's latency histograms into *out.
  void AddLatency(LatencySnapshot* out) const;

 private:
  struct Counters {
    std::atomic<uint64_t> checks{0}, allowed{0}, denied{0}, shadow_denied{0}, near_limit{0};
  };
  struct Histogram {
    std::array<std::atomic<uint64_t>, kLatencyBoundsNs.size() + 1> buckets{};
    std::atomic<uint64_t> sum_ns{0};
    std::atomic<uint64_t> count{0};
  };
  // Only the owning thread writes, so an increment needs no read-modify-write instruction.
  static void Bump(std::atomic<uint64_t>& a, uint64_t n = 1) {
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  static void AddCounters(const Counters& c, PolicyCounters* o);
  Counters& CountersFor(CheckKind kind, std::string_view policy);

  static int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // The owning thread's lookup of a policy's counters, without the lock: it is the only writer of
  // the map, so its own reads cannot race (the analysis cannot know which thread runs this).
  Counters* FindOwn(absl::string_view policy) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = per_policy_.find(policy);
    return it == per_policy_.end() ? nullptr : it->second.get();
  }

  std::atomic<uint64_t> commands_{0};
  int64_t mark_ns_ = 0;  // owner thread only
  // The owning thread looks policies up without the lock (FindOwn) and takes it only to change
  // the map; readers take it to iterate.
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Counters>> per_policy_ ABSL_GUARDED_BY(mu_);
  Counters inline_limits_, throttle_;      // written by the owner thread only
  Counters retired_ ABSL_GUARDED_BY(mu_);  // written by the owner thread only
  // The policy RecordCheck counted last and its counters (owner thread only; Forget clears it).
  std::string last_name_;
  Counters* last_ = nullptr;
  std::array<Histogram, kCommandFamilies> latency_;
};

// Server-wide counters not tied to a thread (connections come and go on any thread).
struct GlobalStats {
  std::atomic<int64_t> connected_clients{0};
  std::atomic<uint64_t> total_connections{0};
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> output_limit_disconnects{0};
  std::atomic<uint64_t> idle_disconnects{0};
  std::atomic<uint64_t> accept_resource_errors{0};   // accepts failed for lack of fds or memory
  std::atomic<int64_t> client_query_bytes{0};        // all clients' input buffers (allocated bytes)
  std::atomic<uint64_t> query_limit_disconnects{0};  // clients past a query-buffer limit
  std::atomic<uint64_t> auth_failures{0};            // wrong passwords (AUTH, HELLO AUTH)
  std::atomic<uint64_t> auth_failure_disconnects{0};  // clients closed for too many of them
};

}  // namespace rl::server

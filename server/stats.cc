// Per-thread counters; see stats.h.
#include "stats.h"

#include <algorithm>

namespace rl::server {

WorkerStats::Counters& WorkerStats::CountersFor(CheckKind kind, std::string_view policy) {
  if (kind == CheckKind::kInline) return inline_limits_;
  if (kind == CheckKind::kThrottle) return throttle_;
  // A connection checks one policy again and again: the last one's counters without hashing its
  // name (a string hash and probe were most of what a policy check cost beyond an inline one).
  if (last_ != nullptr && policy == last_name_) return *last_;
  Counters* found = FindOwn(absl::string_view(policy.data(), policy.size()));
  if (found == nullptr) {
    absl::MutexLock lock(&mu_);
    found =
        per_policy_.emplace(std::string(policy), std::make_unique<Counters>()).first->second.get();
  }
  last_name_.assign(policy.data(), policy.size());
  last_ = found;
  return *found;
}

void WorkerStats::RecordCheck(CheckKind kind, std::string_view policy, bool allowed, bool shadow,
                              int64_t limit, int64_t remaining) {
  Counters& c = CountersFor(kind, policy);
  Bump(c.checks);
  if (shadow) {
    Bump(c.shadow_denied);
    Bump(c.allowed);
  } else if (allowed) {
    Bump(c.allowed);
    if (limit > 0 && remaining * 5 < limit) Bump(c.near_limit);
  } else {
    Bump(c.denied);
  }
}

void WorkerStats::RecordLatency(CommandFamily family, int64_t ns) {
  if (ns < 0) ns = 0;
  Histogram& h = latency_[family];
  size_t bucket =
      static_cast<size_t>(std::lower_bound(kLatencyBoundsNs.begin(), kLatencyBoundsNs.end(), ns) -
                          kLatencyBoundsNs.begin());
  Bump(h.buckets[bucket]);
  Bump(h.sum_ns, static_cast<uint64_t>(ns));
  Bump(h.count);
}

void WorkerStats::AddCounters(const Counters& c, PolicyCounters* o) {
  o->checks += c.checks.load(std::memory_order_relaxed);
  o->allowed += c.allowed.load(std::memory_order_relaxed);
  o->denied += c.denied.load(std::memory_order_relaxed);
  o->shadow_denied += c.shadow_denied.load(std::memory_order_relaxed);
  o->near_limit += c.near_limit.load(std::memory_order_relaxed);
}

void WorkerStats::Forget(const std::string& policy) {
  absl::MutexLock lock(&mu_);  // readers iterate under it
  last_ = nullptr;
  auto it = per_policy_.find(policy);
  if (it == per_policy_.end()) return;
  const Counters& c = *it->second;
  Bump(retired_.checks, c.checks.load(std::memory_order_relaxed));
  Bump(retired_.allowed, c.allowed.load(std::memory_order_relaxed));
  Bump(retired_.denied, c.denied.load(std::memory_order_relaxed));
  Bump(retired_.shadow_denied, c.shadow_denied.load(std::memory_order_relaxed));
  Bump(retired_.near_limit, c.near_limit.load(std::memory_order_relaxed));
  per_policy_.erase(it);
}

void WorkerStats::AddTo(CheckCounters* out) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [name, c] : per_policy_) AddCounters(*c, &out->per_policy[name]);
  AddCounters(inline_limits_, &out->inline_limits);
  AddCounters(throttle_, &out->throttle);
  AddCounters(retired_, &out->retired);
}

void WorkerStats::AddLatency(LatencySnapshot* out) const {
  for (int f = 0; f < kCommandFamilies; ++f) {
    const Histogram& h = latency_[f];
    for (size_t b = 0; b < h.buckets.size(); ++b) {
      out->buckets[f][b] += h.buckets[b].load(std::memory_order_relaxed);
    }
    out->sum_ns[f] += h.sum_ns.load(std::memory_order_relaxed);
    out->count[f] += h.count.load(std::memory_order_relaxed);
  }
}

}  // namespace rl::server

// LocalFallback: see fallback.h.
#include "fallback.h"

#include <algorithm>
#include <array>

#include "absl/types/span.h"

namespace rl::client_internal {
namespace {

LimiterOptions LocalOptions(const RemoteLimiterOptions::Fallback& options, const Clock* clock) {
  LimiterOptions local;
  local.max_keys = options.max_keys;
  // Full with nothing safe to evict: deny without consuming, so Decide can hand the check to the
  // policy's FailureMode (kFailOpen would update the states it found and allow uncounted).
  local.overflow = FailureMode::kFailClosed;
  // The Limiter only reads the clock (every Clock method is const); the option is not const
  // only because it is a plain pointer.
  local.clock = const_cast<Clock*>(clock);
  return local;
}

}  // namespace

Limit LocalShare(const Limit& limit, int64_t instances) {
  Limit share = limit;
  if (instances <= 1) return share;
  share.limit = std::max<int64_t>(1, limit.limit / instances);
  // BURST 0 means "the limit", which is already divided.
  if (limit.burst > 0) share.burst = std::max<int64_t>(1, limit.burst / instances);
  return share;
}

LocalFallback::LocalFallback(const RemoteLimiterOptions::Fallback& options, const Clock* clock)
    : instances_(options.instances), limiter_(LocalOptions(options, clock)) {}

bool LocalFallback::Shares(const Policy& policy, int64_t cost,
                           std::array<Limit, kMaxLimitsPerCheck>* shares) const {
  const size_t n = policy.limits.size();
  if (n == 0 || n > kMaxLimitsPerCheck) return false;
  for (size_t i = 0; i < n; ++i) {
    const Limit& limit = policy.limits[i];
    (*shares)[i] = LocalShare(limit, instances_);
    // A lease takes one slot whatever the cost: only rate limits can be too small for a cost.
    if (limit.algorithm != Algorithm::kConcurrency && cost > (*shares)[i].capacity() &&
        cost <= limit.capacity()) {
      return false;
    }
  }
  return true;
}

std::optional<Decision> LocalFallback::Decide(const Policy& policy, std::string_view key,
                                              int64_t cost) {
  std::array<Limit, kMaxLimitsPerCheck> shares;
  if (!Shares(policy, cost, &shares)) return std::nullopt;
  // Under the policy's name, as Limiter::Check(policy, key) keeps it: one state per key and limit
  // (algorithm + window), whatever the share's numbers.
  absl::StatusOr<Decision> decision = limiter_.Check(
      policy.name, key, absl::MakeConstSpan(shares.data(), policy.limits.size()), cost);
  if (!decision.ok() || decision->decided_by == DecidedBy::kOverflow) return std::nullopt;
  decision->decided_by = DecidedBy::kFallback;
  if (policy.shadow) ApplyShadow(*decision);
  return *decision;
}

std::optional<Lease> LocalFallback::Acquire(const Policy& policy, std::string_view key,
                                            int64_t cost) {
  std::array<Limit, kMaxLimitsPerCheck> shares;
  if (!Shares(policy, cost, &shares)) return std::nullopt;
  absl::StatusOr<Lease> lease = limiter_.Acquire(
      policy.name, key, absl::MakeConstSpan(shares.data(), policy.limits.size()), cost);
  if (!lease.ok() || lease->decision().decided_by == DecidedBy::kOverflow) return std::nullopt;
  Decision decision = lease->decision();
  decision.decided_by = DecidedBy::kFallback;
  if (policy.shadow) ApplyShadow(decision);  // a denial holds no lease: allowed without one
  const bool held = lease->held();
  std::string lease_key = lease->key();
  std::string id = lease->Detach();
  return Lease(held ? &limiter_ : nullptr, std::move(lease_key), std::move(id), decision);
}

bool LocalFallback::Release(std::string_view key, std::string_view lease_id) {
  absl::StatusOr<bool> held = limiter_.Release(key, lease_id);
  return held.ok() && *held;
}

}  // namespace rl::client_internal

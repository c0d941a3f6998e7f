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

std::optional<Decision> LocalFallback::Decide(const Policy& policy, std::string_view key,
                                              int64_t cost) {
  const size_t n = policy.limits.size();
  if (n == 0 || n > kMaxLimitsPerCheck) return std::nullopt;
  std::array<Limit, kMaxLimitsPerCheck> shares;
  for (size_t i = 0; i < n; ++i) {
    shares[i] = LocalShare(policy.limits[i], instances_);
    if (cost > shares[i].capacity() && cost <= policy.limits[i].capacity()) return std::nullopt;
  }
  // Under the policy's name, as Limiter::Check(policy, key) keeps it: one state per key and limit
  // (algorithm + window), whatever the share's numbers.
  absl::StatusOr<Decision> decision =
      limiter_.Check(policy.name, key, absl::MakeConstSpan(shares.data(), n), cost);
  if (!decision.ok() || decision->decided_by == DecidedBy::kOverflow) return std::nullopt;
  decision->decided_by = DecidedBy::kFallback;
  if (policy.shadow) ApplyShadow(*decision);
  return *decision;
}

}  // namespace rl::client_internal

// The local fallback of rl::RemoteLimiter (RemoteLimiterOptions::Fallback): while the server
// cannot answer a check in time, an in-process rl::Limiter decides it at this instance's share
// of the policy's limits, so an outage neither opens the gates nor shuts them. Kept apart from
// the network code so its arithmetic and its "cannot decide" cases are tested on a manual clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "rl/clock.h"
#include "rl/decision.h"
#include "rl/limit.h"
#include "rl/limiter.h"
#include "rl/remote_limiter.h"

namespace rl::client_internal {

// One instance's share of `limit` when `instances` share it: LIMIT and (when set) BURST divided
// by `instances` and rounded down, but never below 1, so the instances together admit at most
// the limit (or one each, when the limit is smaller than the count) and no instance is shut out.
// Algorithm and window stay, so the share keeps the rate's window and its own state key.
Limit LocalShare(const Limit& limit, int64_t instances);

class LocalFallback {
 public:
  // `clock` is the RemoteLimiter's (not owned); the local limiter reads its `now` from it.
  LocalFallback(const RemoteLimiterOptions::Fallback& options, const Clock* clock);

  // The fallback's decision for a check the server could not answer (decided_by = kFallback,
  // shadow applied), or nullopt when it cannot decide, and the policy's FailureMode must: the
  // policy names no limits (a name-only policy of kServerPolicy mode), the cost fits the policy's
  // capacity but not this instance's share of it (the share could never admit it, and "never"
  // would be false once the server is back), or the local limiter is full (max_keys) with a new
  // state and nothing it may evict. A denied or undecided check consumes nothing locally.
  std::optional<Decision> Decide(const Policy& policy, std::string_view key, int64_t cost);

  // States held (one per key and limit), for RemoteLimiterStats::fallback_keys.
  size_t keys() const { return limiter_.KeyCount(); }

 private:
  const int64_t instances_;
  Limiter limiter_;
};

}  // namespace rl::client_internal

// The answer to one check, with the exact values computed in the same atomic step.
#pragma once

#include <array>
#include <cstdint>

#include "rl/limit.h"

namespace rl {

inline constexpr int64_t kRetryNever = -1;

// The outcome for one limit of a check.
struct LimitResult {
  bool allowed = true;
  int64_t limit = 0;           // the limit's LIMIT (its capacity for bucket algorithms)
  int64_t window_ms = 0;
  int64_t remaining = 0;       // left after this call; never negative
  int64_t retry_after_ms = 0;  // 0 when allowed (leaky bucket: the delay to wait); -1 = never
  int64_t reset_after_ms = 0;  // until this limit is fully replenished
};

// The contract's reply: allowed, limit, remaining, retry_after_ms, reset_after_ms of the binding
// limit (when denied: the denying limit with the longest retry; when allowed: the one with the
// least remaining), plus every limit's own result for header values.
struct Decision {
  bool allowed = true;
  int64_t limit = 0;
  int64_t remaining = 0;
  int64_t retry_after_ms = 0;
  int64_t reset_after_ms = 0;
  uint8_t binding = 0;  // index into `limits` of the binding limit
  uint8_t count = 0;    // number of valid entries in `limits`
  // A new state could not be stored (the store was full of states unsafe to evict) and the
  // answer comes from LimiterOptions::overflow.
  bool overflow = false;
  std::array<LimitResult, kMaxLimitsPerCheck> limits{};
};

}  // namespace rl

// The answer to one check, with the exact values computed in the same atomic step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rl/limit.h"

namespace rl {

inline constexpr int64_t kRetryNever = -1;

// Who decided a check: the limiter itself, or (for a remote limiter that could not reach its
// server in time) the policy's failure mode or the in-process fallback.
// A decision by kFailOpen / kFailClosed evaluated no limit, so it claims nothing about them:
// `count` is 0 and `limit`, `remaining` and `reset_after_ms` are 0 meaning "unknown" (not a
// limit of 0); only `allowed`, `retry_after_ms` (fail-closed: when to ask again),
// `shadow_denied` and `decided_by` carry meaning. Do not derive rate-limit headers from it.
enum class DecidedBy : uint8_t {
  kLimiter = 0,     // the limits were evaluated (locally or by the server)
  kFailOpen = 1,    // the server was unavailable; allowed by FailureMode::kFailOpen
  kFailClosed = 2,  // the server was unavailable; denied by FailureMode::kFailClosed
  kOverflow = 3,    // the limiter was full and decided a new key by its overflow mode
  kFallback = 4,    // the server was unavailable; decided by the local fallback limiter
};

// The outcome for one limit of a check.
struct LimitResult {
  bool allowed = true;
  int64_t limit = 0;  // the limit's LIMIT (its capacity for bucket algorithms)
  int64_t window_ms = 0;
  int64_t remaining = 0;       // left after this call; never negative
  int64_t retry_after_ms = 0;  // 0 when allowed (leaky bucket: the delay to wait); -1 = never
  int64_t reset_after_ms = 0;  // until this limit is fully replenished
};

// Tag for a producer that writes every entry of Decision::limits it counts (the engine's checks
// and peeks): its decision leaves the entries past `count` unfilled, since zero-filling all of
// them (432 bytes) would cost a one-limit check more than the check's own arithmetic.
struct UnfilledResults {
  explicit constexpr UnfilledResults() = default;
};
inline constexpr UnfilledResults kUnfilledResults{};

// Room for the result of every limit a check may name, array-like. Only the first
// Decision::count entries are specified: a default-constructed one holds default LimitResults,
// one built with kUnfilledResults holds unspecified values until written. A union so that the
// latter constructs nothing (LimitResult's member initializers would otherwise run eight times).
class LimitResults {
 public:
  LimitResults() : items_{} {}
  explicit LimitResults(UnfilledResults) {}

  static constexpr size_t size() { return kMaxLimitsPerCheck; }
  LimitResult& operator[](size_t i) { return items_[i]; }
  const LimitResult& operator[](size_t i) const { return items_[i]; }
  LimitResult* data() { return items_; }
  const LimitResult* data() const { return items_; }
  LimitResult* begin() { return items_; }
  LimitResult* end() { return items_ + kMaxLimitsPerCheck; }
  const LimitResult* begin() const { return items_; }
  const LimitResult* end() const { return items_ + kMaxLimitsPerCheck; }

 private:
  union {
    LimitResult items_[kMaxLimitsPerCheck];
  };
};
static_assert(std::is_trivially_copyable_v<LimitResults>);

// The contract's reply: allowed, limit, remaining, retry_after_ms, reset_after_ms of the binding
// limit (when denied: the denying limit with the longest retry; when allowed: the one with the
// least remaining), plus every limit's own result for header values in limits[0..count). Entries
// past `count` are unspecified (default LimitResults in a default-constructed Decision).
struct Decision {
  Decision() = default;
  explicit Decision(UnfilledResults unfilled) : limits(unfilled) {}

  bool allowed = true;
  int64_t limit = 0;
  int64_t remaining = 0;
  int64_t retry_after_ms = 0;
  int64_t reset_after_ms = 0;
  uint8_t binding = 0;  // index into `limits` of the binding limit
  uint8_t count = 0;    // number of valid entries in `limits`
  // A shadow policy's limits denied this check, so it was allowed only because the policy is in
  // shadow mode (nothing was consumed; retry_after_ms is 0; the other fields are the denial's).
  bool shadow_denied = false;
  DecidedBy decided_by = DecidedBy::kLimiter;
  // Bit i set: limits[i] is a CONCURRENCY limit, whose window_ms is each lease's ttl rather than
  // a window (so its RateLimit-Policy entry has no w). Set by acquires and peeks.
  uint8_t leases = 0;
  LimitResults limits;
};

// Shadow mode: a denial becomes an allowance marked shadow_denied, with no wait. A denied check
// consumed nothing, so a shadow policy never changes what its limits count.
inline void ApplyShadow(Decision& d) {
  if (d.allowed) return;
  d.allowed = true;
  d.shadow_denied = true;
  d.retry_after_ms = 0;
}

}  // namespace rl

// The per-check pieces that every holder of limit state runs: validation of a check (and of a
// refund, charge or acquire), penalty blocks, the choice of the binding limit, and shadow mode. The
// one pipeline (pipeline.h) calls these for the sharded store and for a caller-held key state (the
// Redis module's value) alike, so a check means the same wherever its state lives.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "algorithms.h"
#include "registry.h"
#include "rl/decision.h"
#include "rl/limit.h"

namespace rl::internal {

// One limit's part of CheckValid.
inline bool RateLimitValid(const Limit& l) {
  // Unsigned wrap-around turns each "x < lo || x > hi" into one comparison. Only a rate is
  // checked (a check takes no lease); an algorithm value with no row has no traits.
  const uint8_t traits = TraitsOf(l.algorithm);
  return (static_cast<uint64_t>(l.limit) - 1 < static_cast<uint64_t>(kMaxLimit)) &
         (static_cast<uint64_t>(l.window_ms) - 1 < static_cast<uint64_t>(kMaxWindowMs)) &
         (static_cast<uint64_t>(l.burst) <= static_cast<uint64_t>(kMaxLimit)) &
         (static_cast<uint64_t>(l.block_ms) <= static_cast<uint64_t>(kMaxWindowMs)) &
         ((traits & kRate) != 0) & ((l.burst == 0) | ((traits & kBurst) != 0));
}
// True exactly when ValidateCheck returns OK, as straight-line code: a valid check (the common
// case) pays neither for building an absl::Status nor for a call per limit. A test compares the
// two over random limits.
inline bool CheckValid(absl::Span<const Limit> limits, int64_t cost) {
  const size_t n = limits.size();
  // One limit, the common check: no loops (and no pair to compare).
  if (ABSL_PREDICT_TRUE(n == 1)) return (cost >= 0) & RateLimitValid(limits[0]);
  if (n - 1 >= kMaxLimitsPerCheck || cost < 0) return false;  // n == 0 wraps around
  bool ok = true;
  for (size_t i = 0; i < n; ++i) {
    const Limit& l = limits[i];
    ok &= RateLimitValid(l);
    for (size_t j = 0; j < i; ++j) {
      ok &= !(limits[j].algorithm == l.algorithm && limits[j].window_ms == l.window_ms);
    }
  }
  return ok;
}

// The one validator of a check (the limits through rl::ValidateLimits, no CONCURRENCY: a check
// takes no lease, then the cost). Out of line: only a check that fails CheckValid builds a
// Status.
absl::Status ValidateCheck(absl::Span<const Limit> limits, int64_t cost);
// A peek: as a check, but a CONCURRENCY limit may be among the limits (it shows the leases).
absl::Status ValidatePeek(absl::Span<const Limit> limits, int64_t cost);
// An acquire: exactly one CONCURRENCY limit, any rate limits beside it, cost >= 0 (for them).
absl::Status ValidateAcquire(absl::Span<const Limit> limits, int64_t cost);
// A refund or charge: rate limits only, 0 <= amount <= kMaxLimit, and no refund of a leaky
// bucket (see TatAdjust).
absl::Status ValidateAdjust(absl::Span<const Limit> limits, int64_t amount, AdjustOp op);
// Index of the CONCURRENCY limit, or limits.size() when there is none.
inline size_t ConcurrencyIndex(absl::Span<const Limit> limits) {
  for (size_t i = 0; i < limits.size(); ++i) {
    if (limits[i].algorithm == Algorithm::kConcurrency) return i;
  }
  return limits.size();
}

// What a Run does: a check (consumes when all allow), a peek (changes nothing), or an acquire
// (a check that also takes a lease of its CONCURRENCY limit).
enum class RunOp : uint8_t { kCheck, kPeek, kAcquire };

// Whether an allowed run writes a limit's state: an acquire of cost 0 takes its lease but
// consumes nothing from its rate limits.
inline bool WritesState(RunOp op, int64_t cost, StateShape shape) {
  return op != RunOp::kAcquire || cost > 0 || shape == StateShape::kLeases;
}
// When a lease taken at `now` ends unless released: after its ttl (kept in window_ms).
inline int64_t LeaseEnd(const Limit& limit, int64_t now) {
  return Clamp64(int128{now} + limit.window_ms);
}

// Penalty blocks (BLOCK duration). A limit with BLOCK that denies a call of positive cost on its
// own (not a cost it can never hold) starts a block of block_ms, unless one is running; while
// it runs, every call of that limit is denied with nothing remaining and a wait of what is left
// of the block (or longer, when the limit itself would still deny then). A running block is not
// extended by the denials it causes. Blocks are kept beside the limit's state, seen only by
// limits written with BLOCK (so removing BLOCK from a policy lifts them) and removed by a reset.
inline bool StartsBlock(const Limit& limit, const LimitResult& r) {
  return limit.block_ms > 0 && !r.allowed && r.retry_after_ms != kRetryNever;
}
inline int64_t BlockUntil(const Limit& limit, int64_t now) {
  return Clamp64(int128{now} + limit.block_ms);
}
inline void ApplyBlock(LimitResult& r, int64_t until, int64_t now) {
  if (r.retry_after_ms == kRetryNever) return;  // never passes: that says more than the block
  const int64_t left = until - now;
  r.allowed = false;
  r.remaining = 0;
  r.retry_after_ms = std::max(r.retry_after_ms, left);
  r.reset_after_ms = std::max(r.reset_after_ms, left);
}

// Sets Decision::leases from the limits checked. Only acquires and peeks need it (a check refuses
// CONCURRENCY limits), which keeps it off the check's path.
inline void MarkLeases(absl::Span<const Limit> limits, Decision& d) {
  for (size_t i = 0; i < limits.size() && i < kMaxLimitsPerCheck; ++i) {
    if (limits[i].algorithm == Algorithm::kConcurrency) d.leases |= static_cast<uint8_t>(1u << i);
  }
}

// Fills the decision's summary from d.limits[0..n): when denied, the binding limit is the
// denying one with the longest wait (never wins); when allowed, the one with the least remaining,
// and the wait is the slowest shaping (leaky bucket) delay.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void MakeDecision(size_t n, Decision& d) {
  d.count = static_cast<uint8_t>(n);
  bool allowed = true;
  int64_t max_delay = 0;
  for (size_t i = 0; i < n; ++i) {
    allowed = allowed && d.limits[i].allowed;
    if (d.limits[i].allowed && d.limits[i].retry_after_ms > max_delay) {
      max_delay = d.limits[i].retry_after_ms;
    }
  }
  size_t b = 0;
  if (allowed) {
    for (size_t i = 1; i < n; ++i) {
      if (d.limits[i].remaining < d.limits[b].remaining) b = i;
    }
  } else {
    auto wait = [](const LimitResult& r) {
      return r.retry_after_ms == kRetryNever ? INT64_MAX : r.retry_after_ms;
    };
    b = n;
    for (size_t i = 0; i < n; ++i) {
      if (d.limits[i].allowed) continue;
      if (b == n || wait(d.limits[i]) > wait(d.limits[b])) b = i;
    }
  }
  const LimitResult& r = d.limits[b];
  // Read one word at a time: the result was just stored a word at a time, and GCC otherwise
  // pairs these reads into 16-byte loads that span two of those stores, which the CPU cannot
  // forward from a store (a stall of ~8% of a one-limit check). The empty asm keeps the words
  // apart; it generates no code.
  int64_t limit = r.limit, remaining = r.remaining, retry = r.retry_after_ms,
          reset = r.reset_after_ms;
  asm("" : "+r"(limit), "+r"(remaining), "+r"(retry), "+r"(reset));
  d.allowed = allowed;
  d.binding = static_cast<uint8_t>(b);
  d.limit = limit;
  d.remaining = remaining;
  d.retry_after_ms = allowed ? max_delay : retry;
  d.reset_after_ms = reset;
}

// A charge bounded by a wait (RL.CHECK ... MAXWAIT): `peek` is what a check of the charge's
// amount would answer, changing nothing. The charge applies only when every limit allows it now
// or, for a bucket limit, within `max_wait_ms` (never, -1, does not). A bucket's debt is exact:
// the caller that waits is counted as if it came when it proceeds. A window limit counts a charge
// in the window of the call, not of the later moment the caller would proceed, so a window that
// is full refuses the call as a plain check does.
inline bool WithinWait(const Decision& peek, absl::Span<const Limit> limits, int64_t max_wait_ms) {
  for (size_t i = 0; i < limits.size(); ++i) {
    const LimitResult& r = peek.limits[i];
    if (r.allowed) continue;
    if (!HasBurst(limits[i].algorithm) || r.retry_after_ms < 0 || r.retry_after_ms > max_wait_ms) {
      return false;
    }
  }
  return true;
}

// The answer of a bounded charge that applied: `charged` (a check of cost 0 right after the
// charge) becomes an admission whose retry_after_ms is the wait before the caller may proceed,
// each limit's from `peek` (the time its debt is repaid; 0 when it had room).
inline void AdmitCharged(const Decision& peek, Decision& charged) {
  const size_t n = charged.count;
  for (size_t i = 0; i < n; ++i) {
    charged.limits[i].allowed = true;
    charged.limits[i].retry_after_ms = peek.limits[i].retry_after_ms;
  }
  MakeDecision(n, charged);
}

}  // namespace rl::internal

// The rate-limiting algorithms as pure functions over compact state structs:
// (state, limit, now, cost) -> (new state, result, expiry). No locking, no clock, no allocation
// (the sliding log, which needs a growable buffer, lives in sliding_log.h). The store owns
// locking and expiry; these functions own the arithmetic.
//
// Conventions shared by every algorithm:
//  - `state == nullptr` means "no stored state", i.e. fresh (a full bucket, an empty window).
//  - `cost` has been validated by the caller: 0 <= cost. cost 0 peeks (never changes state).
//  - cost above what the limit can ever hold is denied with retry_after_ms = kRetryNever and the
//    state unchanged.
//  - `expiry_ms` is the first time at which the returned state is equivalent to fresh, so the
//    store may drop it then. The returned state equals the input state whenever the call was
//    denied or peeked (the store then keeps what it has).
//  - A state may be in debt after a charge (AdjustOp::kCharge): it then holds less than nothing,
//    every call (cost 0 included) is denied until the debt is repaid, and retry_after_ms counts
//    that repayment in.
//  - Products are formed in 128-bit integers: limit <= 2^40 and window <= 10 years (< 2^39 ms)
//    keep every product far below 2^127, and elapsed times are clamped before multiplying, so a
//    year of idleness or a clock that stands still cannot overflow or go negative.
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/base/attributes.h"
#include "rl/decision.h"
#include "rl/limit.h"

namespace rl::internal {

using int128 = __int128;

// Integer division rounding towards negative / positive infinity (b > 0). Operands that fit in
// 64 bits (the common case) take the much cheaper 64-bit division.
inline bool Fits64(int128 v) { return v == static_cast<int64_t>(v); }
inline int128 FloorDiv(int128 a, int128 b) {
  if (Fits64(a) && Fits64(b)) {
    const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    const int64_t q = x / y;
    return (x % y != 0 && x < 0) ? q - 1 : q;
  }
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
inline int128 CeilDiv(int128 a, int128 b) {
  if (Fits64(a) && Fits64(b)) {
    const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    const int64_t q = x / y;
    return (x % y != 0 && x > 0) ? q + 1 : q;
  }
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}
// Truncating division of non-negative values, 64-bit when possible.
inline int128 Div(int128 a, int128 b) {
  if (Fits64(a) && Fits64(b)) return static_cast<int64_t>(a) / static_cast<int64_t>(b);
  return a / b;
}
// Saturates a 128-bit value into int64 (results beyond it mean "practically never").
inline int64_t Clamp64(int128 v) {
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// Every two-word algorithm state has the same shape so the store can keep it in one slot: a time
// (last update, TAT or window start, in ms) and one word whose meaning is the algorithm's.
struct TwoWordState {
  int64_t time = 0;
  int64_t word = 0;
};
// A time (the current window's start) and two counts: the sliding window counter's state.
struct ThreeWordState {
  int64_t time = 0;
  int64_t previous = 0;
  int64_t current = 0;
};

// How far ahead a charge may push a state's debt; a larger debt saturates here (557 years, i.e.
// "never" in practice), which keeps every time within the store's 48-bit range.
inline constexpr int64_t kMaxDebtMs = int64_t{1} << 44;
// The largest count a fixed window reaches, and a sliding window's two counts (which share 14
// bytes of their slot, see Slot3 in store.h); larger charges saturate. Both are beyond reach of
// anything but charges: a check never counts past its limit (2^40), and 2^56 takes 65536
// charges of the largest amount within one window.
inline constexpr int64_t kMaxCount = int64_t{1} << 60;
inline constexpr int64_t kMaxWindowCount = (int64_t{1} << 56) - 1;

template <typename S>
struct Step {
  S state;                // the state to store (equal to the input when nothing changed)
  LimitResult result;     // what this limit answers
  int64_t expiry_ms = 0;  // when `state` becomes equivalent to fresh
  // Set only by the *Adjust functions: they produced a state to write (which may be equivalent
  // to fresh). A check's caller writes back exactly when the check was allowed with cost > 0.
  bool changed = false;
};

// Token bucket: capacity = limit.capacity() tokens, refilled continuously at limit/window per ms.
// State: time = of the last update (ms); word = tokens held, in units of 1/D token, with D stored
// in the top bits (see algorithms.cc). Exact (and identical to GCRA) whenever
// capacity * window < 2^56, which covers e.g. 10^9 per day; beyond that it rounds refills down
// (never admits more than exact).
//
// The token bucket's stored word: units in the low kTokenUnitBits bits, the unit shift above.
inline constexpr int kTokenUnitBits = 56;
inline constexpr int64_t kTokenUnitMask = (int64_t{1} << kTokenUnitBits) - 1;

// Any shift, a state in debt (algorithms.cc).
Step<TwoWordState> TokenBucketGeneral(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                                      int64_t cost);

// The token bucket when the units need no shift (capacity * window < 2^56, e.g. anything up to
// 10^9 per day) and the stored state agrees: every value fits in 64 bits, a millisecond refills
// exactly `limit` units, and it takes two divisions instead of a dozen 128-bit operations.
// Inline: every token-bucket check runs it, and out of line the call and the returned Step
// showed in its cost.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline Step<TwoWordState> TokenBucketExact(const TwoWordState* state,
                                                                        int64_t cap, int64_t l,
                                                                        int64_t w, int64_t now_ms,
                                                                        int64_t cost) {
  const int64_t full = cap * w;
  Step<TwoWordState> step;
  int64_t units = full;
  int64_t last = now_ms;
  if (state != nullptr) {
    step.state = *state;
    last = std::max(state->time, now_ms);
    units = std::min(state->word & kTokenUnitMask, full);
    int64_t elapsed, gained;
    if (units < full) {
      if (__builtin_sub_overflow(now_ms, state->time, &elapsed)) elapsed = INT64_MAX;
      elapsed = std::max<int64_t>(0, elapsed);
      if (__builtin_mul_overflow(elapsed, l, &gained) || gained >= full - units) {
        units = full;
      } else {
        units += gained;
      }
    }
  }
  LimitResult& r = step.result;
  r.limit = cap;
  r.window_ms = w;
  if (cost > cap) {
    r.allowed = false;
    r.retry_after_ms = kRetryNever;
  } else if (units >= cost * w) {
    if (cost > 0) {
      units -= cost * w;
      step.state.time = last;
      step.state.word = units;
    }
  } else {
    r.allowed = false;
    r.retry_after_ms = (cost * w - units + l - 1) / l;
  }
  r.remaining = units / w;
  r.reset_after_ms = (full - units + l - 1) / l;
  // reset_after_ms < 2^56 here, so only a time near the end of int64 saturates.
  if (__builtin_add_overflow(now_ms, r.reset_after_ms, &step.expiry_ms)) step.expiry_ms = INT64_MAX;
  return step;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline Step<TwoWordState> TokenBucket(const TwoWordState* state,
                                                                   const Limit& limit,
                                                                   int64_t now_ms, int64_t cost) {
  const int64_t cap = limit.capacity();
  const int64_t w = limit.window_ms;
  // Shift 0 (the bit lengths alone prove capacity * window < 2^56), and a state that is not in
  // debt (its time not in the future) and was stored with shift 0.
  if ((64 - __builtin_clzll(cap)) + (64 - __builtin_clzll(w)) <= kTokenUnitBits &&
      (state == nullptr || ((state->word >> kTokenUnitBits) == 0 && state->time <= now_ms))) {
    return TokenBucketExact(state, cap, limit.limit, w, now_ms, cost);
  }
  return TokenBucketGeneral(state, limit, now_ms, cost);
}

// GCRA (generic cell rate algorithm), the integer form of the token bucket: the state is the
// theoretical arrival time, TAT, in ticks of 1/limit ms: time = TAT ms, word = remaining ticks
// (0 <= word < limit). Admits exactly what TokenBucket admits.
Step<TwoWordState> Gcra(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                        int64_t cost);

// Leaky bucket used for shaping: requests join a queue of capacity limit.capacity() that drains
// at limit/window per ms. An accepted call's retry_after_ms is the delay before it may proceed
// (rounded up); a call is rejected only when the queue is full. Same state layout as Gcra, with
// TAT = when the queue will be empty.
Step<TwoWordState> LeakyBucket(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                               int64_t cost);

// Fixed window that starts at the first request (INCR + EXPIRE): time = window start, word = count.
Step<TwoWordState> FixedWindow(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                               int64_t cost);

// Sliding window counter: a fresh state starts on the grid of multiples of the window length and
// later windows continue the stored window's grid; the previous window's count is weighted by how
// much of it still overlaps the trailing window.
// time = current window start, previous / current = the previous / current window's count.
// Error bound: an aligned window never admits more than LIMIT, and any trailing window of length
// WINDOW admits fewer than 2 * LIMIT (exact when traffic is uniform).
Step<ThreeWordState> SlidingWindow(const ThreeWordState* state, const Limit& limit, int64_t now_ms,
                                   int64_t cost);

// Refunds and settle-later charges (RL.REFUND / RL.CHARGE): `amount` (>= 0, validated) units
// given back or taken at `now_ms`, whatever the state holds. A refund never raises a state above
// fresh (a full bucket, an empty window); a charge may overdraw it into debt. The returned step
// carries the new state and what a check of cost 0 answers right after (so a state in debt
// reports allowed = false with the time until it is repaid); `changed` when there is a state to
// write (which may be equivalent to fresh: expiry_ms <= now_ms). Refunding nothing, or into no
// state, changes nothing.
enum class AdjustOp : uint8_t { kRefund, kCharge };
Step<TwoWordState> TokenBucketAdjust(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                                     int64_t amount, AdjustOp op);
// GCRA, and the leaky bucket's charge: the TAT moves by amount * window ticks (a refund never
// below now). A leaky bucket refunds nothing: its callers were already told their delays, and
// a slot given back would let two of them proceed at once (validated before this is called).
Step<TwoWordState> GcraAdjust(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                              int64_t amount, AdjustOp op);
Step<TwoWordState> LeakyBucketAdjust(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                                     int64_t amount, AdjustOp op);
// Fixed window: the count moves (a charge on no window starts one at now; a refund never below 0).
Step<TwoWordState> FixedWindowAdjust(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                                     int64_t amount, AdjustOp op);
// Sliding window counter: a charge adds to the current window; a refund takes from the current
// window first, then from the previous one.
Step<ThreeWordState> SlidingWindowAdjust(const ThreeWordState* state, const Limit& limit,
                                         int64_t now_ms, int64_t amount, AdjustOp op);

}  // namespace rl::internal

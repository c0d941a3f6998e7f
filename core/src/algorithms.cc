// Arithmetic of the two- and three-word algorithms (see algorithms.h for the contracts).
#include "algorithms.h"

#include <algorithm>

namespace rl::internal {
namespace {

// Token-bucket units: tokens are held in units of 1/D token with D = window >> shift, and the
// shift is the smallest that keeps capacity * D below 2^56. With shift 0 a millisecond refills
// exactly `limit` units, so the arithmetic is exact; the shift only kicks in for absurd
// capacity * window products. The shift is kept in the top bits of the stored word so a later
// check with another capacity can rescale instead of misreading the units.
constexpr int kUnitBits = kTokenUnitBits;
constexpr int64_t kUnitMask = kTokenUnitMask;

int TokenShift(int64_t capacity, int64_t window_ms) {
  // Common case without 128-bit multiplies: the bit lengths alone prove the product fits.
  if ((64 - __builtin_clzll(capacity)) + (64 - __builtin_clzll(window_ms)) <= kUnitBits) return 0;
  int shift = 0;
  while (static_cast<int128>(capacity) * (window_ms >> shift) >= (int128{1} << kUnitBits)) ++shift;
  return shift;
}

LimitResult Never(int64_t limit, int64_t window_ms, int64_t remaining, int64_t reset_after_ms) {
  LimitResult r;
  r.allowed = false;
  r.limit = limit;
  r.window_ms = window_ms;
  r.remaining = std::max<int64_t>(0, remaining);
  r.retry_after_ms = kRetryNever;
  r.reset_after_ms = std::max<int64_t>(0, reset_after_ms);
  return r;
}

// Splits a tick count (1 tick = 1/limit ms) into whole ms and the remaining ticks.
TwoWordState SplitTicks(int128 ticks, int64_t limit) {
  int128 ms = FloorDiv(ticks, limit);
  TwoWordState s;
  s.time = Clamp64(ms);
  s.word = static_cast<int64_t>(ticks - static_cast<int128>(s.time) * limit);
  if (s.word < 0 || s.word >= limit)
    s.word = 0;  // only after saturation: ms precision is moot then
  return s;
}

int128 JoinTicks(const TwoWordState& s, int64_t limit) {
  return static_cast<int128>(s.time) * limit +
         std::min<int64_t>(std::max<int64_t>(s.word, 0), limit - 1);
}

// The token bucket's unit system for one limit (see TokenShift): d units per token, `full` units
// in a full bucket, and a refill of num / den units per ms (exactly `limit` with shift 0).
struct BucketUnits {
  int128 d, full, num, den;
};
BucketUnits BucketUnitsFor(const Limit& limit, int shift) {
  const int64_t w = limit.window_ms;
  BucketUnits u;
  u.d = w >> shift;
  u.full = static_cast<int128>(limit.capacity()) * u.d;  // < 2^56
  u.num = shift == 0 ? int128{limit.limit} : int128{limit.limit} * u.d;
  u.den = shift == 0 ? 1 : w;
  return u;
}

// The units a stored bucket holds at `now_ms`, refilled and capped at full; negative while a
// charge's debt is being repaid (the state's time is then in the future).
int128 UnitsAt(const TwoWordState& s, const BucketUnits& u, int shift, int64_t w, int64_t now_ms) {
  int128 units = s.word & kUnitMask;
  // Unsigned: a hostile or corrupt word must not make a negative shift.
  const int old_shift =
      static_cast<int>(std::min<uint64_t>(62, static_cast<uint64_t>(s.word) >> kUnitBits));
  if (old_shift != shift) units = Div(units * u.d, std::max<int128>(1, w >> old_shift));
  units = std::min(units, u.full);
  if (s.time > now_ms) {
    // Clamping to 2^47 ms keeps ahead * num within 128 bits (num < 2^79); debts stop at 2^44.
    const int128 ahead = std::min<int128>(int128{s.time} - now_ms, int128{1} << 47);
    return units - CeilDiv(ahead * u.num, u.den);
  }
  if (units < u.full) {
    // Clamping the idle time to 2^47 ms (4000 years) keeps elapsed * num within 128 bits.
    const int128 elapsed = std::min<int128>(int128{now_ms} - s.time, int128{1} << 47);
    const int128 gained = elapsed * u.num;
    units = gained >= (u.full - units) * u.den ? u.full
                                               : units + (u.den == 1 ? gained : Div(gained, u.den));
  }
  return units;
}

}  // namespace

Step<TwoWordState> TokenBucketGeneral(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                                      int64_t cost) {
  const int64_t cap = limit.capacity();
  const int64_t l = limit.limit;
  const int64_t w = limit.window_ms;
  const int shift = TokenShift(cap, w);
  // The exact path also needs a state that is not in debt (its time not in the future).
  if (shift == 0 &&
      (state == nullptr || ((state->word >> kUnitBits) == 0 && state->time <= now_ms))) {
    return TokenBucketExact(state, cap, l, w, now_ms, cost);
  }
  const BucketUnits u = BucketUnitsFor(limit, shift);
  const int128 d = u.d, full = u.full, num = u.num, den = u.den;

  Step<TwoWordState> step;
  int128 units = full;
  int64_t last = now_ms;
  if (state != nullptr) {
    step.state = *state;
    last = std::max(state->time, now_ms);
    units = UnitsAt(*state, u, shift, w, now_ms);
  }
  // ms until `u` units have become `full` again, rounded up.
  auto until_full = [&](int128 u) -> int64_t {
    return u >= full ? 0 : Clamp64(CeilDiv((full - u) * den, num));
  };

  LimitResult& r = step.result;
  r.limit = cap;
  r.window_ms = w;
  if (cost > cap) {
    r = Never(cap, w, static_cast<int64_t>(Div(std::max<int128>(units, 0), d)), until_full(units));
  } else if (units >= cost * d) {
    if (cost > 0) {
      units -= cost * d;
      step.state.time = last;
      step.state.word = (static_cast<int64_t>(shift) << kUnitBits) | static_cast<int64_t>(units);
    }
    r.allowed = true;
  } else {
    r.allowed = false;
    r.retry_after_ms = Clamp64(CeilDiv((cost * d - units) * den, num));
  }
  if (r.retry_after_ms != kRetryNever) {
    r.remaining = static_cast<int64_t>(Div(std::max<int128>(units, 0), d));
    r.reset_after_ms = until_full(units);
  }
  step.expiry_ms = Clamp64(static_cast<int128>(now_ms) + r.reset_after_ms);
  return step;
}

namespace {

// GCRA and the shaping leaky bucket share their arithmetic; they differ only in what an
// accepted call is told (GCRA: go now; leaky bucket: wait until the queue ahead has drained).
Step<TwoWordState> TatStep(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                           int64_t cost, bool shaping) {
  const int64_t cap = limit.capacity();
  const int64_t l = limit.limit;
  const int64_t w = limit.window_ms;
  const int128 now_t = static_cast<int128>(now_ms) * l;
  const int128 tolerance = static_cast<int128>(cap) * w;  // capacity tokens of w ticks each

  Step<TwoWordState> step;
  int128 tat = now_t;
  if (state != nullptr) {
    step.state = *state;
    tat = std::max(JoinTicks(*state, l), now_t);
  }
  LimitResult& r = step.result;
  r.limit = cap;
  r.window_ms = w;
  auto remaining = [&](int128 t) {
    return Clamp64(std::max<int128>(0, Div(std::max<int128>(0, tolerance - (t - now_t)), w)));
  };
  auto until = [&](int128 t) { return Clamp64(CeilDiv(t - now_t, l)); };
  int128 kept_tat = tat;
  if (cost > cap) {
    r = Never(cap, w, remaining(tat), until(tat));
  } else {
    const int128 new_tat = tat + static_cast<int128>(cost) * w;
    if (new_tat - now_t <= tolerance) {
      r.allowed = true;
      if (shaping) r.retry_after_ms = until(tat);
      if (cost > 0) {
        kept_tat = new_tat;
        step.state = SplitTicks(new_tat, l);
      }
      r.remaining = remaining(kept_tat);
      r.reset_after_ms = until(kept_tat);
    } else {
      r.allowed = false;
      r.retry_after_ms = Clamp64(CeilDiv(new_tat - tolerance - now_t, l));
      r.remaining = remaining(tat);
      r.reset_after_ms = until(tat);
    }
  }
  // Fully replenished once TAT is reached; reset_after_ms measured exactly that from now.
  step.expiry_ms = Clamp64(int128{now_ms} + r.reset_after_ms);
  return step;
}

}  // namespace

Step<TwoWordState> Gcra(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                        int64_t cost) {
  return TatStep(state, limit, now_ms, cost, /*shaping=*/false);
}

Step<TwoWordState> LeakyBucket(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                               int64_t cost) {
  return TatStep(state, limit, now_ms, cost, /*shaping=*/true);
}

Step<TwoWordState> FixedWindow(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                               int64_t cost) {
  const int64_t l = limit.limit;
  const int64_t w = limit.window_ms;
  Step<TwoWordState> step;
  int64_t start = now_ms;
  int64_t count = 0;
  if (state != nullptr) {
    step.state = *state;
    // A window that has not ended (or a clock that went back) keeps counting.
    if (static_cast<int128>(now_ms) < static_cast<int128>(state->time) + w) {
      start = state->time;
      count = std::max<int64_t>(0, state->word);
    }
  }
  const int64_t end_in = Clamp64(static_cast<int128>(start) + w - now_ms);
  LimitResult& r = step.result;
  r.limit = l;
  r.window_ms = w;
  if (cost > l) {
    r = Never(l, w, l - count, count > 0 ? end_in : 0);
  } else if (cost <= l - count) {  // not count + cost: a restored count may be near 2^63
    r.allowed = true;
    if (cost > 0) {
      count += cost;
      step.state = TwoWordState{start, count};
    }
  } else {
    r.allowed = false;
    r.retry_after_ms = end_in;
  }
  if (r.retry_after_ms != kRetryNever) {
    r.remaining = std::max<int64_t>(0, l - count);
    r.reset_after_ms = count > 0 ? end_in : 0;
  }
  step.expiry_ms = count > 0 ? Clamp64(static_cast<int128>(start) + w) : now_ms;
  return step;
}

namespace {

// The sliding window's counts as of `now_ms`: the window holding now, its count and the previous
// window's. A fresh state starts on the grid of multiples of the window; a stored one continues
// its own grid (the same grid for states made here; a state restored from a snapshot may sit on
// another one).
struct SlidingCounts {
  int128 start, prev, cur;
};
SlidingCounts SlidingNow(const ThreeWordState* state, int128 w, int64_t now_ms) {
  SlidingCounts c{FloorDiv(now_ms, w) * w, 0, 0};
  if (state != nullptr) {
    const int128 s = state->time;
    const int128 k = FloorDiv(int128{now_ms} - s, w);
    if (k <= 0) {  // the stored window (or a clock that went back: keep counting in it)
      c.start = s;
      c.prev = std::max<int64_t>(0, state->previous);
      c.cur = std::max<int64_t>(0, state->current);
    } else {
      c.start = s + k * w;
      if (k == 1) c.prev = std::max<int64_t>(0, state->current);
    }
  }
  return c;
}

}  // namespace

Step<ThreeWordState> SlidingWindow(const ThreeWordState* state, const Limit& limit, int64_t now_ms,
                                   int64_t cost) {
  const int64_t l = limit.limit;
  const int128 w = limit.window_ms;
  Step<ThreeWordState> step;
  if (state != nullptr) step.state = *state;
  const SlidingCounts counts = SlidingNow(state, w, now_ms);
  const int128 start = counts.start;
  const int128 prev = counts.prev;
  int128 cur = counts.cur;
  const int128 elapsed = std::max<int128>(0, now_ms - start);
  const int128 lw = static_cast<int128>(l) * w;
  auto used = [&](int128 c) { return c * w + prev * (w - elapsed); };  // "count times w"
  auto reset_after = [&](int128 c) -> int64_t {
    if (c > 0) return Clamp64(start + 2 * w - now_ms);
    if (prev > 0) return Clamp64(start + w - now_ms);
    return 0;
  };
  LimitResult& r = step.result;
  r.limit = l;
  r.window_ms = limit.window_ms;
  if (cost > l) {
    r = Never(l, limit.window_ms, Clamp64(FloorDiv(lw - used(cur), w)), reset_after(cur));
  } else if (used(cur) + cost * w <= lw) {
    r.allowed = true;
    if (cost > 0) {
      cur += cost;
      step.state = ThreeWordState{Clamp64(start), Clamp64(prev), Clamp64(cur)};
    }
  } else {
    r.allowed = false;
    // The first ms at which the same call fits: later in this window as the previous window's
    // weight fades, or in the next window (where this window's count is the weighted one).
    int128 wait = -1;
    const int128 x = (static_cast<int128>(l) - cur - cost) * w;
    if (x >= 0 && prev > 0) {
      const int128 d = std::max<int128>(0, w - elapsed - Div(x, prev));
      if (d < w - elapsed) wait = d;
    }
    if (wait < 0) {
      const int128 y = (static_cast<int128>(l) - cost) * w;
      const int128 e = cur > 0 ? std::max<int128>(0, w - Div(y, cur)) : 0;
      wait = (w - elapsed) + e;
    }
    r.retry_after_ms = Clamp64(wait);
  }
  if (r.retry_after_ms != kRetryNever) {
    r.remaining = Clamp64(std::max<int128>(0, FloorDiv(lw - used(cur), w)));
    r.reset_after_ms = reset_after(cur);
  }
  step.expiry_ms = Clamp64(static_cast<int128>(now_ms) + reset_after(cur));
  return step;
}

// ---- Refunds and charges ----

Step<TwoWordState> TokenBucketAdjust(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                                     int64_t amount, AdjustOp op) {
  if (amount == 0 || (state == nullptr && op == AdjustOp::kRefund)) {
    return TokenBucket(state, limit, now_ms, 0);
  }
  const int shift = TokenShift(limit.capacity(), limit.window_ms);
  const BucketUnits u = BucketUnitsFor(limit, shift);
  int128 units = state != nullptr ? UnitsAt(*state, u, shift, limit.window_ms, now_ms) : u.full;
  const int128 delta = static_cast<int128>(amount) * u.d;
  units = op == AdjustOp::kRefund ? std::min(units + delta, u.full) : units - delta;
  TwoWordState s;
  int128 held = units;
  int128 ahead = 0;
  if (units < 0) {
    // In debt: empty until the refill has repaid it. Store the moment it holds something again
    // and what it holds then (exact with shift 0: the refill's remainder).
    ahead = CeilDiv(-units * u.den, u.num);
    if (ahead > kMaxDebtMs) {
      ahead = kMaxDebtMs;
      held = 0;
    } else {
      held = std::min(units + Div(ahead * u.num, u.den), u.full);
    }
  }
  s.time = Clamp64(int128{now_ms} + ahead);
  s.word = (static_cast<int64_t>(shift) << kUnitBits) | static_cast<int64_t>(held);
  Step<TwoWordState> step = TokenBucket(&s, limit, now_ms, 0);
  step.state = s;
  step.changed = true;
  return step;
}

namespace {

Step<TwoWordState> TatAdjust(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                             int64_t amount, AdjustOp op, bool shaping) {
  if (amount == 0 || (state == nullptr && op == AdjustOp::kRefund)) {
    return TatStep(state, limit, now_ms, 0, shaping);
  }
  const int64_t l = limit.limit;
  const int128 now_t = static_cast<int128>(now_ms) * l;
  int128 tat = state != nullptr ? std::max(JoinTicks(*state, l), now_t) : now_t;
  const int128 delta = static_cast<int128>(amount) * limit.window_ms;
  tat = op == AdjustOp::kRefund ? std::max(tat - delta, now_t)
                                : std::min(tat + delta, now_t + int128{kMaxDebtMs} * l);
  const TwoWordState s = SplitTicks(tat, l);
  Step<TwoWordState> step = TatStep(&s, limit, now_ms, 0, shaping);
  step.state = s;
  step.changed = true;
  return step;
}

}  // namespace

Step<TwoWordState> GcraAdjust(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                              int64_t amount, AdjustOp op) {
  return TatAdjust(state, limit, now_ms, amount, op, /*shaping=*/false);
}

Step<TwoWordState> LeakyBucketAdjust(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                                     int64_t amount, AdjustOp op) {
  return TatAdjust(state, limit, now_ms, amount, op, /*shaping=*/true);
}

Step<TwoWordState> FixedWindowAdjust(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                                     int64_t amount, AdjustOp op) {
  const bool open = state != nullptr && static_cast<int128>(now_ms) <
                                            static_cast<int128>(state->time) + limit.window_ms;
  if (amount == 0 || (!open && op == AdjustOp::kRefund)) {
    return FixedWindow(state, limit, now_ms, 0);
  }
  TwoWordState s =
      open ? TwoWordState{state->time, std::max<int64_t>(0, state->word)} : TwoWordState{now_ms, 0};
  // amount <= 2^40 and counts are capped first, so nothing overflows (not even a hostile state).
  s.word = op == AdjustOp::kRefund ? std::max<int64_t>(0, s.word - amount)
                                   : std::min(std::min(s.word, kMaxCount) + amount, kMaxCount);
  Step<TwoWordState> step = FixedWindow(&s, limit, now_ms, 0);
  step.state = s;
  step.changed = true;
  return step;
}

Step<ThreeWordState> SlidingWindowAdjust(const ThreeWordState* state, const Limit& limit,
                                         int64_t now_ms, int64_t amount, AdjustOp op) {
  if (amount == 0 || (state == nullptr && op == AdjustOp::kRefund)) {
    return SlidingWindow(state, limit, now_ms, 0);
  }
  const SlidingCounts c = SlidingNow(state, limit.window_ms, now_ms);
  ThreeWordState s{Clamp64(c.start), Clamp64(c.prev), Clamp64(c.cur)};
  if (op == AdjustOp::kRefund) {
    const int64_t from_cur = std::min(amount, s.current);
    s.current -= from_cur;
    s.previous -= std::min(amount - from_cur, s.previous);
  } else {
    s.current = std::min(std::min(s.current, kMaxWindowCount) + amount, kMaxWindowCount);
  }
  Step<ThreeWordState> step = SlidingWindow(&s, limit, now_ms, 0);
  step.state = s;
  step.changed = true;
  return step;
}

}  // namespace rl::internal

// The one pipeline of every call on limit state: check, peek and acquire (RunChecks), refund and
// charge, bounded by a wait or not (RunAdjust), and release (ReleaseLease). It is written once,
// over a small store interface that two stores implement: the Limiter's sharded tables
// (check_steps.h) and rl::KeyState's per-key block (key_state_store.h), so the in-process engine
// and rl.so evaluate, block, decide and write by the very same steps, and only where a state
// lives, how it is locked, found, made room for and written back differs.
//
// A store S (all of it inline; `Q` is Pending<S::Where>) provides:
//   Locate<op>(i, q, limit)        where limit i's state lives (before any lock is taken)
//   Now(), Lock(n), Unlock()       around the steps; Now() is read before the locks
//   FindTwo(q, &old) / FindThree(q, &old) -> found, FindLog<read_only>(q, limit, now) -> the log
//     pruned to its window (a pruned copy when read-only), FindLeases(q) -> the lease set; the
//     last two set q.found
//   Blocks() -> a small copyable view with BlockedUntil(q, now) and StartBlock(q, until): the
//     penalty blocks beside the states (a view, so the store itself need not leave registers)
//   ReserveRoom<op, n>(p, now, cost, out) -> Room     room for the new states of an allowed call
//   Placed(i)                      whether limit i's new state found room (fail-open stores)
//   Grew(q, bytes)                 a log or lease set grew (or shrank) by `bytes`
//   Update(q, r) / Insert(q, r), Wrote(p, n, now, logs_grew)     write-back of an allowed call
//   Refresh<op>(q, r, now)         a found state of a call that wrote nothing
//   BeginAdjust(p, limits, amount, op, now) -> bool  before a refund or charge writes
//   Adjusted(q, r, changed, now)   write-back of one limit's refunded or charged state
//   Released(q, changed, now)      write-back of a lease set a release changed
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/types/span.h"
#include "leases.h"
#include "rl/decision.h"
#include "rl/limit.h"
#include "sliding_log.h"
#include "step.h"

// Unrolls a loop over the limits of a call: fully in the instances for one or two limits (their
// trip count is a constant), by two in the instance for any count. Without it GCC kept the
// two-limit loops rolled once the steps were inlined into them.
#define RL_UNROLL_LIMITS _Pragma("GCC unroll 2")

namespace rl::internal {

// One limit's work between its evaluation and its write-back. `at` is the store's: where the
// state lives. Only the members a step reads before writing are set by the pipeline.
template <class Where>
struct Pending {
  Where at;
  StateShape kind;
  bool found;        // a stored state was found (else the evaluation was of a fresh one)
  TwoWordState two;  // the new state, by shape
  ThreeWordState three;
  LogBuf* log;       // the found log (pruned), or this call's new one
  LeaseBuf* leases;  // the found lease set, or this acquire's new one
  int64_t expiry_ms;
};
// Room for the most limits a call may name, constructed only as far as used: zeroing all eight
// on every check showed up in profiles.
template <class Where>
union PendingArray {
  PendingArray() {}
  Pending<Where> items[kMaxLimitsPerCheck];
};

// What a store's ReserveRoom decides for an allowed call: write its states, write nothing (the
// call was refused for want of room: refresh what it found), or stop (an error).
enum class Room : uint8_t { kWrite, kRefresh, kStop };

// Stores a limit's result a word at a time. The result is computed in registers; assigned whole,
// GCC wrote it to the stack a word at a time and read it back 16 bytes at a time, which the CPU
// cannot forward from those stores (three stalls, ~15% of a one-limit check's time). The empty
// asm keeps the words apart; it generates no code.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void PutResult(LimitResult& out, const LimitResult& r) {
  int64_t limit = r.limit, window = r.window_ms, remaining = r.remaining, retry = r.retry_after_ms,
          reset = r.reset_after_ms;
  asm("" : "+r"(limit), "+r"(window), "+r"(remaining), "+r"(retry), "+r"(reset));
  out.allowed = r.allowed;
  out.limit = limit;
  out.window_ms = window;
  out.remaining = remaining;
  out.retry_after_ms = retry;
  out.reset_after_ms = reset;
}

// What differs between the two- and three-word shapes for the pipeline: how the store finds the
// state, where the new one is kept, and the steps of a check and of a refund or charge.
template <class State>
struct Words;
template <>
struct Words<TwoWordState> {
  template <class S, class Q>
  ABSL_ATTRIBUTE_ALWAYS_INLINE static bool Find(S& s, Q& q, TwoWordState* old) {
    return s.FindTwo(q, old);
  }
  template <class Q>
  ABSL_ATTRIBUTE_ALWAYS_INLINE static TwoWordState& New(Q& q) {
    return q.two;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE static Step<TwoWordState> Check(const TwoWordState* old,
                                                               const Limit& limit, int64_t now,
                                                               int64_t cost) {
    return TwoWordStep(old, limit, now, cost);
  }
  static Step<TwoWordState> Adjust(const TwoWordState* old, const Limit& limit, int64_t now,
                                   int64_t amount, AdjustOp op) {
    return TwoWordAdjust(old, limit, now, amount, op);
  }
};
template <>
struct Words<ThreeWordState> {
  template <class S, class Q>
  ABSL_ATTRIBUTE_ALWAYS_INLINE static bool Find(S& s, Q& q, ThreeWordState* old) {
    return s.FindThree(q, old);
  }
  template <class Q>
  ABSL_ATTRIBUTE_ALWAYS_INLINE static ThreeWordState& New(Q& q) {
    return q.three;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE static Step<ThreeWordState> Check(const ThreeWordState* old,
                                                                 const Limit& limit, int64_t now,
                                                                 int64_t cost) {
    return ThreeWordStep(old, limit, now, cost);
  }
  static Step<ThreeWordState> Adjust(const ThreeWordState* old, const Limit& limit, int64_t now,
                                     int64_t amount, AdjustOp op) {
    return ThreeWordAdjust(old, limit, now, amount, op);
  }
};

// A two- or three-word state as its store holds it (null: none, q.found says which), into `*old`.
template <class State, class S, class Q>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline const State* FindWords(S& s, Q& q, State* old) {
  q.found = Words<State>::Find(s, q, old);
  return q.found ? old : nullptr;
}
// Keeps a step's new state in `q` for the write-back.
template <class State, class Q>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void KeepWords(Q& q, const Step<State>& next) {
  Words<State>::New(q) = next.state;
  q.expiry_ms = next.expiry_ms;
}
template <class State, class S, class Q>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline LimitResult EvaluateWords(S& s, Q& q, const Limit& limit,
                                                              int64_t now, int64_t cost) {
  State old;
  const Step<State> next = Words<State>::Check(FindWords(s, q, &old), limit, now, cost);
  KeepWords(q, next);
  return next.result;
}

// Evaluates one limit on the state its store holds, changing nothing but a log's expired runs.
template <RunOp kOp, class S, class Q>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline LimitResult Evaluate(S& s, Q& q, const Limit& limit,
                                                         int64_t now, int64_t cost) {
  // The two-word shape first: most limits have it (a switch tested it third).
  if (ABSL_PREDICT_TRUE(q.kind == StateShape::kTwoWord)) {
    return EvaluateWords<TwoWordState>(s, q, limit, now, cost);
  }
  switch (q.kind) {
    case StateShape::kTwoWord:
      break;
    case StateShape::kThreeWord:
      return EvaluateWords<ThreeWordState>(s, q, limit, now, cost);
    case StateShape::kLog:
      q.log = s.template FindLog<kOp == RunOp::kPeek>(q, limit, now);
      return LogEvaluate(q.log, limit, now, cost, &q.expiry_ms);
    case StateShape::kLeases:
      if constexpr (kOp != RunOp::kCheck) {
        q.leases = s.FindLeases(q);
        return LeaseEvaluate(q.leases, limit, now, &q.expiry_ms);
      }
      break;  // a check takes no CONCURRENCY limit (validated)
  }
  q.found = false;
  return LimitResult{};
}

// Penalty blocks (see step.h), after the limits were evaluated: a running block overrides its
// limit's result; then, when `kStarts` and the call is denied and has a cost, each limit with
// BLOCK that denied it on its own starts a block (stored unless a peek: a peek shows the block it
// would start). Out of line: only calls on limits with BLOCK come here.
template <RunOp kOp, bool kStarts, class B, class Q>
ABSL_ATTRIBUTE_NOINLINE void ApplyBlocks(B s, Q* p, absl::Span<const Limit> limits,
                                         LimitResult* results, int64_t now, int64_t cost) {
  uint32_t blocked = 0;  // bit i: limit i is under a running block
  bool allowed = true;
  for (size_t i = 0; i < limits.size(); ++i) {
    if (limits[i].block_ms > 0) {
      const int64_t until = s.BlockedUntil(p[i], now);
      if (until > now) {
        ApplyBlock(results[i], until, now);
        blocked |= 1u << i;
      }
    }
    allowed = allowed && results[i].allowed;
  }
  if (!kStarts || allowed || cost == 0) return;
  for (size_t i = 0; i < limits.size(); ++i) {
    if (((blocked >> i) & 1) || !StartsBlock(limits[i], results[i])) continue;
    const int64_t until = BlockUntil(limits[i], now);
    if constexpr (kOp != RunOp::kPeek) s.StartBlock(p[i], until);
    ApplyBlock(results[i], until, now);
  }
}

// Writes the states of an allowed call: a log gets this call's runs, a CONCURRENCY limit lease
// `nonce`. Found states first, then new ones: inserting may move the found states of a table.
template <RunOp kOp, size_t kN, class S, class Q>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void WriteBack(S& s, Q* p, absl::Span<const Limit> limits,
                                                   int64_t now, int64_t cost,
                                                   const LimitResult* results, uint64_t nonce,
                                                   bool* leased) {
  const size_t n = kN != 0 ? kN : limits.size();
  bool logs_grew = false;
  RL_UNROLL_LIMITS
  for (size_t i = 0; i < n; ++i) {
    Q& q = p[i];
    if (!WritesState(kOp, cost, q.kind) || !(q.found || s.Placed(i))) continue;
    if (q.kind == StateShape::kLog) {
      const size_t before = LogBytes(q.log);
      q.log = LogAppend(q.log, limits[i], now, cost);
      s.Grew(q, LogBytes(q.log) - before);
      logs_grew = true;
    } else if constexpr (kOp == RunOp::kAcquire) {
      if (q.kind == StateShape::kLeases) {
        // Held until released or until its ttl ends.
        const int64_t lease_end = LeaseEnd(limits[i], now);
        const size_t before = LeaseBytes(q.leases);
        q.leases = LeaseAdd(q.leases, nonce, lease_end, now);
        s.Grew(q, LeaseBytes(q.leases) - before);
        q.expiry_ms = std::max(q.expiry_ms, lease_end);
        *leased = true;
      }
    }
    if (q.found) s.Update(q, results[i]);
  }
  RL_UNROLL_LIMITS
  for (size_t i = 0; i < n; ++i) {
    Q& q = p[i];
    if (q.found || !WritesState(kOp, cost, q.kind) || !s.Placed(i)) continue;
    if (kOp != RunOp::kAcquire && q.kind == StateShape::kLeases) continue;
    s.Insert(q, results[i]);
  }
  s.Wrote(p, n, now, logs_grew);
}

// A check (consumes when every limit allows), a peek (writes nothing) or an acquire (a check that
// also takes lease `nonce` of its CONCURRENCY limit, setting *leased) of validated limits. kN = 1
// or 2 are instances whose loops unroll, 0 any count; inline, as are the store's steps (out of
// line, a call with its arguments showed in a one-limit check's cost).
template <RunOp kOp, size_t kN, class S>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void RunChecks(S& s, absl::Span<const Limit> limits,
                                                   int64_t cost, uint64_t nonce, bool* leased,
                                                   Decision& out) {
  using Q = Pending<typename S::Where>;
  PendingArray<typename S::Where> pending;
  Q* const p = pending.items;
  const size_t n = kN != 0 ? kN : limits.size();
  LimitResult* const results = out.limits.data();
  int64_t blocks = 0;  // non-zero when some limit has a BLOCK
  RL_UNROLL_LIMITS
  for (size_t i = 0; i < n; ++i) {
    Q& q = *new (&p[i]) Q;
    q.kind = ShapeOf(limits[i].algorithm);
    s.template Locate<kOp>(i, q, limits[i]);
    blocks |= limits[i].block_ms;
  }
  // One `now` per call, read before the locks so the clock's cost is not spent holding them. A
  // call that then waits for a lock may act on a time older than the state it finds (as with
  // rl-server's CommandClock, which hands out its I/O thread's reading of the batch): every step
  // keeps counting a state newer than `now` (no refill, no new window, log runs at the newest
  // run's time), which can only admit less, never more.
  const int64_t now = s.Now();
  s.Lock(n);
  RL_UNROLL_LIMITS
  for (size_t i = 0; i < n; ++i)
    PutResult(results[i], Evaluate<kOp>(s, p[i], limits[i], now, cost));
  if (ABSL_PREDICT_FALSE(blocks != 0))
    ApplyBlocks<kOp, true>(s.Blocks(), p, limits, results, now, cost);
  // The decision now, while its limits' results are at hand (a refusal for want of room redoes
  // it).
  MakeDecision(n, out);
  Room room = Room::kRefresh;
  if (out.allowed && kOp != RunOp::kPeek && (cost > 0 || kOp == RunOp::kAcquire)) {
    room = s.template ReserveRoom<kOp, kN>(p, now, cost, out);
  }
  if (room == Room::kWrite) {
    WriteBack<kOp, kN>(s, p, limits, now, cost, results, nonce, leased);
  } else if (room == Room::kRefresh) {
    // Nothing consumed: each found state keeps its words; the store refreshes its expiry, which
    // a changed limit may have moved.
    RL_UNROLL_LIMITS
    for (size_t i = 0; i < n; ++i) {
      if (p[i].found) s.template Refresh<kOp>(p[i], results[i], now);
    }
  }
  s.Unlock();
}

// A two- or three-word state refunded or charged; `*changed` as the step says.
template <class State, class S, class Q>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline LimitResult AdjustWords(S& s, Q& q, const Limit& limit,
                                                            int64_t now, int64_t amount,
                                                            AdjustOp op, bool* changed) {
  State old;
  const Step<State> next = Words<State>::Adjust(FindWords(s, q, &old), limit, now, amount, op);
  KeepWords(q, next);
  *changed = next.changed;
  return next.result;
}

// One limit of a refund or charge: its new state, handed to the store to write back, and what a
// check of cost 0 answers right after.
template <class S, class Q>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline LimitResult AdjustLimit(S& s, Q& q, const Limit& limit,
                                                            int64_t now, int64_t amount,
                                                            AdjustOp op) {
  LimitResult r;
  bool changed = false;
  switch (q.kind) {
    case StateShape::kTwoWord:
      r = AdjustWords<TwoWordState>(s, q, limit, now, amount, op, &changed);
      break;
    case StateShape::kThreeWord:
      r = AdjustWords<ThreeWordState>(s, q, limit, now, amount, op, &changed);
      break;
    case StateShape::kLog: {
      LogBuf* log = s.template FindLog<false>(q, limit, now);
      const size_t before = LogBytes(log);
      q.log = LogAdjust(log, limit, now, amount, op);
      s.Grew(q, LogBytes(q.log) - before);
      r = LogEvaluate(q.log, limit, now, 0, &q.expiry_ms);
      changed = amount > 0 && q.log != nullptr;
      break;
    }
    case StateShape::kLeases:
      q.found = false;
      return r;  // refused by ValidateAdjust
  }
  s.Adjusted(q, r, changed, now);
  return r;
}

// A refund or charge of validated limits. A charge with `max_wait_ms` >= 0 applies only when a
// check of `amount` would pass within that wait (WithinWait), decided under the same locks; it
// then answers as an admission (AdmitCharged), else as that check denied, which starts no block.
// A refund or charge neither starts nor lifts a block, but its answer shows one. False when the
// store refused to write (BeginAdjust).
template <class S>
bool RunAdjust(S& s, absl::Span<const Limit> limits, int64_t amount, AdjustOp op,
               int64_t max_wait_ms, Decision& out) {
  using Q = Pending<typename S::Where>;
  PendingArray<typename S::Where> pending;
  Q* const p = pending.items;
  const size_t n = limits.size();
  int64_t blocks = 0;
  for (size_t i = 0; i < n; ++i) {
    Q& q = *new (&p[i]) Q;
    q.kind = ShapeOf(limits[i].algorithm);
    s.template Locate<RunOp::kCheck>(i, q, limits[i]);
    blocks |= limits[i].block_ms;
  }
  const int64_t now = s.Now();  // before the locks, as in RunChecks
  s.Lock(n);
  Decision peek;  // filled only for a bounded charge (which the compiler cannot tell)
  if (max_wait_ms >= 0) {
    for (size_t i = 0; i < n; ++i) {
      peek.limits[i] = Evaluate<RunOp::kPeek>(s, p[i], limits[i], now, amount);
    }
    if (blocks != 0)
      ApplyBlocks<RunOp::kPeek, false>(s.Blocks(), p, limits, peek.limits.data(), now, 0);
    MakeDecision(n, peek);
    if (!WithinWait(peek, limits, max_wait_ms)) {
      s.Unlock();
      out = peek;
      return true;
    }
  }
  const bool began = s.BeginAdjust(p, limits, amount, op, now);
  if (began) {
    // Each limit's new state is written as soon as it is computed: a refund or charge always
    // applies, so there is nothing to decide first.
    for (size_t i = 0; i < n; ++i) {
      out.limits[i] = AdjustLimit(s, p[i], limits[i], now, amount, op);
    }
    if (blocks != 0)
      ApplyBlocks<RunOp::kPeek, false>(s.Blocks(), p, limits, out.limits.data(), now, 0);
  }
  s.Unlock();
  if (!began) return false;
  MakeDecision(n, out);
  if (max_wait_ms >= 0) AdmitCharged(peek, out);
  return true;
}

// Removes lease `nonce` from the lease set at `q` (located, locked); true when it was held.
template <class S, class Q>
bool ReleaseLease(S& s, Q& q, uint64_t nonce, int64_t now) {
  q.kind = StateShape::kLeases;
  q.leases = s.FindLeases(q);
  if (!q.found) return false;
  const size_t count = LeaseCount(q.leases);
  const size_t bytes = LeaseBytes(q.leases);
  const bool held = LeaseRemove(q.leases, nonce, now);
  s.Grew(q, LeaseBytes(q.leases) - bytes);
  s.Released(q, LeaseCount(q.leases) != count, now);
  return held;
}

}  // namespace rl::internal

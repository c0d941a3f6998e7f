// The algorithm registry: one row per algorithm, the only place that lists them. rl::Algorithm's
// enumerators, the spec names the parser accepts, what BURST and REFUND may be used with, each
// state's shape (and so the table, snapshot record and encoding that holds it) and the step
// functions that evaluate it all come from these rows (core/src/registry.h expands them).
//
//   ROW(Name, id, "SPEC_NAME", traits, shape)
//   Name    rl::Algorithm::kName; for a two- or three-word shape also the step functions
//           rl::internal::Name (a check or peek) and rl::internal::NameAdjust (a refund or
//           charge), which the row declares and the algorithm's own file defines.
//   id      the number in state ids, rl-server's state keys (and so its snapshots) and rl.so's
//           encoding: 0..127, in row order, never reused.
//   traits  kRate: a rate limit, checked by RL.CHECK (CONCURRENCY is not: it holds leases);
//           kBurst: reads LIMIT/WINDOW as a rate with a capacity, so BURST means something;
//           kShaping: tells every accepted call when to proceed, so it takes no refund (a slot
//           given back would let two waiting callers proceed at once).
//   shape   kTwoWord (a time and one word), kThreeWord (a time and two counts), kLog (a sliding
//           log's buffer), kLeases (a set of leases).
//
// CONCURRENCY is not a rate: at most LIMIT leases held at once, each ending when released or after
// its ttl (kept in window_ms); taken with Limiter::Acquire / RL.ACQUIRE, never by a plain check.
//
// ALIGNED_WINDOW is FIXED_WINDOW on the wall clock's grid: windows start at multiples of WINDOW
// counted from the Unix epoch (a minute is the clock's minute), as envoyproxy/ratelimit counts;
// the one algorithm that wall time decides (see core/src/aligned_window.cc).
//
// Adding an algorithm whose state has one of these shapes: its row here, its step functions
// (core/src/), its tests, and its documentation.
#pragma once

#define RL_ALGORITHM_ROWS(ROW)                                             \
  ROW(TokenBucket, 0, "TOKEN_BUCKET", kRate | kBurst, kTwoWord)            \
  ROW(Gcra, 1, "GCRA", kRate | kBurst, kTwoWord)                           \
  ROW(SlidingLog, 2, "SLIDING_LOG", kRate, kLog)                           \
  ROW(SlidingWindow, 3, "SLIDING_WINDOW", kRate, kThreeWord)               \
  ROW(FixedWindow, 4, "FIXED_WINDOW", kRate, kTwoWord)                     \
  ROW(LeakyBucket, 5, "LEAKY_BUCKET", kRate | kBurst | kShaping, kTwoWord) \
  ROW(Concurrency, 6, "CONCURRENCY", 0, kLeases)                           \
  ROW(AlignedWindow, 7, "ALIGNED_WINDOW", kRate, kTwoWord)

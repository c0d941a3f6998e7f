// The algorithm registry's rows (rl/algorithm_rows.h) expanded for the engine: each algorithm's
// traits, state shape and step functions in one table indexed by its id, and the state tag that
// names a limit's state in rl-server's state keys and in rl.so's per-key block.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/base/attributes.h"
#include "algorithms.h"
#include "rl/algorithm_rows.h"
#include "rl/limit.h"

namespace rl::internal {

// The form of an algorithm's state, and so the store table, snapshot record and encoding that
// hold it.
enum class StateShape : uint8_t { kTwoWord, kThreeWord, kLog, kLeases };

enum AlgorithmTraits : uint8_t {
  kRate = 1,     // checked by a plain check
  kBurst = 2,    // takes BURST
  kShaping = 4,  // tells accepted calls when to proceed: takes no refund
};

using TwoWordCheck = Step<TwoWordState> (*)(const TwoWordState*, const Limit&, int64_t now,
                                            int64_t cost);
using TwoWordAdjustFn = Step<TwoWordState> (*)(const TwoWordState*, const Limit&, int64_t now,
                                               int64_t amount, AdjustOp op);
using ThreeWordCheck = Step<ThreeWordState> (*)(const ThreeWordState*, const Limit&, int64_t now,
                                                int64_t cost);
using ThreeWordAdjustFn = Step<ThreeWordState> (*)(const ThreeWordState*, const Limit&, int64_t now,
                                                   int64_t amount, AdjustOp op);

// The step functions of every row whose shape has them (the log and lease shapes are evaluated
// by sliding_log.h and leases.h).
#define RL_STEPS_kTwoWord(Name)                                                               \
  Step<TwoWordState> Name(const TwoWordState* state, const Limit& limit, int64_t now,         \
                          int64_t cost);                                                      \
  Step<TwoWordState> Name##Adjust(const TwoWordState* state, const Limit& limit, int64_t now, \
                                  int64_t amount, AdjustOp op);
#define RL_STEPS_kThreeWord(Name)                                                                 \
  Step<ThreeWordState> Name(const ThreeWordState* state, const Limit& limit, int64_t now,         \
                            int64_t cost);                                                        \
  Step<ThreeWordState> Name##Adjust(const ThreeWordState* state, const Limit& limit, int64_t now, \
                                    int64_t amount, AdjustOp op);
#define RL_STEPS_kLog(Name)
#define RL_STEPS_kLeases(Name)
#define RL_DECLARE_STEPS(Name, id, spec_name, traits, shape) RL_STEPS_##shape(Name)
RL_ALGORITHM_ROWS(RL_DECLARE_STEPS)
#undef RL_DECLARE_STEPS

struct AlgorithmRow {
  Algorithm algorithm;
  std::string_view name;
  uint8_t traits;
  StateShape shape;
  TwoWordCheck two_word_check;
  TwoWordAdjustFn two_word_adjust;
  ThreeWordCheck three_word_check;
  ThreeWordAdjustFn three_word_adjust;
};

#define RL_FNS_kTwoWord(Name) &Name, &Name##Adjust, nullptr, nullptr
#define RL_FNS_kThreeWord(Name) nullptr, nullptr, &Name, &Name##Adjust
#define RL_FNS_kLog(Name) nullptr, nullptr, nullptr, nullptr
#define RL_FNS_kLeases(Name) nullptr, nullptr, nullptr, nullptr
#define RL_ROW(Name, id, spec_name, traits, shape) \
  AlgorithmRow{Algorithm::k##Name, spec_name, traits, StateShape::shape, RL_FNS_##shape(Name)},
inline constexpr AlgorithmRow kAlgorithmRows[] = {RL_ALGORITHM_ROWS(RL_ROW)};
#undef RL_ROW
inline constexpr size_t kAlgorithmCount = sizeof(kAlgorithmRows) / sizeof(kAlgorithmRows[0]);

constexpr bool IdsAreRowOrder() {
  for (size_t i = 0; i < kAlgorithmCount; ++i) {
    if (static_cast<size_t>(kAlgorithmRows[i].algorithm) != i) return false;
  }
  return true;
}
static_assert(IdsAreRowOrder(), "algorithm ids are 0, 1, 2, ... in row order");
// The encoding's kind byte keeps its top bit for penalty blocks.
static_assert(kAlgorithmCount <= 128, "algorithm ids fit in 7 bits");

inline bool KnownAlgorithm(Algorithm algorithm) {
  return static_cast<size_t>(algorithm) < kAlgorithmCount;
}
// The row of a known algorithm (KnownAlgorithm; every validated limit's is).
inline const AlgorithmRow& RowOf(Algorithm algorithm) {
  return kAlgorithmRows[static_cast<uint8_t>(algorithm)];
}

// Traits by any uint8_t value (0 for values with no row), so a check validates a limit with one
// load whatever its algorithm field holds.
inline constexpr std::array<uint8_t, 256> kTraitsById = [] {
  std::array<uint8_t, 256> traits{};
  for (const AlgorithmRow& row : kAlgorithmRows) {
    traits[static_cast<uint8_t>(row.algorithm)] = row.traits;
  }
  return traits;
}();
inline uint8_t TraitsOf(Algorithm algorithm) {
  return kTraitsById[static_cast<uint8_t>(algorithm)];
}
inline bool HasBurst(Algorithm algorithm) { return (TraitsOf(algorithm) & kBurst) != 0; }

inline StateShape ShapeOf(Algorithm algorithm) { return RowOf(algorithm).shape; }

// The tag of (algorithm, window): window << 3 | the id's low three bits, with the id's higher bits
// at bit 42 and up (windows stay below 2^39). Injective, and for ids 0..7 the very value that
// state keys and rl.so's entries have always used, so every stored state keeps its name.
inline constexpr int kTagHighIdShift = 42;
inline uint64_t StateTag(Algorithm algorithm, int64_t window_ms) {
  const uint64_t id = static_cast<uint8_t>(algorithm);
  return (static_cast<uint64_t>(window_ms) << 3) | (id & 7) | ((id >> 3) << kTagHighIdShift);
}
inline Algorithm TagAlgorithm(uint64_t tag) {
  return static_cast<Algorithm>((tag & 7) | (((tag >> kTagHighIdShift) & 0x1f) << 3));
}
inline int64_t TagWindow(uint64_t tag) {
  return static_cast<int64_t>((tag >> 3) & ((uint64_t{1} << (kTagHighIdShift - 3)) - 1));
}

// A check's two- and three-word steps. The token bucket, the default and most used, is called
// directly (inline); the others through their rows.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline Step<TwoWordState> TwoWordStep(const TwoWordState* state,
                                                                   const Limit& limit, int64_t now,
                                                                   int64_t cost) {
  if (limit.algorithm == Algorithm::kTokenBucket) return TokenBucket(state, limit, now, cost);
  return RowOf(limit.algorithm).two_word_check(state, limit, now, cost);
}
inline Step<TwoWordState> TwoWordAdjust(const TwoWordState* state, const Limit& limit, int64_t now,
                                        int64_t amount, AdjustOp op) {
  return RowOf(limit.algorithm).two_word_adjust(state, limit, now, amount, op);
}
inline Step<ThreeWordState> ThreeWordStep(const ThreeWordState* state, const Limit& limit,
                                          int64_t now, int64_t cost) {
  return RowOf(limit.algorithm).three_word_check(state, limit, now, cost);
}
inline Step<ThreeWordState> ThreeWordAdjust(const ThreeWordState* state, const Limit& limit,
                                            int64_t now, int64_t amount, AdjustOp op) {
  return RowOf(limit.algorithm).three_word_adjust(state, limit, now, amount, op);
}

}  // namespace rl::internal

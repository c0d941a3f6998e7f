// ALIGNED_WINDOW: a fixed window on the grid of multiples of its length counted from the Unix
// epoch, the window envoyproxy/ratelimit counts (a MINUTE is the clock's minute, from :00 to :59;
// MONTH is 30 days and YEAR 365 days from the epoch, as it computes them), so a request counted
// here lands in the same window as there.
//
// The only algorithm that wall time decides. It enters once, through the engine's own clock: every
// engine clock counts Unix milliseconds on a monotonic clock anchored to the wall clock (see
// rl/clock.h), so `now` is Unix time and the step stays a pure function of (state, limit, now,
// cost). State: time = the window's start, word = its count, as FIXED_WINDOW's, whose arithmetic
// it reuses once the window is placed.
#include "algorithms.h"
#include "registry.h"

namespace rl::internal {
namespace {

bool Live(const TwoWordState* state, int64_t window_ms, int64_t now_ms) {
  return state != nullptr &&
         static_cast<int128>(now_ms) < static_cast<int128>(state->time) + window_ms;
}

// The window to count in: the stored one while it lasts (a state stored before the clock was
// moved back, e.g. a snapshot from a host whose clock ran ahead, keeps its count until its own
// window ends: nothing is handed out early), otherwise an empty window on the grid.
TwoWordState Placed(const TwoWordState* state, int64_t window_ms, int64_t now_ms) {
  if (Live(state, window_ms, now_ms)) return *state;
  return TwoWordState{Clamp64(FloorDiv(now_ms, window_ms) * window_ms), 0};
}

}  // namespace

Step<TwoWordState> AlignedWindow(const TwoWordState* state, const Limit& limit, int64_t now_ms,
                                 int64_t cost) {
  const TwoWordState placed = Placed(state, limit.window_ms, now_ms);
  return FixedWindow(&placed, limit, now_ms, cost);
}

Step<TwoWordState> AlignedWindowAdjust(const TwoWordState* state, const Limit& limit,
                                       int64_t now_ms, int64_t amount, AdjustOp op) {
  // A refund to a window that has ended (or never began) has nothing to give back.
  if (amount == 0 || (op == AdjustOp::kRefund && !Live(state, limit.window_ms, now_ms))) {
    return AlignedWindow(state, limit, now_ms, 0);
  }
  const TwoWordState placed = Placed(state, limit.window_ms, now_ms);
  return FixedWindowAdjust(&placed, limit, now_ms, amount, op);
}

}  // namespace rl::internal

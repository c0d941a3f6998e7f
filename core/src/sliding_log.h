// The exact sliding window log: every admitted request is remembered as a (time, count) run in a
// compact heap buffer until it leaves the trailing window, so no window of length WINDOW ever holds
// more than LIMIT. Runs are variable-length: the ms since the previous run and, when above one, the
// count; a request at a millisecond of its own costs 1-4 bytes for windows up to 37 hours (see
// sliding_log.cc), and requests in the same ms share one run.
//
// Split into Prune / Evaluate / Append so the limiter can evaluate every limit of a check first
// and append only when all of them allow (all or nothing). Not thread-safe: the store locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "algorithms.h"
#include "rl/decision.h"
#include "rl/limit.h"

namespace rl::internal {

struct LogBuf;

// Drops runs that have left the window (now - time >= window). Safe on null.
void LogPrune(LogBuf* log, int64_t window_ms, int64_t now_ms);
// What a call of `cost` answers now; the log must have been pruned at `now_ms`. Null = empty.
// `*expiry_ms` receives when the log (after an allowed, committed call) is empty again.
LimitResult LogEvaluate(const LogBuf* log, const Limit& limit, int64_t now_ms, int64_t cost,
                        int64_t* expiry_ms);
// Records `cost` (> 0) at `now_ms`; returns the (possibly reallocated or new) buffer.
LogBuf* LogAppend(LogBuf* log, const Limit& limit, int64_t now_ms, int64_t cost);
// The most requests a log holds (charges beyond it saturate); what Decode and snapshots accept.
inline constexpr int64_t kMaxLogTotal = kMaxLimit * 16;
// RL.REFUND / RL.CHARGE on a log pruned at `now_ms`: a refund drops up to `amount` from the
// newest runs (the requests most recently counted); a charge records `amount` at `now_ms` even
// past the limit, up to kMaxLogTotal. Returns the (possibly new or reallocated) buffer; a refund
// of a null log returns null.
LogBuf* LogAdjust(LogBuf* log, const Limit& limit, int64_t now_ms, int64_t amount, AdjustOp op);
// When the log becomes empty (its newest run leaves the window); `now_ms` when already empty.
int64_t LogExpiry(const LogBuf* log, int64_t window_ms, int64_t now_ms);
// Requests currently held (sum of counts).
int64_t LogTotal(const LogBuf* log);
// Heap bytes held by the buffer (0 for null).
size_t LogBytes(const LogBuf* log);
void LogFree(LogBuf* log);
// A copy of the buffer (null for null).
LogBuf* LogClone(const LogBuf* log);

// Serialization for snapshots: the live runs as absolute (time ms, count) pairs, oldest first.
void LogRuns(const LogBuf* log, std::vector<std::pair<int64_t, int64_t>>* out);

}  // namespace rl::internal

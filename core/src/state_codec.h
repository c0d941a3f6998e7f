// The one encoding of a state's payload, shared by rl-server's snapshots (snapshot.cc) and
// rl::KeyState's encoding (key_state_codec.cc), which persist and replicate them byte for byte
// alike: two words {i64 time ms, i64 word}, three words {i64 time ms, i64 previous, i64 current},
// a sliding log {u32 runs, runs x (i64 time ms, i64 count)}, oldest first, and a lease set {u32 n,
// n x (u64 nonce, i64 end ms)}. Little-endian, through bytes.h. The two users differ only in
// their clock frame (a snapshot's times are wall-clock times, KeyState's the caller's own), so
// every writer takes the move into the written frame and every reader the move out of it. Each
// caller validates what it reads with its own bounds (a snapshot drops what lies outside every
// window).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "algorithms.h"
#include "bytes.h"
#include "leases.h"
#include "registry.h"
#include "sliding_log.h"

namespace rl::internal {

using LogRunList = std::vector<std::pair<int64_t, int64_t>>;  // (time ms, count)
using LeaseList = std::vector<std::pair<uint64_t, int64_t>>;  // (nonce, end ms)

// `t` moved by `shift` ms, saturating (0 moves nothing).
inline int64_t ShiftMs(int64_t t, int64_t shift) { return Clamp64(int128{t} + shift); }

// How many words a two- or three-word payload holds. Word 0 is the state's one time (last update,
// TAT or window start), the only word a frame moves; the others are counts, ticks or token units.
inline size_t PayloadWordCount(StateShape shape) { return shape == StateShape::kThreeWord ? 3 : 2; }

// Writes a two- or three-word payload, its time moved by `shift`.
inline void PutWords(ByteWriter& w, StateShape shape, const int64_t* words, int64_t shift) {
  w.Put<int64_t>(ShiftMs(words[0], shift));
  for (size_t k = 1; k < PayloadWordCount(shape); ++k) w.Put<int64_t>(words[k]);
}

// Reads a two- or three-word payload into `words`, its time passed through `to_frame`; false
// when the bytes end first.
template <typename ToFrame>
bool GetWords(ByteReader& r, StateShape shape, ToFrame&& to_frame, int64_t* words) {
  for (size_t k = 0; k < PayloadWordCount(shape); ++k) {
    if (!r.Get(&words[k])) return false;
  }
  words[0] = to_frame(words[0]);
  return true;
}

// Writes a log's runs, their times moved by `shift`; `scratch` is reused between calls.
inline void PutLog(ByteWriter& w, const LogBuf* log, int64_t shift, LogRunList* scratch) {
  scratch->clear();
  LogRuns(log, scratch);
  w.Put<uint32_t>(static_cast<uint32_t>(scratch->size()));
  for (const auto& [t, count] : *scratch) {
    w.Put<int64_t>(ShiftMs(t, shift));
    w.Put<int64_t>(count);
  }
}

// Writes a lease set, each lease's end moved by `shift`.
inline void PutLeases(ByteWriter& w, const LeaseBuf* leases, int64_t shift, LeaseList* scratch) {
  scratch->clear();
  LeaseEntries(leases, scratch);
  w.Put<uint32_t>(static_cast<uint32_t>(scratch->size()));
  for (const auto& [nonce, end] : *scratch) {
    w.Put<uint64_t>(nonce);
    w.Put<int64_t>(ShiftMs(end, shift));
  }
}

enum class PayloadRead : uint8_t { kOk, kTruncated, kTooMany, kRefused };

// Reads a log's runs or a lease set ({u32 n, n x (8 bytes, 8 bytes)}): at most `max_n` entries
// and no more than the bytes left hold; `each(first, second)` sees every entry and returns false
// to refuse it. Nothing is allocated for a count the input does not hold.
template <typename First, typename F>
PayloadRead ReadPayloadPairs(ByteReader& r, uint64_t max_n, F&& each) {
  uint32_t n = 0;
  if (!r.Get(&n)) return PayloadRead::kTruncated;
  if (n > max_n) return PayloadRead::kTooMany;
  if (n > r.left() / 16) return PayloadRead::kTruncated;
  for (uint32_t i = 0; i < n; ++i) {
    First first{};
    int64_t second = 0;
    r.Get(&first);  // within the bytes left (checked above)
    r.Get(&second);
    if (!each(first, second)) return PayloadRead::kRefused;
  }
  return PayloadRead::kOk;
}

// A log rebuilt from runs (non-decreasing times, positive counts summing to `total`); `keep`
// sees the log after every append, so an owner holds it even if a later append throws.
template <typename Keep>
LogBuf* LogFromRuns(const LogRunList& runs, int64_t total, Keep&& keep) {
  // The limit only sizes the buffer here; the real one applies from the next check.
  const Limit sizing{Algorithm::kSlidingLog, std::clamp<int64_t>(total, 1, kMaxLimit), 1};
  LogBuf* log = nullptr;
  for (const auto& [t, count] : runs) {
    log = LogAppend(log, sizing, t, count);
    keep(log);
  }
  return log;
}

}  // namespace rl::internal

// The sliding log's run buffer: one malloc'd block, a small header followed by a ring of 8-byte
// runs, so pruning and appending are O(1) and a full log needs no slack.
#include "sliding_log.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "algorithms.h"
#include "state_alloc.h"

namespace rl::internal {

namespace {

constexpr int kCountBits = 24;
constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
constexpr uint64_t kSpill = kCountMask;  // count field value meaning "count in the next word"
constexpr int64_t kMaxOffset = (int64_t{1} << 40) - 1;
// A single key never holds more than this many words (1 GiB); past it the newest run absorbs
// new requests and moves to `now`, which keeps older requests in the window longer than exact:
// it can only under-admit, never over-admit.
constexpr uint32_t kMaxItems = uint32_t{1} << 27;

}  // namespace

// A ring of 8-byte words after a small header. Live runs occupy `used` words starting at `head`
// (wrapping at `cap`), oldest first; a run is one word, or two when its count spills.
struct LogBuf {
  int64_t base_ms;      // run times are offsets from here
  int64_t total;        // sum of live counts
  uint32_t head;        // physical index of the oldest word
  uint32_t used;        // words in use
  uint32_t cap;         // words allocated
  uint32_t last_words;  // size of the newest run (1 or 2)

  uint64_t* items() { return reinterpret_cast<uint64_t*>(this + 1); }
  const uint64_t* items() const { return reinterpret_cast<const uint64_t*>(this + 1); }
  // The word at logical position k (0 = oldest).
  uint64_t& At(uint32_t k) {
    uint32_t i = head + k;
    return items()[i >= cap ? i - cap : i];
  }
  uint64_t At(uint32_t k) const {
    uint32_t i = head + k;
    return items()[i >= cap ? i - cap : i];
  }
  bool empty() const { return used == 0; }
  uint32_t Last() const { return used - last_words; }
  bool Spills(uint32_t k) const { return (At(k) & kCountMask) == kSpill; }
  int64_t TimeAt(uint32_t k) const { return base_ms + static_cast<int64_t>(At(k) >> kCountBits); }
  int64_t CountAt(uint32_t k) const {
    return Spills(k) ? static_cast<int64_t>(At(k + 1)) : static_cast<int64_t>(At(k) & kCountMask);
  }
  uint32_t Words(uint32_t k) const { return Spills(k) ? 2 : 1; }
};

namespace {

LogBuf* Allocate(uint32_t cap) {
  void* p = StateAlloc(sizeof(LogBuf) + size_t{cap} * sizeof(uint64_t));
  if (p == nullptr) throw std::bad_alloc();  // allocation failure is not a request-path error
  LogBuf* log = static_cast<LogBuf*>(p);
  log->base_ms = 0;
  log->total = 0;
  log->head = log->used = 0;
  log->last_words = 1;
  log->cap = cap;
  return log;
}

// Rebases offsets on the oldest run's time (needed only when `now` is 2^40 ms past the base).
void Rebase(LogBuf* log) {
  if (log->empty()) return;
  const int64_t new_base = log->TimeAt(0);
  const uint64_t shift = static_cast<uint64_t>(new_base - log->base_ms) << kCountBits;
  for (uint32_t k = 0; k < log->used; k += log->Words(k)) log->At(k) -= shift;
  log->base_ms = new_base;
}

// Copies the ring into a new block of `cap` words, unwrapped.
LogBuf* Grow(LogBuf* log, uint32_t cap) {
  LogBuf* grown = Allocate(cap);
  grown->base_ms = log->base_ms;
  grown->total = log->total;
  grown->used = log->used;
  grown->last_words = log->last_words;
  for (uint32_t k = 0; k < log->used; ++k) grown->items()[k] = log->At(k);
  StateFree(log);
  return grown;
}

void Push(LogBuf* log, uint64_t word) { log->At(log->used++) = word; }

}  // namespace

void LogPrune(LogBuf* log, int64_t window_ms, int64_t now_ms) {
  if (log == nullptr) return;
  while (!log->empty() && static_cast<int128>(now_ms) - log->TimeAt(0) >= window_ms) {
    const uint32_t words = log->Words(0);
    log->total -= log->CountAt(0);
    log->head += words;
    if (log->head >= log->cap) log->head -= log->cap;
    log->used -= words;
  }
  if (log->empty()) log->head = log->used = log->total = 0;
}

LimitResult LogEvaluate(const LogBuf* log, const Limit& limit, int64_t now_ms, int64_t cost,
                        int64_t* expiry_ms) {
  const int64_t l = limit.limit;
  const int64_t w = limit.window_ms;
  const int64_t total = LogTotal(log);
  const int64_t newest_end =
      log == nullptr || log->empty() ? now_ms : Clamp64(int128{log->TimeAt(log->Last())} + w);
  LimitResult r;
  r.limit = l;
  r.window_ms = w;
  r.remaining = std::max<int64_t>(0, l - total);
  r.reset_after_ms = std::max<int64_t>(0, newest_end - now_ms);
  *expiry_ms = newest_end;
  if (cost > l) {
    r.allowed = false;
    r.retry_after_ms = kRetryNever;
  } else if (total + cost <= l) {
    r.allowed = true;
    if (cost > 0) {
      r.remaining = l - total - cost;
      *expiry_ms = Clamp64(int128{now_ms} + w);
      r.reset_after_ms = w;
    }
  } else {
    // The oldest runs must leave the window until the call fits; the run that makes it fit
    // decides the wait.
    r.allowed = false;
    const int64_t need = total + cost - l;
    // Counts held in `total` beyond the runs (see LogAppend) leave with the newest run.
    r.retry_after_ms = std::max<int64_t>(1, newest_end - now_ms);
    int64_t freed = 0;
    for (uint32_t k = 0; k < log->used; k += log->Words(k)) {
      freed += log->CountAt(k);
      if (freed >= need) {
        r.retry_after_ms = Clamp64(int128{log->TimeAt(k)} + w - now_ms);
        break;
      }
    }
  }
  return r;
}

LogBuf* LogAppend(LogBuf* log, const Limit& limit, int64_t now_ms, int64_t cost) {
  if (log == nullptr) log = Allocate(2);
  if (log->empty()) {
    log->head = log->used = 0;
    log->base_ms = now_ms;
  } else if (now_ms < log->TimeAt(log->Last())) {
    // A clock behind the newest run (a state written by another node, or restored): record at
    // the newest run's time, so runs stay ordered and offsets never go negative.
    now_ms = log->TimeAt(log->Last());
  }
  log->total += cost;
  const uint64_t ucost = static_cast<uint64_t>(cost);
  // Same ms as the newest run: add to it while the count fits its field.
  if (!log->empty() && log->TimeAt(log->Last()) == now_ms && !log->Spills(log->Last()) &&
      (log->At(log->Last()) & kCountMask) + ucost < kSpill) {
    log->At(log->Last()) += ucost;
    return log;
  }
  if (now_ms - log->base_ms > kMaxOffset) Rebase(log);
  const uint32_t words = ucost >= kSpill ? 2 : 1;
  if (log->used + words > log->cap) {
    // Live runs never need more words than LIMIT runs (plus spill words), so growth stops
    // there and a full log costs 8 bytes per run plus the header.
    const uint64_t l = static_cast<uint64_t>(limit.limit);
    const uint64_t needed = l < kSpill ? l : l + l / kSpill + 2;  // spill words only if possible
    const uint64_t max_cap = std::min<uint64_t>(needed, kMaxItems);
    if (log->used + words > max_cap) {
      // At the bound (a lowered limit or kMaxItems): fold into the newest run, moved to now.
      const uint32_t k = log->Last();
      const uint64_t offset = static_cast<uint64_t>(now_ms - log->base_ms) << kCountBits;
      const int64_t count = log->CountAt(k) + cost;
      if (log->Spills(k)) {
        log->At(k) = offset | kSpill;
        log->At(k + 1) = static_cast<uint64_t>(count);
      } else if (static_cast<uint64_t>(count) < kSpill) {
        log->At(k) = offset | static_cast<uint64_t>(count);
      } else {
        // The run cannot widen in place: it still moves to now, and the cost stays in `total`
        // only, which holds until the log empties when this run leaves (conservative:
        // under-admits, never over-admits).
        log->At(k) = offset | (log->At(k) & kCountMask);
      }
      return log;
    }
    uint64_t cap = std::max<uint64_t>(4, uint64_t{log->cap} + uint64_t{log->cap} / 2);
    cap = std::max<uint64_t>(std::min<uint64_t>(cap, max_cap), log->used + words);
    log = Grow(log, static_cast<uint32_t>(cap));
  }
  const uint64_t offset = static_cast<uint64_t>(now_ms - log->base_ms) << kCountBits;
  log->last_words = words;
  if (words == 1) {
    Push(log, offset | ucost);
  } else {
    Push(log, offset | kSpill);
    Push(log, ucost);
  }
  return log;
}

LogBuf* LogAdjust(LogBuf* log, const Limit& limit, int64_t now_ms, int64_t amount, AdjustOp op) {
  if (op == AdjustOp::kCharge) {
    const int64_t room = kMaxLogTotal - std::min(LogTotal(log), kMaxLogTotal);
    const int64_t take = std::min(amount, room);
    return take > 0 ? LogAppend(log, limit, now_ms, take) : log;
  }
  if (log == nullptr || log->empty() || amount <= 0) return log;
  // Where each run starts, oldest first (a run is one word or two), so the newest can be
  // dropped one by one.
  std::vector<uint32_t> starts;
  for (uint32_t k = 0; k < log->used; k += log->Words(k)) starts.push_back(k);
  while (amount > 0 && !starts.empty()) {
    const uint32_t k = starts.back();
    const int64_t count = log->CountAt(k);
    if (count > amount) {
      // Part of the newest run: its count shrinks in place (a spilled count stays spilled).
      if (log->Spills(k)) {
        log->At(k + 1) = static_cast<uint64_t>(count - amount);
      } else {
        log->At(k) -= static_cast<uint64_t>(amount);
      }
      log->total -= amount;
      break;
    }
    log->total -= count;
    amount -= count;
    log->used = k;
    starts.pop_back();
    if (!starts.empty()) log->last_words = log->used - starts.back();
  }
  if (log->empty()) {
    log->head = log->used = 0;
    log->total = 0;
    log->last_words = 1;
  }
  return log;
}

int64_t LogExpiry(const LogBuf* log, int64_t window_ms, int64_t now_ms) {
  if (log == nullptr || log->empty()) return now_ms;
  return Clamp64(int128{log->TimeAt(log->Last())} + window_ms);
}

int64_t LogTotal(const LogBuf* log) { return log == nullptr ? 0 : log->total; }

size_t LogBytes(const LogBuf* log) {
  return log == nullptr ? 0 : sizeof(LogBuf) + size_t{log->cap} * sizeof(uint64_t);
}

void LogFree(LogBuf* log) { StateFree(log); }

LogBuf* LogClone(const LogBuf* log) {
  if (log == nullptr) return nullptr;
  LogBuf* copy = Allocate(log->cap);
  copy->base_ms = log->base_ms;
  copy->total = log->total;
  copy->used = log->used;
  copy->last_words = log->last_words;
  for (uint32_t k = 0; k < log->used; ++k) copy->items()[k] = log->At(k);
  return copy;
}

void LogRuns(const LogBuf* log, std::vector<std::pair<int64_t, int64_t>>* out) {
  if (log == nullptr) return;
  for (uint32_t k = 0; k < log->used; k += log->Words(k)) {
    out->emplace_back(log->TimeAt(k), log->CountAt(k));
  }
}

}  // namespace rl::internal

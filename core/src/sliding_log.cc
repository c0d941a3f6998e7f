// The sliding log's run buffer: one malloc'd block, a small header followed by 8-byte runs.
#include "sliding_log.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "algorithms.h"

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

struct LogBuf {
  int64_t base_ms;    // run times are offsets from here
  int64_t total;      // sum of live counts
  uint32_t head;      // index of the oldest live run
  uint32_t size;      // one past the newest word
  uint32_t cap;       // words allocated
  uint32_t last;      // index of the newest run
  uint64_t* items() { return reinterpret_cast<uint64_t*>(this + 1); }
  const uint64_t* items() const { return reinterpret_cast<const uint64_t*>(this + 1); }

  bool empty() const { return head == size; }
  int64_t TimeAt(uint32_t i) const { return base_ms + static_cast<int64_t>(items()[i] >> kCountBits); }
  int64_t CountAt(uint32_t i) const {
    const uint64_t c = items()[i] & kCountMask;
    return c == kSpill ? static_cast<int64_t>(items()[i + 1]) : static_cast<int64_t>(c);
  }
  uint32_t Next(uint32_t i) const { return (items()[i] & kCountMask) == kSpill ? i + 2 : i + 1; }
};

namespace {

LogBuf* Allocate(uint32_t cap) {
  void* p = std::malloc(sizeof(LogBuf) + size_t{cap} * sizeof(uint64_t));
  if (p == nullptr) throw std::bad_alloc();  // allocation failure is not a request-path error
  LogBuf* log = static_cast<LogBuf*>(p);
  log->base_ms = 0;
  log->total = 0;
  log->head = log->size = log->last = 0;
  log->cap = cap;
  return log;
}

// Moves live runs to the front and rebases their offsets on the oldest run's time.
void Compact(LogBuf* log) {
  if (log->empty()) {
    log->head = log->size = log->last = 0;
    return;
  }
  const int64_t new_base = log->TimeAt(log->head);
  const uint64_t shift = static_cast<uint64_t>(new_base - log->base_ms) << kCountBits;
  uint64_t* items = log->items();
  uint32_t out = 0;
  for (uint32_t i = log->head; i < log->size;) {
    const uint32_t next = log->Next(i);
    if (i == log->last) log->last = out;
    items[out++] = items[i] - shift;
    if (next == i + 2) items[out++] = items[i + 1];
    i = next;
  }
  log->base_ms = new_base;
  log->head = 0;
  log->size = out;
}

}  // namespace

void LogPrune(LogBuf* log, int64_t window_ms, int64_t now_ms) {
  if (log == nullptr) return;
  while (!log->empty() && static_cast<int128>(now_ms) - log->TimeAt(log->head) >= window_ms) {
    log->total -= log->CountAt(log->head);
    log->head = log->Next(log->head);
  }
  if (log->empty()) log->head = log->size = log->last = log->total = 0;
}

LimitResult LogEvaluate(const LogBuf* log, const Limit& limit, int64_t now_ms, int64_t cost,
                        int64_t* expiry_ms) {
  const int64_t l = limit.limit;
  const int64_t w = limit.window_ms;
  const int64_t total = LogTotal(log);
  const int64_t newest_end =
      log == nullptr || log->empty() ? now_ms : Clamp64(int128{log->TimeAt(log->last)} + w);
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
    int64_t freed = 0;
    for (uint32_t i = log->head; i < log->size; i = log->Next(i)) {
      freed += log->CountAt(i);
      if (freed >= need) {
        r.retry_after_ms = Clamp64(int128{log->TimeAt(i)} + w - now_ms);
        break;
      }
    }
  }
  return r;
}

LogBuf* LogAppend(LogBuf* log, const Limit& limit, int64_t now_ms, int64_t cost) {
  if (log == nullptr) log = Allocate(4);
  if (log->empty()) {
    log->head = log->size = log->last = 0;
    log->base_ms = now_ms;
  }
  log->total += cost;
  // Same ms as the newest run: add to it while the count fits its field.
  if (!log->empty() && log->TimeAt(log->last) == now_ms &&
      (log->items()[log->last] & kCountMask) + static_cast<uint64_t>(cost) < kSpill) {
    log->items()[log->last] += static_cast<uint64_t>(cost);
    return log;
  }
  const uint32_t words = static_cast<uint64_t>(cost) >= kSpill ? 2 : 1;
  // Live runs never need more than LIMIT runs (plus spill words); allow 1/32 slack above that so
  // compaction (O(live)) happens at most once per cap/32 appends.
  const uint64_t needed = static_cast<uint64_t>(limit.limit) +
                          static_cast<uint64_t>(limit.limit) / kCountMask + 2;
  const uint64_t max_cap = std::min<uint64_t>(needed + needed / 32 + 4, kMaxItems);
  if (now_ms - log->base_ms > kMaxOffset) Compact(log);
  if (log->size + words > log->cap && log->head > 0 &&
      (log->head >= log->cap / 32 || log->cap >= max_cap)) {
    Compact(log);
  }
  if (log->size + words > log->cap) {
    if (log->size + words > max_cap) {
      // At the per-key bound: fold into the newest run (see kMaxItems).
      uint64_t* items = log->items();
      const uint32_t i = log->last;
      const int64_t count = log->CountAt(i) + cost;
      const uint64_t offset = static_cast<uint64_t>(now_ms - log->base_ms) << kCountBits;
      if ((items[i] & kCountMask) == kSpill) {
        items[i] = offset | kSpill;
        items[i + 1] = static_cast<uint64_t>(count);
      } else if (static_cast<uint64_t>(count) < kSpill) {
        items[i] = offset | static_cast<uint64_t>(count);
      }
      // Otherwise the run cannot widen in place: the cost stays in `total` only, which holds
      // until the log empties (conservative: under-admits, never over-admits).
      return log;
    }
    uint64_t cap = std::max<uint64_t>(4, uint64_t{log->cap} * 2);
    cap = std::min<uint64_t>(cap, max_cap);
    cap = std::max<uint64_t>(cap, log->size + words);
    void* p = std::realloc(log, sizeof(LogBuf) + cap * sizeof(uint64_t));
    if (p == nullptr) throw std::bad_alloc();
    log = static_cast<LogBuf*>(p);
    log->cap = static_cast<uint32_t>(cap);
  }
  const uint64_t offset = static_cast<uint64_t>(now_ms - log->base_ms) << kCountBits;
  log->last = log->size;
  if (words == 1) {
    log->items()[log->size++] = offset | static_cast<uint64_t>(cost);
  } else {
    log->items()[log->size++] = offset | kSpill;
    log->items()[log->size++] = static_cast<uint64_t>(cost);
  }
  return log;
}

int64_t LogExpiry(const LogBuf* log, int64_t window_ms, int64_t now_ms) {
  if (log == nullptr || log->empty()) return now_ms;
  return Clamp64(int128{log->TimeAt(log->last)} + window_ms);
}

int64_t LogTotal(const LogBuf* log) { return log == nullptr ? 0 : log->total; }

size_t LogBytes(const LogBuf* log) {
  return log == nullptr ? 0 : sizeof(LogBuf) + size_t{log->cap} * sizeof(uint64_t);
}

void LogFree(LogBuf* log) { std::free(log); }

void LogRuns(const LogBuf* log, std::vector<std::pair<int64_t, int64_t>>* out) {
  if (log == nullptr) return;
  for (uint32_t i = log->head; i < log->size; i = log->Next(i)) {
    out->emplace_back(log->TimeAt(i), log->CountAt(i));
  }
}

}  // namespace rl::internal

// The sliding log's run buffer: one malloc'd block, a 40-byte header followed by a byte ring of
// variable-length runs (the format is below), so pruning and appending are O(1) amortized and a
// request at a millisecond of its own costs 1 to 4 bytes for windows up to a day.
#include "sliding_log.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "algorithms.h"
#include "state_alloc.h"

namespace rl::internal {

namespace {

// A run is (time, count), its time stored as the ms since the previous run (the oldest run's time
// is in the header, so its own delta is never read):
//   byte 0: bit 7 = a count follows, bit 6 = more delta follows, bits 0-5 = the delta's low bits;
//   then, with bit 6, delta >> 6 as LEB128 (7 bits a byte, low first, bit 7 = another byte);
//   then, with bit 7, count - 1 as LEB128 (a run without it holds one request).
// One request 1-63 ms after the previous run costs 1 byte, within 8 s 2, 17 min 3, 37 hours 4,
// 198 days 5, 69 years 6; a run of 2 to 128 requests costs one byte more.
constexpr uint8_t kHasCount = 0x80;
constexpr uint8_t kMoreDelta = 0x40;
constexpr int kDeltaBits = 6;
constexpr uint8_t kDeltaMask = (1 << kDeltaBits) - 1;
constexpr uint32_t kMaxRunBytes = 1 + 9 + 10;  // byte 0, delta >> 6 (< 2^58), count - 1
// A single key never holds more than this many bytes (1 GiB), and never more than 8 per request
// of its limit (what 8-byte runs held before, and more than any admitted request needs: a run
// costs at most 6 bytes plus its count's); past the bound the newest run absorbs new requests and
// moves to `now`, which keeps older requests in the window longer than exact: it can only
// under-admit, never over-admit.
constexpr uint64_t kMaxBytes = uint64_t{1} << 30;
// glibc's malloc header before each block, counted in LogBytes.
constexpr size_t kMallocOverhead = 8;
// Logs at least this big shrink when they hold under a quarter of their capacity.
constexpr uint32_t kShrinkFrom = 256;

uint32_t LebBytes(uint64_t v) {
  uint32_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

uint32_t RunBytes(uint64_t delta, uint64_t count) {
  return 1 + ((delta >> kDeltaBits) != 0 ? LebBytes(delta >> kDeltaBits) : 0) +
         (count > 1 ? LebBytes(count - 1) : 0);
}

uint8_t* PutLeb(uint8_t* out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) *out++ = static_cast<uint8_t>(v | 0x80);
  *out++ = static_cast<uint8_t>(v);
  return out;
}

// Encodes a run into `out` (at least kMaxRunBytes); returns its length.
uint32_t EncodeRun(uint8_t* out, uint64_t delta, uint64_t count) {
  const uint64_t rest = delta >> kDeltaBits;
  out[0] = static_cast<uint8_t>((delta & kDeltaMask) | (rest != 0 ? kMoreDelta : 0) |
                                (count > 1 ? kHasCount : 0));
  uint8_t* p = out + 1;
  if (rest != 0) p = PutLeb(p, rest);
  if (count > 1) p = PutLeb(p, count - 1);
  return static_cast<uint32_t>(p - out);
}

// The bytes a log under `limit` may hold (see kMaxBytes).
uint64_t MaxBytes(int64_t limit) {
  return std::min<uint64_t>(kMaxBytes, static_cast<uint64_t>(limit) * 8 + 64);
}

// The capacity to allocate for at least `bytes`: a multiple of 16, so that header, ring and
// malloc header fill glibc's 16-byte-aligned chunk exactly.
uint32_t RoundCap(uint64_t bytes) {
  return static_cast<uint32_t>(std::max<uint64_t>(16, (bytes + 15) & ~uint64_t{15}));
}

struct Run {
  uint64_t delta;  // ms since the previous run (meaningless for the oldest)
  int64_t count;
  uint32_t bytes;  // encoded length
};

}  // namespace

// Live runs occupy `used` bytes of the ring starting at physical index `head` (wrapping at
// `cap`), oldest first. Offsets below are logical (0 = the oldest run's first byte).
struct LogBuf {
  int64_t first_ms;  // time of the oldest run
  int64_t last_ms;   // time of the newest run
  int64_t total;     // sum of live counts
  uint32_t head;     // physical index of the oldest run's first byte
  uint32_t used;     // bytes in use
  uint32_t cap;      // ring bytes allocated after the header
  uint32_t last;     // offset of the newest run

  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(this + 1); }
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(this + 1); }
  uint32_t Phys(uint32_t k) const {
    const uint32_t i = head + k;
    return i >= cap ? i - cap : i;
  }
  uint8_t At(uint32_t k) const { return bytes()[Phys(k)]; }
  bool empty() const { return used == 0; }

  uint64_t Leb(uint32_t* k, int shift) const {
    uint64_t v = 0;
    uint8_t b;
    do {
      b = At((*k)++);
      v |= uint64_t{b & 0x7fu} << shift;
      shift += 7;
    } while ((b & 0x80) != 0);
    return v;
  }
  Run Decode(uint32_t k) const {
    const uint32_t start = k;
    const uint8_t b0 = At(k++);
    Run r{static_cast<uint64_t>(b0 & kDeltaMask), 1, 0};
    if ((b0 & kMoreDelta) != 0) r.delta |= Leb(&k, kDeltaBits);
    if ((b0 & kHasCount) != 0) r.count = static_cast<int64_t>(Leb(&k, 0) + 1);
    r.bytes = k - start;
    return r;
  }
  // Writes a run at offset k (the ring has room) and makes it the newest.
  void Put(uint32_t k, uint64_t delta, uint64_t count) {
    uint8_t run[kMaxRunBytes];
    const uint32_t n = EncodeRun(run, delta, count);
    for (uint32_t i = 0; i < n; ++i) bytes()[Phys(k + i)] = run[i];
    last = k;
    used = k + n;
  }
  void Clear() {
    head = used = last = 0;
    total = 0;
  }
};

static_assert(sizeof(LogBuf) % 16 == 8, "RoundCap's capacities fill malloc chunks exactly");

namespace {

int64_t AddMs(int64_t t, uint64_t delta) {
  return static_cast<int64_t>(static_cast<uint64_t>(t) + delta);
}

LogBuf* AllocateLog(uint32_t cap) {
  void* p = StateAlloc(sizeof(LogBuf) + cap);
  if (p == nullptr) throw std::bad_alloc();  // allocation failure is not a request-path error
  LogBuf* log = static_cast<LogBuf*>(p);
  log->first_ms = log->last_ms = 0;
  log->Clear();
  log->cap = cap;
  return log;
}

// A copy of the live runs in a new block of `cap` (>= used) bytes, unwrapped.
LogBuf* CopyTo(const LogBuf* log, uint32_t cap) {
  LogBuf* copy = AllocateLog(cap);
  copy->first_ms = log->first_ms;
  copy->last_ms = log->last_ms;
  copy->total = log->total;
  copy->used = log->used;
  copy->last = log->last;
  const uint32_t first = std::min(log->used, log->cap - log->head);
  std::memcpy(copy->bytes(), log->bytes() + log->head, first);
  std::memcpy(copy->bytes() + first, log->bytes(), log->used - first);
  return copy;
}

LogBuf* Resize(LogBuf* log, uint32_t cap) {
  LogBuf* resized = CopyTo(log, cap);
  StateFree(log);
  return resized;
}

// Makes room for `need` bytes in a log about to hold `total_after` requests. It grows by half,
// but no further than the requests the limit still lets in need at the log's bytes per request so
// far (so a log filled by steady traffic ends with almost no slack), and by at least 1/32 (so a
// log that keeps growing at its limit reallocates rarely).
LogBuf* Reserve(LogBuf* log, uint64_t need, int64_t limit, int64_t total_after) {
  if (need <= log->cap) return log;
  const uint64_t cap = log->cap;
  uint64_t want = cap + cap / 2;
  const int64_t to_come = limit - total_after;
  if (to_come <= 0) {
    want = need;
  } else if (total_after > 0) {
    const unsigned __int128 more =
        static_cast<unsigned __int128>(to_come) * need / static_cast<uint64_t>(total_after) + 1;
    if (more < want) want = std::min<uint64_t>(want, need + static_cast<uint64_t>(more));
  }
  want = std::max(want, need + cap / 32);
  want = std::min(want, std::max(need, MaxBytes(limit)));
  return Resize(log, RoundCap(want));
}

// Adds `cost` to the newest run and moves it to `now_ms` (>= its time): a request in the newest
// run's ms, or one past the size bound.
LogBuf* AddToNewest(LogBuf* log, int64_t limit, int64_t now_ms, int64_t cost) {
  const Run r = log->Decode(log->last);
  uint64_t delta = 0;  // the oldest run's delta is never read: keep it short
  if (log->last == 0) {
    log->first_ms = now_ms;
  } else {
    delta = r.delta + (static_cast<uint64_t>(now_ms) - static_cast<uint64_t>(log->last_ms));
  }
  const uint64_t count = static_cast<uint64_t>(r.count) + static_cast<uint64_t>(cost);
  log = Reserve(log, uint64_t{log->last} + RunBytes(delta, count), limit, log->total + cost);
  log->Put(log->last, delta, count);
  log->last_ms = now_ms;
  log->total += cost;
  return log;
}

}  // namespace

void LogPrune(LogBuf* log, int64_t window_ms, int64_t now_ms) {
  if (log == nullptr) return;
  while (!log->empty() && static_cast<int128>(now_ms) - log->first_ms >= window_ms) {
    const Run r = log->Decode(0);
    log->total -= r.count;
    log->head = log->Phys(r.bytes);
    log->used -= r.bytes;
    if (log->empty()) break;
    log->last -= r.bytes;
    log->first_ms = AddMs(log->first_ms, log->Decode(0).delta);
  }
  if (log->empty()) log->Clear();
}

LimitResult LogEvaluate(const LogBuf* log, const Limit& limit, int64_t now_ms, int64_t cost,
                        int64_t* expiry_ms) {
  const int64_t l = limit.limit;
  const int64_t w = limit.window_ms;
  const int64_t total = LogTotal(log);
  const int64_t newest_end =
      log == nullptr || log->empty() ? now_ms : Clamp64(int128{log->last_ms} + w);
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
    r.retry_after_ms = std::max<int64_t>(1, newest_end - now_ms);
    int64_t freed = 0;
    int64_t t = log->first_ms;
    for (uint32_t k = 0; k < log->used;) {
      const Run run = log->Decode(k);
      if (k > 0) t = AddMs(t, run.delta);
      freed += run.count;
      if (freed >= need) {
        r.retry_after_ms = Clamp64(int128{t} + w - now_ms);
        break;
      }
      k += run.bytes;
    }
  }
  return r;
}

LogBuf* LogAppend(LogBuf* log, const Limit& limit, int64_t now_ms, int64_t cost) {
  const uint64_t ucost = static_cast<uint64_t>(cost);
  if (log == nullptr || log->empty()) {
    const uint32_t n = RunBytes(0, ucost);
    if (log == nullptr) {
      log = AllocateLog(RoundCap(n));
    } else if (log->cap >= kShrinkFrom) {
      // An emptied log starts small again (a burst long gone keeps no big ring).
      StateFree(log);
      log = AllocateLog(RoundCap(n));
    }
    log->Clear();
    log = Reserve(log, n, limit.limit, cost);
    log->first_ms = log->last_ms = now_ms;
    log->Put(0, 0, ucost);
    log->total = cost;
    return log;
  }
  // A clock behind the newest run (a state written by another node, or restored) records at the
  // newest run's time, so runs stay ordered and deltas never go negative.
  if (now_ms <= log->last_ms) return AddToNewest(log, limit.limit, log->last_ms, cost);
  const uint64_t delta = static_cast<uint64_t>(now_ms) - static_cast<uint64_t>(log->last_ms);
  const uint64_t need = uint64_t{log->used} + RunBytes(delta, ucost);
  // At the bound (a lowered limit, charges past it, or kMaxBytes): fold into the newest run.
  if (need > MaxBytes(limit.limit)) return AddToNewest(log, limit.limit, now_ms, cost);
  if (need > log->cap) {
    log = Reserve(log, need, limit.limit, log->total + cost);
  } else if (log->cap >= kShrinkFrom && need * 4 < log->cap) {
    log = Resize(log, RoundCap(need * 2));
  }
  log->Put(log->used, delta, ucost);
  log->last_ms = now_ms;
  log->total += cost;
  return log;
}

LogBuf* LogAdjust(LogBuf* log, const Limit& limit, int64_t now_ms, int64_t amount, AdjustOp op) {
  if (op == AdjustOp::kCharge) {
    const int64_t room = kMaxLogTotal - std::min(LogTotal(log), kMaxLogTotal);
    const int64_t take = std::min(amount, room);
    return take > 0 ? LogAppend(log, limit, now_ms, take) : log;
  }
  if (log == nullptr || log->empty() || amount <= 0) return log;
  if (amount >= log->total) {
    log->Clear();
    return log;
  }
  // Keep the oldest `keep` requests: the run that reaches it is cut to fit and becomes the newest
  // (its encoding can only get shorter), the newer ones go.
  const int64_t keep = log->total - amount;
  int64_t kept = 0;
  int64_t t = log->first_ms;
  for (uint32_t k = 0;;) {
    const Run r = log->Decode(k);
    if (k > 0) t = AddMs(t, r.delta);
    if (kept + r.count >= keep) {
      log->Put(k, k > 0 ? r.delta : 0, static_cast<uint64_t>(keep - kept));
      log->last_ms = t;
      log->total = keep;
      return log;
    }
    kept += r.count;
    k += r.bytes;
  }
}

int64_t LogExpiry(const LogBuf* log, int64_t window_ms, int64_t now_ms) {
  if (log == nullptr || log->empty()) return now_ms;
  return Clamp64(int128{log->last_ms} + window_ms);
}

int64_t LogTotal(const LogBuf* log) { return log == nullptr ? 0 : log->total; }

size_t LogBytes(const LogBuf* log) {
  return log == nullptr ? 0 : sizeof(LogBuf) + log->cap + kMallocOverhead;
}

void LogFree(LogBuf* log) { StateFree(log); }

LogBuf* LogClone(const LogBuf* log) {
  return log == nullptr ? nullptr : CopyTo(log, RoundCap(log->used));
}

void LogRuns(const LogBuf* log, std::vector<std::pair<int64_t, int64_t>>* out) {
  if (log == nullptr) return;
  int64_t t = log->first_ms;
  for (uint32_t k = 0; k < log->used;) {
    const Run r = log->Decode(k);
    if (k > 0) t = AddMs(t, r.delta);
    out->emplace_back(t, r.count);
    k += r.bytes;
  }
}

}  // namespace rl::internal

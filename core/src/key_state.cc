// rl::KeyState: one key's limit states in one heap block, evaluated by the same algorithms, the
// same validation and the same binding rules as the Limiter (step.h).
//
// Block layout (host byte order, accessed through memcpy so nothing needs alignment):
//   header {u16 count, u16 reserved, u32 bytes (the whole block)}
//   entries, each {u64 scope id, u64 limit id, i64 expiry ms, payload}, where the limit id is
//   window_ms << 3 | algorithm and the payload is two words (token bucket, GCRA, leaky bucket,
//   fixed window), three words (sliding window) or one pointer to a sliding-log buffer.
// A key with one token bucket is 48 bytes; entries are few per key, so lookups scan.
//
// Encoding (Encode/Decode; little-endian, independent of the block layout):
//   u8 version (1), u16 count, then per entry {u64 scope id, u8 algorithm, u64 window ms,
//   i64 expiry ms, payload}: two words {i64 a, i64 b}; three words {i64 a, i64 b, i64 c}; a log
//   {u32 runs, runs x (i64 time ms, i64 count)}, oldest first.
#include "rl/key_state.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "sliding_log.h"
#include "state_alloc.h"
#include "step.h"
#include "store.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rl {

using internal::LogBuf;
using internal::State2;
using internal::State3;
using internal::TableKind;

namespace internal {
namespace {
StateAllocator g_allocator = {&std::malloc, &std::realloc, &std::free};
}  // namespace

void* StateAlloc(size_t bytes) {
  void* p = g_allocator.alloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* StateRealloc(void* p, size_t bytes) {
  void* q = g_allocator.realloc(p, bytes);
  if (q == nullptr) throw std::bad_alloc();
  return q;
}
void StateFree(void* p) {
  if (p != nullptr) g_allocator.free(p);
}
}  // namespace internal

void SetStateAllocator(const StateAllocator& allocator) { internal::g_allocator = allocator; }

uint64_t ScopeId(std::string_view scope) {
  if (scope.empty()) return 0;
  const uint64_t h = XXH3_64bits(scope.data(), scope.size());
  return h == 0 ? 1 : h;
}

namespace {

constexpr uint8_t kEncodingVersion = 1;
constexpr size_t kHeaderBytes = 8;
constexpr size_t kEntryHead = 24;  // scope, id, expiry
// Bounds Decode enforces on a log (LogAppend's own bound is 2^27 words).
constexpr uint32_t kMaxDecodedRuns = uint32_t{1} << 26;
constexpr int64_t kMaxLogTime = int64_t{1} << 61;

uint64_t LimitId(Algorithm algorithm, int64_t window_ms) {
  return (static_cast<uint64_t>(window_ms) << 3) | static_cast<uint8_t>(algorithm);
}
Algorithm IdAlgorithm(uint64_t id) { return static_cast<Algorithm>(id & 7); }
int64_t IdWindow(uint64_t id) { return static_cast<int64_t>(id >> 3); }

size_t PayloadWords(TableKind kind) {
  switch (kind) {
    case TableKind::kTwoWord:
      return 2;
    case TableKind::kThreeWord:
      return 3;
    case TableKind::kLog:
      return 1;
  }
  return 2;
}
size_t EntryBytes(Algorithm algorithm) {
  return kEntryHead + 8 * PayloadWords(internal::TableFor(algorithm));
}

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void Store(char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// A view of the block with typed accessors; null block = no entries.
struct Block {
  char* p;

  size_t count() const { return p == nullptr ? 0 : Load<uint16_t>(p); }
  size_t bytes() const { return p == nullptr ? 0 : Load<uint32_t>(p + 4); }
  void set_count(size_t n) { Store<uint16_t>(p, static_cast<uint16_t>(n)); }
  void set_bytes(size_t n) { Store<uint32_t>(p + 4, static_cast<uint32_t>(n)); }

  // Entry access by byte offset from the block start.
  uint64_t scope(size_t off) const { return Load<uint64_t>(p + off); }
  uint64_t id(size_t off) const { return Load<uint64_t>(p + off + 8); }
  int64_t expiry(size_t off) const { return Load<int64_t>(p + off + 16); }
  void set_expiry(size_t off, int64_t v) { Store<int64_t>(p + off + 16, v); }
  int64_t word(size_t off, size_t k) const { return Load<int64_t>(p + off + kEntryHead + 8 * k); }
  void set_word(size_t off, size_t k, int64_t v) {
    Store<int64_t>(p + off + kEntryHead + 8 * k, v);
  }
  LogBuf* log(size_t off) const { return Load<LogBuf*>(p + off + kEntryHead); }
  void set_log(size_t off, LogBuf* log) { Store<LogBuf*>(p + off + kEntryHead, log); }
  size_t size_at(size_t off) const { return EntryBytes(IdAlgorithm(id(off))); }

  // Offset of the entry (scope, id), or 0 when absent (0 is the header, never an entry).
  size_t Find(uint64_t scope_id, uint64_t limit_id) const {
    const size_t end = bytes();
    for (size_t off = kHeaderBytes; off < end; off += size_at(off)) {
      if (id(off) == limit_id && scope(off) == scope_id) return off;
    }
    return 0;
  }
};

// One limit's evaluation, kept until all limits of the check have answered.
struct Pending {
  size_t off;  // 0 = no stored state
  TableKind kind;
  State3 state;  // two-word states use a and b
  LogBuf* log;   // the stored log (pruned), for kLog
  int64_t expiry_ms;
};

// Evaluates limit `limit` against the entry at `off` (0 = fresh). `prune_log`: a stored log may
// be pruned in place (Check); otherwise (Peek) an unpruned log is evaluated on a pruned copy.
LimitResult Evaluate(const Block& b, size_t off, const Limit& limit, int64_t now, int64_t cost,
                     bool prune_log, Pending* q) {
  q->off = off;
  q->kind = internal::TableFor(limit.algorithm);
  q->log = nullptr;
  switch (q->kind) {
    case TableKind::kTwoWord: {
      State2 old;
      if (off != 0) old = State2{b.word(off, 0), b.word(off, 1)};
      const internal::Step<State2> step =
          internal::TwoWordStep(off != 0 ? &old : nullptr, limit, now, cost);
      q->state = State3{step.state.a, step.state.b, 0};
      q->expiry_ms = step.expiry_ms;
      return step.result;
    }
    case TableKind::kThreeWord: {
      State3 old;
      if (off != 0) old = State3{b.word(off, 0), b.word(off, 1), b.word(off, 2)};
      const internal::Step<State3> step =
          internal::SlidingWindow(off != 0 ? &old : nullptr, limit, now, cost);
      q->state = step.state;
      q->expiry_ms = step.expiry_ms;
      return step.result;
    }
    case TableKind::kLog: {
      LogBuf* log = off != 0 ? b.log(off) : nullptr;
      if (prune_log) {
        internal::LogPrune(log, limit.window_ms, now);
        q->log = log;
        return internal::LogEvaluate(log, limit, now, cost, &q->expiry_ms);
      }
      LogBuf* copy = internal::LogClone(log);
      internal::LogPrune(copy, limit.window_ms, now);
      LimitResult r = internal::LogEvaluate(copy, limit, now, cost, &q->expiry_ms);
      internal::LogFree(copy);
      return r;
    }
  }
  return LimitResult{};
}

// Writes a pending state into the entry at `off` (which has the right size).
void WriteState(Block& b, size_t off, const Pending& q) {
  b.set_expiry(off, q.expiry_ms);
  switch (q.kind) {
    case TableKind::kTwoWord:
      b.set_word(off, 0, q.state.a);
      b.set_word(off, 1, q.state.b);
      break;
    case TableKind::kThreeWord:
      b.set_word(off, 0, q.state.a);
      b.set_word(off, 1, q.state.b);
      b.set_word(off, 2, q.state.c);
      break;
    case TableKind::kLog:
      b.set_log(off, q.log);
      break;
  }
}

// Removes the entry at `off` (freeing its log) without shrinking the allocation.
void EraseAt(Block& b, size_t off) {
  const size_t size = b.size_at(off);
  if (internal::TableFor(IdAlgorithm(b.id(off))) == TableKind::kLog) internal::LogFree(b.log(off));
  const size_t end = b.bytes();
  std::memmove(b.p + off, b.p + off + size, end - off - size);
  b.set_bytes(end - size);
  b.set_count(b.count() - 1);
}

// Byte writer/reader for the encoding (explicit little-endian).
void PutU(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool U(int bytes, uint64_t* v) {
    if (data_.size() - pos_ < static_cast<size_t>(bytes)) return false;
    uint64_t x = 0;
    for (int i = 0; i < bytes; ++i) {
      x |= uint64_t{static_cast<unsigned char>(data_[pos_ + i])} << (8 * i);
    }
    pos_ += bytes;
    *v = x;
    return true;
  }
  bool I64(int64_t* v) {
    uint64_t x;
    if (!U(8, &x)) return false;
    *v = static_cast<int64_t>(x);
    return true;
  }
  bool done() const { return pos_ == data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

absl::Status Corrupt(std::string_view what) {
  return absl::InvalidArgumentError(std::string("invalid rate-limit state: ").append(what));
}

}  // namespace

KeyState::~KeyState() {
  Block b{static_cast<char*>(block_)};
  if (b.p == nullptr) return;
  for (size_t off = kHeaderBytes; off < b.bytes(); off += b.size_at(off)) {
    if (internal::TableFor(IdAlgorithm(b.id(off))) == TableKind::kLog) {
      internal::LogFree(b.log(off));
    }
  }
  internal::StateFree(b.p);
}

KeyState::KeyState(KeyState&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}

KeyState& KeyState::operator=(KeyState&& other) noexcept {
  if (this != &other) {
    KeyState old(std::move(*this));
    block_ = std::exchange(other.block_, nullptr);
  }
  return *this;
}

size_t KeyState::size() const { return Block{static_cast<char*>(block_)}.count(); }

int64_t KeyState::ExpiryMs() const {
  const Block b{static_cast<char*>(block_)};
  int64_t latest = INT64_MIN;
  for (size_t off = kHeaderBytes; off < b.bytes(); off += b.size_at(off)) {
    latest = std::max(latest, b.expiry(off));
  }
  return latest;
}

size_t KeyState::MemoryBytes() const {
  const Block b{static_cast<char*>(block_)};
  size_t bytes = b.bytes();
  for (size_t off = kHeaderBytes; off < b.bytes(); off += b.size_at(off)) {
    if (internal::TableFor(IdAlgorithm(b.id(off))) == TableKind::kLog) {
      bytes += internal::LogBytes(b.log(off));
    }
  }
  return bytes;
}

absl::StatusOr<Decision> KeyState::Peek(std::string_view scope, absl::Span<const Limit> limits,
                                        int64_t cost, int64_t now_ms) const {
  absl::StatusOr<Decision> out(absl::in_place);
  if (ABSL_PREDICT_FALSE(!internal::CheckValid(limits, cost))) {
    out = internal::ValidateCheck(limits, cost);
    return out;
  }
  const Block b{static_cast<char*>(block_)};
  const uint64_t sid = ScopeId(scope);
  Pending q;
  for (size_t i = 0; i < limits.size(); ++i) {
    const size_t off = b.Find(sid, LimitId(limits[i].algorithm, limits[i].window_ms));
    out->limits[i] = Evaluate(b, off, limits[i], now_ms, cost, /*prune_log=*/false, &q);
  }
  internal::MakeDecision(limits.size(), *out);
  return out;
}

absl::StatusOr<Decision> KeyState::Check(std::string_view scope, absl::Span<const Limit> limits,
                                         int64_t cost, int64_t now_ms, bool* changed) {
  *changed = false;
  absl::StatusOr<Decision> out(absl::in_place);
  if (ABSL_PREDICT_FALSE(!internal::CheckValid(limits, cost))) {
    out = internal::ValidateCheck(limits, cost);
    return out;
  }
  Block b{static_cast<char*>(block_)};
  const uint64_t sid = ScopeId(scope);
  const size_t n = limits.size();
  Pending pending[kMaxLimitsPerCheck];
  bool allowed = true;
  size_t added = 0, added_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t off = b.Find(sid, LimitId(limits[i].algorithm, limits[i].window_ms));
    out->limits[i] = Evaluate(b, off, limits[i], now_ms, cost, /*prune_log=*/true, &pending[i]);
    allowed = allowed && out->limits[i].allowed;
    if (off == 0) {
      ++added;
      added_bytes += EntryBytes(limits[i].algorithm);
    }
  }

  if (allowed && cost > 0) {
    // Drop what is fresh-equivalent first: it frees room and keeps the block small.
    if (Prune(now_ms) > 0) {
      // Offsets moved; find the surviving entries again (pruned ones count as fresh, and their
      // evaluation was of a state equivalent to fresh, so it stands).
      b.p = static_cast<char*>(block_);
      for (size_t i = 0; i < n; ++i) {
        if (pending[i].off == 0) continue;
        pending[i].off = b.Find(sid, LimitId(limits[i].algorithm, limits[i].window_ms));
        if (pending[i].off == 0) {
          ++added;
          added_bytes += EntryBytes(limits[i].algorithm);
          if (pending[i].kind == TableKind::kLog) pending[i].log = nullptr;  // freed by Prune
        }
      }
    }
    if (b.count() + added > kMaxStates) {
      out = absl::ResourceExhaustedError(
          absl::StrCat("too many rate-limit states under one key (at most ", kMaxStates, ")"));
      return out;
    }
    // Grow once for every new entry, then write.
    if (added > 0) {
      const size_t old_bytes = b.p == nullptr ? kHeaderBytes : b.bytes();
      const size_t new_bytes = old_bytes + added_bytes;
      char* p = static_cast<char*>(internal::StateRealloc(b.p, new_bytes));
      if (b.p == nullptr) {
        Store<uint16_t>(p, 0);
        Store<uint16_t>(p + 2, 0);
        Store<uint32_t>(p + 4, static_cast<uint32_t>(kHeaderBytes));
      }
      b.p = p;
      block_ = p;
    }
    size_t tail = b.bytes();
    for (size_t i = 0; i < n; ++i) {
      Pending& q = pending[i];
      if (q.kind == TableKind::kLog) q.log = internal::LogAppend(q.log, limits[i], now_ms, cost);
      if (q.off == 0) {
        q.off = tail;
        Store<uint64_t>(b.p + tail, sid);
        Store<uint64_t>(b.p + tail + 8, LimitId(limits[i].algorithm, limits[i].window_ms));
        tail += EntryBytes(limits[i].algorithm);
        b.set_bytes(tail);
        b.set_count(b.count() + 1);
      }
      WriteState(b, q.off, q);
    }
    *changed = true;
  } else {
    // Nothing consumed. A stored state keeps its words; only an expiry that a changed limit
    // moved is rewritten (both times in the past mean the same: fresh).
    for (size_t i = 0; i < n; ++i) {
      const Pending& q = pending[i];
      if (q.off == 0) continue;
      const int64_t old = b.expiry(q.off);
      if (old != q.expiry_ms && (old > now_ms || q.expiry_ms > now_ms)) {
        b.set_expiry(q.off, q.expiry_ms);
        *changed = true;
      }
    }
  }
  internal::MakeDecision(n, *out);
  return out;
}

size_t KeyState::Reset(std::string_view scope, absl::Span<const Limit> limits) {
  Block b{static_cast<char*>(block_)};
  const uint64_t sid = ScopeId(scope);
  size_t removed = 0;
  for (const Limit& limit : limits) {
    const size_t off = b.Find(sid, LimitId(limit.algorithm, limit.window_ms));
    if (off == 0) continue;
    EraseAt(b, off);
    ++removed;
  }
  if (removed > 0 && b.count() == 0) {
    internal::StateFree(b.p);
    block_ = nullptr;
  }
  return removed;
}

size_t KeyState::Prune(int64_t now_ms) {
  Block b{static_cast<char*>(block_)};
  size_t removed = 0;
  for (size_t off = kHeaderBytes; off < b.bytes();) {
    if (b.expiry(off) <= now_ms) {
      EraseAt(b, off);
      ++removed;
    } else {
      off += b.size_at(off);
    }
  }
  if (removed > 0 && b.count() == 0) {
    internal::StateFree(b.p);
    block_ = nullptr;
  }
  return removed;
}

void KeyState::Encode(std::string* out) const {
  const Block b{static_cast<char*>(block_)};
  PutU(out, kEncodingVersion, 1);
  PutU(out, b.count(), 2);
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (size_t off = kHeaderBytes; off < b.bytes(); off += b.size_at(off)) {
    const Algorithm algorithm = IdAlgorithm(b.id(off));
    PutU(out, b.scope(off), 8);
    PutU(out, static_cast<uint8_t>(algorithm), 1);
    PutU(out, static_cast<uint64_t>(IdWindow(b.id(off))), 8);
    PutU(out, static_cast<uint64_t>(b.expiry(off)), 8);
    const TableKind kind = internal::TableFor(algorithm);
    if (kind == TableKind::kLog) {
      runs.clear();
      internal::LogRuns(b.log(off), &runs);
      PutU(out, runs.size(), 4);
      for (const auto& [t, count] : runs) {
        PutU(out, static_cast<uint64_t>(t), 8);
        PutU(out, static_cast<uint64_t>(count), 8);
      }
    } else {
      for (size_t k = 0; k < PayloadWords(kind); ++k) {
        PutU(out, static_cast<uint64_t>(b.word(off, k)), 8);
      }
    }
  }
}

absl::StatusOr<KeyState> KeyState::Decode(std::string_view data) {
  Reader r(data);
  uint64_t version = 0, count = 0;
  if (!r.U(1, &version) || !r.U(2, &count)) return Corrupt("truncated header");
  if (version != kEncodingVersion) {
    return Corrupt(absl::StrCat("unsupported encoding version ", version));
  }
  if (count > kMaxStates) return Corrupt("too many states");
  KeyState state;
  if (count == 0) {
    if (!r.done()) return Corrupt("trailing bytes");
    return state;
  }
  // First pass into a vector of parsed entries, so nothing is allocated for hostile sizes
  // beyond what the input itself holds.
  struct Parsed {
    uint64_t scope;
    Algorithm algorithm;
    int64_t window;
    int64_t expiry;
    int64_t words[3];
    std::vector<std::pair<int64_t, int64_t>> runs;
  };
  std::vector<Parsed> entries;
  entries.reserve(count);
  size_t bytes = kHeaderBytes;
  for (uint64_t i = 0; i < count; ++i) {
    Parsed e{};
    uint64_t algorithm = 0, window = 0;
    if (!r.U(8, &e.scope) || !r.U(1, &algorithm) || !r.U(8, &window) || !r.I64(&e.expiry)) {
      return Corrupt("truncated entry");
    }
    if (algorithm > static_cast<uint8_t>(Algorithm::kLeakyBucket)) {
      return Corrupt("unknown algorithm");
    }
    if (window < 1 || window > static_cast<uint64_t>(kMaxWindowMs)) return Corrupt("bad window");
    e.algorithm = static_cast<Algorithm>(algorithm);
    e.window = static_cast<int64_t>(window);
    for (const Parsed& other : entries) {
      if (other.scope == e.scope && other.algorithm == e.algorithm && other.window == e.window) {
        return Corrupt("duplicate state");
      }
    }
    const TableKind kind = internal::TableFor(e.algorithm);
    if (kind == TableKind::kLog) {
      uint64_t runs = 0;
      if (!r.U(4, &runs)) return Corrupt("truncated log");
      if (runs > kMaxDecodedRuns) return Corrupt("log too long");
      int64_t last = INT64_MIN, total = 0;
      for (uint64_t k = 0; k < runs; ++k) {
        int64_t t = 0, c = 0;
        if (!r.I64(&t) || !r.I64(&c)) return Corrupt("truncated log");
        if (t < -kMaxLogTime || t > kMaxLogTime || t < last) return Corrupt("bad log time");
        if (c < 1 || c > kMaxLimit || total > kMaxLimit * 16) return Corrupt("bad log count");
        total += c;
        last = t;
        e.runs.emplace_back(t, c);
      }
    } else {
      for (size_t k = 0; k < PayloadWords(kind); ++k) {
        if (!r.I64(&e.words[k])) return Corrupt("truncated state");
      }
    }
    bytes += EntryBytes(e.algorithm);
    entries.push_back(std::move(e));
  }
  if (!r.done()) return Corrupt("trailing bytes");

  char* p = static_cast<char*>(internal::StateAlloc(bytes));
  Block b{p};
  Store<uint16_t>(p, 0);
  Store<uint16_t>(p + 2, 0);
  Store<uint32_t>(p + 4, static_cast<uint32_t>(kHeaderBytes));
  state.block_ = p;  // owned from here on, so a throwing LogAppend leaks nothing
  size_t off = kHeaderBytes;
  for (const Parsed& e : entries) {
    Store<uint64_t>(p + off, e.scope);
    Store<uint64_t>(p + off + 8, LimitId(e.algorithm, e.window));
    b.set_expiry(off, e.expiry);
    const TableKind kind = internal::TableFor(e.algorithm);
    if (kind == TableKind::kLog) {
      b.set_log(off, nullptr);
      b.set_bytes(off + EntryBytes(e.algorithm));
      b.set_count(b.count() + 1);
      int64_t total = 0;
      for (const auto& run : e.runs) total += run.second;
      const Limit sizing{Algorithm::kSlidingLog, std::clamp<int64_t>(total, 1, kMaxLimit), 1};
      LogBuf* log = nullptr;
      for (const auto& [t, c] : e.runs) {
        log = internal::LogAppend(log, sizing, t, c);
        b.set_log(off, log);
      }
    } else {
      for (size_t k = 0; k < PayloadWords(kind); ++k) b.set_word(off, k, e.words[k]);
      b.set_bytes(off + EntryBytes(e.algorithm));
      b.set_count(b.count() + 1);
    }
    off += EntryBytes(e.algorithm);
  }
  return state;
}

}  // namespace rl

// rl::KeyState: one key's limit states in one heap block (key_state_block.h), evaluated by the
// same algorithms, the same validation, the same penalty blocks and leases and the same binding
// rules as the Limiter (step.h). The encoding is in key_state_codec.cc.
#include "rl/key_state.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "carry.h"
#include "key_state_block.h"
#include "leases.h"
#include "sliding_log.h"
#include "state_alloc.h"
#include "step.h"
#include "store.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rl {

using internal::AdjustOp;
using internal::LeaseBuf;
using internal::LogBuf;
using internal::StateShape;
using internal::ThreeWordState;
using internal::TwoWordState;
using namespace internal::key_state;  // NOLINT: the block layout's small helpers

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

// One limit's evaluation, kept until all limits of the call have answered.
struct Pending {
  size_t off;  // 0 = no stored state
  StateShape kind;
  TwoWordState two;      // for kTwoWord
  ThreeWordState three;  // for kThreeWord
  LogBuf* log;           // the stored log (pruned), for kLog
  LeaseBuf* leases;      // the stored lease set, for kLeases
  int64_t expiry_ms;
  bool pruned;  // runs left the stored log's window and were dropped from it (a change)
};

// Evaluates `limit` against the entry at `off` (0 = fresh). `prune_log`: a stored log may be
// pruned in place (a write); otherwise (Peek) an unpruned log is evaluated on a pruned copy.
LimitResult Evaluate(const Block& b, size_t off, const Limit& limit, int64_t now, int64_t cost,
                     bool prune_log, Pending* q) {
  q->off = off;
  q->kind = internal::ShapeOf(limit.algorithm);
  q->log = nullptr;
  q->leases = nullptr;
  q->pruned = false;
  switch (q->kind) {
    case StateShape::kTwoWord: {
      TwoWordState old;
      if (off != 0) old = TwoWordState{b.word(off, 0), b.word(off, 1)};
      const internal::Step<TwoWordState> step =
          internal::TwoWordStep(off != 0 ? &old : nullptr, limit, now, cost);
      q->two = step.state;
      q->expiry_ms = step.expiry_ms;
      return step.result;
    }
    case StateShape::kThreeWord: {
      ThreeWordState old;
      if (off != 0) old = ThreeWordState{b.word(off, 0), b.word(off, 1), b.word(off, 2)};
      const internal::Step<ThreeWordState> step =
          internal::ThreeWordStep(off != 0 ? &old : nullptr, limit, now, cost);
      q->three = step.state;
      q->expiry_ms = step.expiry_ms;
      return step.result;
    }
    case StateShape::kLog: {
      LogBuf* log = off != 0 ? b.log(off) : nullptr;
      if (prune_log) {
        const int64_t before = internal::LogTotal(log);
        internal::LogPrune(log, limit.window_ms, now);
        q->pruned = internal::LogTotal(log) != before;
        q->log = log;
        return internal::LogEvaluate(log, limit, now, cost, &q->expiry_ms);
      }
      LogBuf* copy = internal::LogClone(log);
      internal::LogPrune(copy, limit.window_ms, now);
      LimitResult r = internal::LogEvaluate(copy, limit, now, cost, &q->expiry_ms);
      internal::LogFree(copy);
      return r;
    }
    case StateShape::kLeases:
      q->leases = off != 0 ? b.leases(off) : nullptr;
      return internal::LeaseEvaluate(q->leases, limit, now, &q->expiry_ms);
  }
  return LimitResult{};
}

// Writes a pending state into the entry at `off` (which has the right size).
void WriteState(Block& b, size_t off, const Pending& q) {
  b.set_expiry(off, q.expiry_ms);
  switch (q.kind) {
    case StateShape::kTwoWord:
      b.set_word(off, 0, q.two.time);
      b.set_word(off, 1, q.two.word);
      break;
    case StateShape::kThreeWord:
      b.set_word(off, 0, q.three.time);
      b.set_word(off, 1, q.three.previous);
      b.set_word(off, 2, q.three.current);
      break;
    case StateShape::kLog:
      b.set_log(off, q.log);
      break;
    case StateShape::kLeases:
      b.set_leases(off, q.leases);
      break;
  }
}

// Removes the entry at `off` (freeing its log or leases) without shrinking the allocation.
void EraseAt(Block& b, size_t off) {
  const size_t size = b.size_at(off);
  b.FreePayload(off);
  const size_t end = b.bytes();
  std::memmove(b.p + off, b.p + off + size, end - off - size);
  b.set_bytes(end - size);
  b.set_count(b.count() - 1);
}

// Makes room for `extra` more bytes of entries; the block may move (offsets stay valid).
void Reserve(void*& block, Block& b, size_t extra) {
  if (extra == 0) return;
  const size_t old_bytes = b.p == nullptr ? kHeaderBytes : b.bytes();
  char* p = static_cast<char*>(internal::StateRealloc(b.p, old_bytes + extra));
  if (b.p == nullptr) {
    Store<uint16_t>(p, 0);
    Store<uint16_t>(p + 2, 0);
    Store<uint32_t>(p + 4, static_cast<uint32_t>(kHeaderBytes));
  }
  b.p = p;
  block = p;
}

// Appends an entry header (room reserved); returns its offset. The caller writes the payload.
size_t Append(Block& b, uint64_t scope, uint64_t id, int64_t expiry) {
  const size_t off = Load<uint32_t>(b.p + 4);  // b.bytes() without its null test: room is reserved
  Store<uint64_t>(b.p + off, scope);
  Store<uint64_t>(b.p + off + 8, id);
  b.set_expiry(off, expiry);
  b.set_bytes(off + EntryBytes(id));
  b.set_count(b.count() + 1);
  return off;
}

// When the running block of state (scope, id) ends; `now` when none runs.
int64_t BlockedUntil(const Block& b, uint64_t sid, uint64_t id, int64_t now) {
  const size_t off = b.Find(sid, id | kBlockBit);
  return off != 0 && b.expiry(off) > now ? b.expiry(off) : now;
}

// Stores (or moves) the block of state (scope, id) to end at `until`; false when the key already
// holds kMaxStates entries (the block then goes unrecorded).
// Out of line: cold, and inlined into Run it tripped a false -Wstringop-overflow.
ABSL_ATTRIBUTE_NOINLINE bool SetBlock(void*& block, uint64_t sid, uint64_t id, int64_t until) {
  Block b{static_cast<char*>(block)};
  if (const size_t off = b.Find(sid, id | kBlockBit); off != 0) {
    b.set_expiry(off, until);
    return true;
  }
  if (b.count() + 1 > KeyState::kMaxStates) return false;
  Reserve(block, b, kEntryHead);
  Append(b, sid, id | kBlockBit, until);
  return true;
}

// Penalty blocks of a call (see step.h): a running block overrides its limit's result; when the
// call is denied and has a cost, each limit with BLOCK that denied it on its own starts one,
// which its result shows at once. Returns the limits whose block starts (bit i), for the caller
// to store with SetBlock (a peek does not).
uint32_t ApplyBlocks(const Block& b, uint64_t sid, absl::Span<const Limit> limits,
                     LimitResult* results, int64_t now, int64_t cost) {
  uint32_t blocked = 0;
  bool allowed = true;
  for (size_t i = 0; i < limits.size(); ++i) {
    if (limits[i].block_ms > 0) {
      const int64_t until = BlockedUntil(b, sid, StateId(limits[i]), now);
      if (until > now) {
        internal::ApplyBlock(results[i], until, now);
        blocked |= 1u << i;
      }
    }
    allowed = allowed && results[i].allowed;
  }
  uint32_t starting = 0;
  if (allowed || cost == 0) return starting;
  for (size_t i = 0; i < limits.size(); ++i) {
    if (((blocked >> i) & 1) || !internal::StartsBlock(limits[i], results[i])) continue;
    internal::ApplyBlock(results[i], internal::BlockUntil(limits[i], now), now);
    starting |= 1u << i;
  }
  return starting;
}

bool HasBlock(absl::Span<const Limit> limits) {
  for (const Limit& limit : limits) {
    if (limit.block_ms > 0) return true;
  }
  return false;
}

enum class Op : uint8_t { kCheck, kAcquire };

// Limiter::Impl::Run over one key's block: a check, or an acquire (which adds lease `nonce`; 0
// only in a replay of an acquire that took no lease, which then must not take one).
// `*changed` is set whenever the stored bytes differ afterwards, even with an error or a denial
// (runs pruned from a log, entries dropped as fresh): rl.so replicates the operation itself, so a
// replica replaying it must reach the very same bytes.
absl::StatusOr<Decision> Run(void*& block, Op op, std::string_view scope,
                             absl::Span<const Limit> limits, int64_t cost, int64_t now_ms,
                             uint64_t nonce, bool* leased, bool* changed) {
  *changed = false;
  absl::StatusOr<Decision> out(absl::in_place, kUnfilledResults);
  if (op == Op::kAcquire || ABSL_PREDICT_FALSE(!internal::CheckValid(limits, cost))) {
    absl::Status s = op == Op::kCheck ? internal::ValidateCheck(limits, cost)
                                      : internal::ValidateAcquire(limits, cost);
    if (!s.ok()) {
      out = std::move(s);
      return out;
    }
  }
  Block b{static_cast<char*>(block)};
  const uint64_t sid = ScopeId(scope);
  const size_t n = limits.size();
  Pending pending[kMaxLimitsPerCheck];
  for (size_t i = 0; i < n; ++i) {
    const size_t off = b.Find(sid, StateId(limits[i]));
    out->limits[i] = Evaluate(b, off, limits[i], now_ms, cost, /*prune_log=*/true, &pending[i]);
    *changed = *changed || pending[i].pruned;
  }
  uint32_t starting = 0;  // bit i: limit i starts a penalty block
  // An acquire of cost 0 takes its lease but consumes nothing from its rate limits.
  auto writes = [&](const Pending& q) {
    return op != Op::kAcquire || cost > 0 || q.kind == StateShape::kLeases;
  };
  if (HasBlock(limits)) starting = ApplyBlocks(b, sid, limits, out->limits.data(), now_ms, cost);
  internal::MakeDecision(n, *out);
  if (op == Op::kAcquire) internal::MarkLeases(limits, *out);

  if (out->allowed && (cost > 0 || op == Op::kAcquire)) {
    size_t added = 0, added_bytes = 0;
    for (size_t i = 0; i < n; ++i) {
      if (pending[i].off == 0 && writes(pending[i])) {
        ++added;
        added_bytes += EntryBytes(StateId(limits[i]));
      }
    }
    // Drop what is fresh-equivalent first: it frees room and keeps the block small.
    {
      size_t removed = 0;
      for (size_t off = kHeaderBytes; off < b.bytes();) {
        if (b.expiry(off) <= now_ms) {
          EraseAt(b, off);
          ++removed;
        } else {
          off += b.size_at(off);
        }
      }
      if (removed > 0) {
        *changed = true;  // even if the bound below refuses the call
        // Offsets moved; find the surviving entries again (pruned ones count as fresh, and their
        // evaluation was of a state equivalent to fresh, so it stands).
        for (size_t i = 0; i < n; ++i) {
          if (pending[i].off == 0) continue;
          pending[i].off = b.Find(sid, StateId(limits[i]));
          if (pending[i].off == 0) {
            if (writes(pending[i])) {
              ++added;
              added_bytes += EntryBytes(StateId(limits[i]));
            }
            pending[i].log = nullptr;     // freed with the entry
            pending[i].leases = nullptr;  // likewise
          }
        }
      }
    }
    if (b.count() + added > KeyState::kMaxStates) {
      if (b.count() == 0) {
        internal::StateFree(b.p);
        block = nullptr;
      }
      out = absl::ResourceExhaustedError(absl::StrCat(
          "too many rate-limit states under one key (at most ", KeyState::kMaxStates, ")"));
      return out;
    }
    // Past every refusal the original call could meet (so a replay of a refused acquire drops
    // what it dropped): a replay of an acquire that took no lease must not take one.
    if (op == Op::kAcquire && nonce == 0) {
      for (size_t i = 0; i < n; ++i) {
        if (pending[i].kind == StateShape::kLeases) {
          out = absl::FailedPreconditionError("a replayed acquire without a lease id would lease");
          return out;
        }
      }
    }
    // Grow once for every new entry, then write.
    Reserve(block, b, added_bytes);
    for (size_t i = 0; i < n; ++i) {
      Pending& q = pending[i];
      if (!writes(q)) continue;
      if (q.kind == StateShape::kLog) q.log = internal::LogAppend(q.log, limits[i], now_ms, cost);
      if (q.kind == StateShape::kLeases) {
        const int64_t lease_end = internal::Clamp64(internal::int128{now_ms} + limits[i].window_ms);
        q.leases = internal::LeaseAdd(q.leases, nonce, lease_end, now_ms);
        q.expiry_ms = std::max(q.expiry_ms, lease_end);
        *leased = true;
      }
      if (q.off == 0) q.off = Append(b, sid, StateId(limits[i]), q.expiry_ms);
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
    // Blocks that start are stored last: a new entry may move the block of memory.
    for (size_t i = 0; i < n; ++i) {
      if ((starting >> i) & 1) {
        *changed |=
            SetBlock(block, sid, StateId(limits[i]), internal::BlockUntil(limits[i], now_ms));
      }
    }
  }
  return out;
}

}  // namespace

KeyState::~KeyState() {
  Block b{static_cast<char*>(block_)};
  if (b.p == nullptr) return;
  for (size_t off = kHeaderBytes; off < b.bytes(); off += b.size_at(off)) b.FreePayload(off);
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
    if (b.has_log(off)) bytes += internal::LogBytes(b.log(off));
    if (b.has_leases(off)) bytes += internal::LeaseBytes(b.leases(off));
  }
  return bytes;
}

absl::StatusOr<Decision> KeyState::Peek(std::string_view scope, absl::Span<const Limit> limits,
                                        int64_t cost, int64_t now_ms) const {
  absl::StatusOr<Decision> out(absl::in_place, kUnfilledResults);
  if (ABSL_PREDICT_FALSE(!internal::CheckValid(limits, cost))) {
    absl::Status s = internal::ValidatePeek(limits, cost);
    if (!s.ok()) {
      out = std::move(s);
      return out;
    }
  }
  const Block b{static_cast<char*>(block_)};
  const uint64_t sid = ScopeId(scope);
  Pending q;
  for (size_t i = 0; i < limits.size(); ++i) {
    const size_t off = b.Find(sid, StateId(limits[i]));
    out->limits[i] = Evaluate(b, off, limits[i], now_ms, cost, /*prune_log=*/false, &q);
  }
  // The blocks a check would start are shown, not stored.
  if (HasBlock(limits)) (void)ApplyBlocks(b, sid, limits, out->limits.data(), now_ms, cost);
  internal::MakeDecision(limits.size(), *out);
  internal::MarkLeases(limits, *out);
  return out;
}

absl::StatusOr<Decision> KeyState::Check(std::string_view scope, absl::Span<const Limit> limits,
                                         int64_t cost, int64_t now_ms, bool* changed) {
  bool leased = false;
  return Run(block_, Op::kCheck, scope, limits, cost, now_ms, 0, &leased, changed);
}

absl::StatusOr<Decision> KeyState::Acquire(std::string_view scope, std::string_view key,
                                           absl::Span<const Limit> limits, int64_t cost,
                                           int64_t now_ms, std::string* lease_id, bool* changed) {
  lease_id->clear();
  const uint64_t nonce = internal::NewLeaseNonce();
  bool leased = false;
  absl::StatusOr<Decision> d =
      Run(block_, Op::kAcquire, scope, limits, cost, now_ms, nonce, &leased, changed);
  if (d.ok() && leased) *lease_id = internal::FormatLeaseId(ScopeId(scope), key, nonce);
  return d;
}

absl::StatusOr<Decision> KeyState::AcquireAs(std::string_view scope, std::string_view key,
                                             absl::Span<const Limit> limits, int64_t cost,
                                             int64_t now_ms, std::string_view lease_id,
                                             bool* changed) {
  *changed = false;
  uint64_t nonce = 0;
  if (!lease_id.empty()) {
    absl::StatusOr<internal::LeaseId> id = internal::ParseLeaseId(lease_id, key);
    if (!id.ok()) return id.status();
    if (id->scope_id != ScopeId(scope)) {
      return absl::InvalidArgumentError("lease id was issued for another policy");
    }
    nonce = id->nonce;
  }
  bool leased = false;
  return Run(block_, Op::kAcquire, scope, limits, cost, now_ms, nonce, &leased, changed);
}

absl::StatusOr<bool> KeyState::Release(std::string_view key, std::string_view lease_id,
                                       int64_t now_ms, bool* changed) {
  *changed = false;
  absl::StatusOr<internal::LeaseId> id = internal::ParseLeaseId(lease_id, key);
  if (!id.ok()) return id.status();
  Block b{static_cast<char*>(block_)};
  const size_t off = b.Find(id->scope_id, LimitId(Algorithm::kConcurrency, 0));
  if (off == 0) return false;
  LeaseBuf* leases = b.leases(off);
  const size_t before = internal::LeaseCount(leases);
  const bool held = internal::LeaseRemove(leases, id->nonce, now_ms);
  *changed = internal::LeaseCount(leases) != before;
  if (internal::LeaseCount(leases) == 0) {
    EraseAt(b, off);
    *changed = true;  // also a set that held none (only a decoded state can)
    if (b.count() == 0) {
      internal::StateFree(b.p);
      block_ = nullptr;
    }
  } else if (*changed) {
    b.set_expiry(off, internal::LeaseExpiry(leases, now_ms));
  }
  return held;
}

absl::StatusOr<Decision> KeyState::Adjust(std::string_view scope, absl::Span<const Limit> limits,
                                          int64_t amount, int64_t now_ms, bool refund,
                                          bool* changed) {
  *changed = false;
  const AdjustOp op = refund ? AdjustOp::kRefund : AdjustOp::kCharge;
  absl::StatusOr<Decision> out(absl::in_place);
  if (absl::Status s = internal::ValidateAdjust(limits, amount, op); !s.ok()) {
    out = std::move(s);
    return out;
  }
  const uint64_t sid = ScopeId(scope);
  const size_t n = limits.size();
  // New entries are made only by a charge; check the bound before anything changes (after
  // dropping fresh entries, as a check does).
  if (op == AdjustOp::kCharge && amount > 0) {
    size_t added = 0;
    Block b{static_cast<char*>(block_)};
    for (size_t i = 0; i < n; ++i) added += b.Find(sid, StateId(limits[i])) == 0;
    if (added > 0 && b.count() + added > kMaxStates) {
      *changed = Prune(now_ms) > 0;
      b.p = static_cast<char*>(block_);
      added = 0;
      for (size_t i = 0; i < n; ++i) added += b.Find(sid, StateId(limits[i])) == 0;
      if (b.count() + added > kMaxStates) {
        out = absl::ResourceExhaustedError(
            absl::StrCat("too many rate-limit states under one key (at most ", kMaxStates, ")"));
        return out;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const Limit& limit = limits[i];
    Block b{static_cast<char*>(block_)};
    const uint64_t id = StateId(limit);
    size_t off = b.Find(sid, id);
    LimitResult& r = out->limits[i];
    int64_t expiry_ms = now_ms;
    Pending q{};
    q.off = off;
    q.kind = internal::ShapeOf(limit.algorithm);
    bool write = false;
    switch (q.kind) {
      case StateShape::kTwoWord: {
        TwoWordState old;
        if (off != 0) old = TwoWordState{b.word(off, 0), b.word(off, 1)};
        const internal::Step<TwoWordState> step =
            internal::TwoWordAdjust(off != 0 ? &old : nullptr, limit, now_ms, amount, op);
        r = step.result;
        expiry_ms = step.expiry_ms;
        q.two = step.state;
        write = step.changed;
        break;
      }
      case StateShape::kThreeWord: {
        ThreeWordState old;
        if (off != 0) old = ThreeWordState{b.word(off, 0), b.word(off, 1), b.word(off, 2)};
        const internal::Step<ThreeWordState> step =
            internal::ThreeWordAdjust(off != 0 ? &old : nullptr, limit, now_ms, amount, op);
        r = step.result;
        expiry_ms = step.expiry_ms;
        q.three = step.state;
        write = step.changed;
        break;
      }
      case StateShape::kLog: {
        LogBuf* log = off != 0 ? b.log(off) : nullptr;
        const int64_t before = internal::LogTotal(log);
        internal::LogPrune(log, limit.window_ms, now_ms);
        // Dropping runs that left the window changes the stored bytes even when nothing is
        // written (a zero amount): a replay must drop them too.
        *changed = *changed || internal::LogTotal(log) != before;
        log = internal::LogAdjust(log, limit, now_ms, amount, op);
        if (off != 0) b.set_log(off, log);  // owned by the entry from here on
        r = internal::LogEvaluate(log, limit, now_ms, 0, &expiry_ms);
        q.log = log;
        write = amount > 0 && log != nullptr;
        break;
      }
      case StateShape::kLeases:
        break;  // refused by ValidateAdjust
    }
    q.expiry_ms = expiry_ms;
    if (write) {
      if (expiry_ms <= now_ms) {
        // Equivalent to fresh: no entry (a new log made for nothing is freed).
        if (off != 0) {
          EraseAt(b, off);
        } else if (q.kind == StateShape::kLog) {
          internal::LogFree(q.log);
        }
      } else {
        if (off == 0) {
          Reserve(block_, b, EntryBytes(id));
          off = Append(b, sid, id, expiry_ms);
        }
        WriteState(b, off, q);
      }
      *changed = true;
    }
    // A refund or charge neither starts nor lifts a block, but its answer shows one.
    if (limit.block_ms > 0) {
      const int64_t until = BlockedUntil(Block{static_cast<char*>(block_)}, sid, id, now_ms);
      if (until > now_ms) internal::ApplyBlock(r, until, now_ms);
    }
  }
  Block b{static_cast<char*>(block_)};
  if (b.p != nullptr && b.count() == 0) {
    internal::StateFree(b.p);
    block_ = nullptr;
  }
  internal::MakeDecision(n, *out);
  return out;
}

absl::StatusOr<Decision> KeyState::Refund(std::string_view scope, absl::Span<const Limit> limits,
                                          int64_t amount, int64_t now_ms, bool* changed) {
  return Adjust(scope, limits, amount, now_ms, /*refund=*/true, changed);
}

absl::StatusOr<Decision> KeyState::Charge(std::string_view scope, absl::Span<const Limit> limits,
                                          int64_t amount, int64_t now_ms, bool* changed) {
  return Adjust(scope, limits, amount, now_ms, /*refund=*/false, changed);
}

bool KeyState::CarryOver(const Policy& policy, int64_t now_ms) {
  if (policy.carried_from.empty()) return false;
  return internal::CarryOver(
      policy,
      [&](const Limit& l) { return Peek(policy.name, absl::MakeConstSpan(&l, 1), 0, now_ms); },
      [&](const Limit& l, int64_t amount) {
        bool changed = false;
        (void)Charge(policy.name, absl::MakeConstSpan(&l, 1), amount, now_ms, &changed);
      },
      [&](const Limit& l) { Reset(policy.name, absl::MakeConstSpan(&l, 1)); });
}

size_t KeyState::Reset(std::string_view scope, absl::Span<const Limit> limits) {
  Block b{static_cast<char*>(block_)};
  const uint64_t sid = ScopeId(scope);
  size_t removed = 0;
  for (const Limit& limit : limits) {
    bool any = false;
    const uint64_t id = StateId(limit);
    if (const size_t off = b.Find(sid, id); off != 0) {
      EraseAt(b, off);
      any = true;
    }
    // A reset lifts a penalty block too, whether or not this limit was written with BLOCK.
    if (const size_t off = b.Find(sid, id | kBlockBit); off != 0) {
      EraseAt(b, off);
      any = true;
    }
    removed += any;
  }
  if (b.p != nullptr && b.count() == 0) {
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

}  // namespace rl

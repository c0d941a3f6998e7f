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

using Op = internal::RunOp;

// What the phases of one check or acquire over a key's block share.
struct KeyRun {
  void*& block;
  Block b;
  Op op;
  uint64_t sid;
  absl::Span<const Limit> limits;
  int64_t cost;
  int64_t now;
  bool* changed;
  Pending* pending;  // one per limit
};

// Evaluates every limit, then the penalty blocks and the decision; returns the limits whose
// block starts (bit i).
uint32_t EvaluateAll(KeyRun& r, Decision& out) {
  for (size_t i = 0; i < r.limits.size(); ++i) {
    const size_t off = r.b.Find(r.sid, StateId(r.limits[i]));
    out.limits[i] =
        Evaluate(r.b, off, r.limits[i], r.now, r.cost, /*prune_log=*/true, &r.pending[i]);
    *r.changed = *r.changed || r.pending[i].pruned;
  }
  uint32_t starting = 0;
  if (HasBlock(r.limits))
    starting = ApplyBlocks(r.b, r.sid, r.limits, out.limits.data(), r.now, r.cost);
  internal::MakeDecision(r.limits.size(), out);
  if (r.op == Op::kAcquire) internal::MarkLeases(r.limits, out);
  return starting;
}

// Drops the entries that are fresh-equivalent (it frees room and keeps the block small), then
// checks that the new entries fit under kMaxStates. Returns the bytes the new entries take, or
// an error (which leaves what was dropped dropped: a replay drops it too).
absl::StatusOr<size_t> ReserveRoom(KeyRun& r) {
  size_t removed = 0;
  for (size_t off = kHeaderBytes; off < r.b.bytes();) {
    if (r.b.expiry(off) <= r.now) {
      EraseAt(r.b, off);
      ++removed;
    } else {
      off += r.b.size_at(off);
    }
  }
  if (removed > 0) *r.changed = true;  // even if the bound below refuses the call
  size_t added = 0, added_bytes = 0;
  for (size_t i = 0; i < r.limits.size(); ++i) {
    Pending& q = r.pending[i];
    // Offsets moved; find the surviving entries again (dropped ones count as fresh, and their
    // evaluation was of a state equivalent to fresh, so it stands).
    if (removed > 0 && q.off != 0 && (q.off = r.b.Find(r.sid, StateId(r.limits[i]))) == 0) {
      q.log = nullptr;     // freed with the entry
      q.leases = nullptr;  // likewise
    }
    if (q.off == 0 && internal::WritesState(r.op, r.cost, q.kind)) {
      ++added;
      added_bytes += EntryBytes(StateId(r.limits[i]));
    }
  }
  if (r.b.count() + added > KeyState::kMaxStates) {
    if (r.b.count() == 0) {
      internal::StateFree(r.b.p);
      r.block = nullptr;
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many rate-limit states under one key (at most ", KeyState::kMaxStates, ")"));
  }
  return added_bytes;
}

// Writes every state the allowed call changed (growing the block once for the new entries).
void WriteBack(KeyRun& r, size_t added_bytes, uint64_t nonce, bool* leased) {
  Reserve(r.block, r.b, added_bytes);
  for (size_t i = 0; i < r.limits.size(); ++i) {
    Pending& q = r.pending[i];
    if (!internal::WritesState(r.op, r.cost, q.kind)) continue;
    if (q.kind == StateShape::kLog) q.log = internal::LogAppend(q.log, r.limits[i], r.now, r.cost);
    if (q.kind == StateShape::kLeases) {
      const int64_t lease_end = internal::LeaseEnd(r.limits[i], r.now);
      q.leases = internal::LeaseAdd(q.leases, nonce, lease_end, r.now);
      q.expiry_ms = std::max(q.expiry_ms, lease_end);
      *leased = true;
    }
    if (q.off == 0) q.off = Append(r.b, r.sid, StateId(r.limits[i]), q.expiry_ms);
    WriteState(r.b, q.off, q);
  }
  *r.changed = true;
}

// Nothing consumed. A stored state keeps its words; only an expiry that a changed limit moved is
// rewritten (both times in the past mean the same: fresh). Blocks that start are stored last: a
// new entry may move the block of memory.
void Refresh(KeyRun& r, uint32_t starting) {
  for (size_t i = 0; i < r.limits.size(); ++i) {
    const Pending& q = r.pending[i];
    if (q.off == 0) continue;
    const int64_t old = r.b.expiry(q.off);
    if (old != q.expiry_ms && (old > r.now || q.expiry_ms > r.now)) {
      r.b.set_expiry(q.off, q.expiry_ms);
      *r.changed = true;
    }
  }
  for (size_t i = 0; i < r.limits.size(); ++i) {
    if ((starting >> i) & 1) {
      *r.changed |=
          SetBlock(r.block, r.sid, StateId(r.limits[i]), internal::BlockUntil(r.limits[i], r.now));
    }
  }
}

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
  Pending pending[kMaxLimitsPerCheck];
  KeyRun r{
      block,  Block{static_cast<char*>(block)}, op, ScopeId(scope), limits, cost, now_ms, changed,
      pending};
  const uint32_t starting = EvaluateAll(r, *out);
  if (!out->allowed || (cost == 0 && op != Op::kAcquire)) {
    Refresh(r, starting);
    return out;
  }
  absl::StatusOr<size_t> added_bytes = ReserveRoom(r);
  if (!added_bytes.ok()) {
    out = added_bytes.status();
    return out;
  }
  // Past every refusal the original call could meet (so a replay of a refused acquire drops what
  // it dropped): a replay of an acquire that took no lease must not take one.
  if (op == Op::kAcquire && nonce == 0) {
    for (size_t i = 0; i < limits.size(); ++i) {
      if (r.pending[i].kind == StateShape::kLeases) {
        out = absl::FailedPreconditionError("a replayed acquire without a lease id would lease");
        return out;
      }
    }
  }
  WriteBack(r, *added_bytes, nonce, leased);
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

}  // namespace rl

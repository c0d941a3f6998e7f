// The Limiter's sharded tables as a store of the one pipeline (pipeline.h): where a limit's state
// lives (its state key and shard), locking the shards of a call, finding, making room for and
// writing back states in their tables. Inline: they run on every check.
#pragma once

#include <cstdint>
#include <type_traits>

#include "absl/base/attributes.h"
#include "hot_keys.h"
#include "leases.h"
#include "limiter_impl.h"
#include "pipeline.h"
#include "registry.h"
#include "rl/decision.h"
#include "rl/key_state.h"
#include "rl/limit.h"
#include "sliding_log.h"
#include "store.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rl::internal::sharded {

// State keys. (scope, key) is hashed once per check with a seeded 64-bit XXH3: the key's hash is
// seeded with the scope's, so ("ab", "c") and ("a", "bc") stay apart without copying both into
// one buffer. Each limit's key is then a bijective mix of that hash with (algorithm, window), so
// the limits of one check never collide with each other and a check of n limits hashes its
// strings once, not n times.
class KeyHasher {
 public:
  // The empty scope (inline limits, the common case) seeds with the limiter's seed itself, which
  // saves a hash per check; it stands apart from a named scope unless that scope's hash happens
  // to equal the seed (probability 2^-64).
  ABSL_ATTRIBUTE_ALWAYS_INLINE KeyHasher(std::string_view scope, std::string_view key,
                                         uint64_t seed)
      : base_(XXH3_64bits_withSeed(
            key.data(), key.size(),
            scope.empty() ? seed : XXH3_64bits_withSeed(scope.data(), scope.size(), seed))) {}
  ABSL_ATTRIBUTE_ALWAYS_INLINE uint64_t For(const Limit& limit) const {
    // StateTag is injective in (algorithm, window), and an odd multiplier keeps it so.
    const uint64_t tail = StateTag(limit.algorithm, limit.window_ms) * 0x9E3779B97F4A7C15ull;
    // MurmurHash3's fmix64: a bijection that spreads every input bit over the whole word.
    uint64_t x = base_ ^ tail;
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    x ^= x >> 33;
    return x;
  }

 private:
  uint64_t base_;
};

// Where a limit's state lives in the sharded store: its state key, its shard and, once found, its
// slot (a Slot2, Slot3, SlotLog or SlotLease by the limit's shape).
struct Where {
  uint64_t key;
  uint32_t shard;
  const void* slot;
};

}  // namespace rl::internal::sharded

namespace rl {

// One call's view of the sharded store: the shards it locks and its state keys (which making
// room must not evict), and the new states that found no room (fail-open: allowed, not counted).
// The shards are locked by LockShards, which the thread-safety analysis cannot follow: each
// access asserts its shard's lock.
class Limiter::Impl::Store {
 public:
  using Where = internal::sharded::Where;
  using Q = internal::Pending<Where>;
  using Op = internal::RunOp;

  // The shards a call locks and its state keys (which making room must not evict). Apart from
  // the store, which then stays in registers: only these leave them (to MakeRoom).
  struct Frame {
    uint32_t locked[kMaxLimitsPerCheck];
    uint64_t keys[kMaxLimitsPerCheck];
  };

  ABSL_ATTRIBUTE_ALWAYS_INLINE Store(Impl& impl, Frame& frame, std::string_view scope,
                                     std::string_view key)
      : impl_(impl), hasher_(scope, key, impl.seed_), scope_(scope), key_(key), f_(frame) {}

  template <Op kOp>
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Locate(size_t i, Q& q, const Limit& limit) {
    if (i == 0 && tried_hot_) {  // TryHot located it (and it is a hot limit: see below)
      q.at.key = f_.keys[0];
      q.at.shard = f_.locked[0];
      if constexpr (kOp == Op::kCheck) hot_limit_ = &limit;
      return;
    }
    const uint64_t k = kOp != Op::kCheck && limit.algorithm == Algorithm::kConcurrency
                           ? impl_.LeaseKeyFor(ScopeId(scope_), key_).key
                           : hasher_.For(limit);
    q.at.key = f_.keys[i] = k;
    q.at.shard = f_.locked[i] = impl_.ShardOf(k);
    // A single GCRA or token-bucket limit of a check, refund or charge (not a peek) keeps its
    // state in the shard's hot entry when it can (hot_keys.h); Lock forgets it for calls of
    // several limits.
    if constexpr (kOp == Op::kCheck) {
      if (i == 0 && impl_.hot_ && internal::HotAlgorithm(limit.algorithm) && limit.block_ms == 0) {
        hot_limit_ = &limit;
      }
    }
  }
  // The lock-free check of an existing hot key (see hot_keys.h) of a call's only limit, a hot one
  // (HotAlgorithm, no BLOCK): true when it decided `out`. The state key, shard and clock reading
  // are the ones the locked path uses if it falls back (Locate, Now).
  template <Op kOp>
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool TryHot(const Limit& limit, int64_t cost, Decision& out) {
    const uint64_t k = hasher_.For(limit);
    const uint32_t shard = impl_.ShardOf(k);
    f_.keys[0] = k;
    f_.locked[0] = shard;
    tried_hot_ = true;
    now_ = impl_.clock_->NowMs();
    have_now_ = true;
    internal::HotEntry& e = internal::HotEntryOf(impl_.HotOf(shard), k);
    const uint64_t w = internal::hot::LiveWordFor(impl_.shards_[shard], e, k);
    // The result straight into the decision (written only on success; the locked path fills it
    // otherwise).
    if (ABSL_PREDICT_TRUE(w == 0) || !internal::HotCheckLive(e, w, impl_.expiry_, limit, now_, cost,
                                                             kOp == Op::kCheck, &out.limits[0])) {
      return false;
    }
    internal::MakeDecision(1, out);
    return true;
  }
  // The lease set of a release, whose scope is known by its id only.
  void LocateLeases(Q& q, uint64_t scope_id) {
    const StateKey k = impl_.LeaseKeyFor(scope_id, key_);
    q.at.key = f_.keys[0] = k.key;
    q.at.shard = f_.locked[0] = k.shard;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Lock(size_t n) {
    n_ = n;
    if (n != 1) hot_limit_ = nullptr;
    lock_count_ = impl_.LockShards(f_.locked, n);
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE int64_t Now() {
    if (!have_now_) now_ = impl_.clock_->NowMs();
    return now_;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Unlock() { impl_.UnlockShards(f_.locked, lock_count_); }
  uint32_t unstored() const { return unstored_; }

  // The slot of the located state `q` in its shard's `table` (null: none), remembered in q.at.
  template <class Table>
  ABSL_ATTRIBUTE_ALWAYS_INLINE const typename Table::value_type* FindSlot(
      Q& q, Table internal::Shard::*table) {
    internal::Shard& sh = impl_.shards_[q.at.shard];
    sh.mu.AssertHeld();  // by LockShards
    auto it = (sh.*table).find(q.at.key);
    if (it == (sh.*table).end()) return nullptr;
    q.at.slot = &*it;
    return &*it;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool FindTwo(Q& q, internal::TwoWordState* old) {
    // A hot entry that holds this key live gives its state back to the slot first.
    if (impl_.hot_) {
      internal::Shard& sh = impl_.shards_[q.at.shard];
      sh.mu.AssertHeld();  // by LockShards
      internal::FoldHotKey(impl_.HotOf(q.at.shard), sh, q.at.key, impl_.expiry_, now_);
    }
    const internal::Slot2* slot = FindSlot(q, &internal::Shard::two);
    if (slot == nullptr) return false;
    *old = internal::TwoWordState{impl_.expiry_.FromRel(slot->rel_time()), slot->word};
    return true;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool FindThree(Q& q, internal::ThreeWordState* old) {
    const internal::Slot3* slot = FindSlot(q, &internal::Shard::three);
    if (slot == nullptr) return false;
    *old = internal::ThreeWordState{impl_.expiry_.FromRel(slot->rel_time()), slot->previous(),
                                    slot->current()};
    return true;
  }
  // Dropping a log's expired runs changes nothing a check can see, so even a peek prunes here.
  template <bool kReadOnly>
  internal::LogBuf* FindLog(Q& q, const Limit& limit, int64_t now) {
    const internal::SlotLog* slot = FindSlot(q, &internal::Shard::logs);
    q.found = slot != nullptr;
    if (!q.found) return nullptr;
    internal::LogPrune(slot->log, limit.window_ms, now);
    return slot->log;
  }
  internal::LeaseBuf* FindLeases(Q& q) {
    const internal::SlotLease* slot = FindSlot(q, &internal::Shard::leases);
    q.found = slot != nullptr;
    return q.found ? slot->leases : nullptr;
  }

  // The penalty blocks beside the states (SlotBlock, same key).
  class BlockView {
   public:
    explicit BlockView(Impl& impl) : impl_(impl) {}
    int64_t BlockedUntil(const Q& q, int64_t now) {
      internal::Shard& sh = impl_.shards_[q.at.shard];
      sh.mu.AssertHeld();
      return sh.BlockedUntil(q.at.key, now);
    }
    void StartBlock(const Q& q, int64_t until) {
      internal::Shard& sh = impl_.shards_[q.at.shard];
      sh.mu.AssertHeld();
      auto [it, inserted] = sh.blocks.insert(internal::SlotBlock{q.at.key, until});
      if (!inserted) it->until = until;
    }

   private:
    Impl& impl_;
  };
  BlockView Blocks() { return BlockView(impl_); }

  // Room for the new states of an allowed call: at a bound with nothing safe to evict they are
  // not stored, and the overflow mode decides the call (see LimiterOptions::overflow).
  template <Op kOp, size_t kN>
  ABSL_ATTRIBUTE_ALWAYS_INLINE internal::Room ReserveRoom(Q* p, int64_t now, int64_t cost,
                                                          Decision& out) {
    const size_t n = kN != 0 ? kN : n_;
    uint32_t placed = 0;
    RL_UNROLL_LIMITS
    for (size_t i = 0; i < n; ++i) {
      const Q& q = p[i];
      if (q.found || !internal::WritesState(kOp, cost, q.kind)) continue;
      size_t adding = 1;  // with the new states of this call already placed in its shard
      for (size_t j = 0; j < i; ++j) adding += ((placed >> j) & 1) && p[j].at.shard == q.at.shard;
      internal::Shard& sh = impl_.shards_[q.at.shard];
      sh.mu.AssertHeld();
      if (impl_.MakeRoom(sh, now, adding, f_.keys, n)) {
        placed |= 1u << i;
      } else {
        unstored_ |= 1u << i;
      }
    }
    if (ABSL_PREDICT_TRUE(unstored_ == 0)) return internal::Room::kWrite;
    internal::Shard& first = impl_.shards_[p[__builtin_ctz(unstored_)].at.shard];
    first.mu.AssertHeld();
    ++first.overflows;
    if (impl_.overflow_ != FailureMode::kFailClosed) return internal::Room::kWrite;
    for (size_t i = 0; i < n; ++i) {
      if (((unstored_ >> i) & 1) == 0) continue;
      internal::Shard& sh = impl_.shards_[p[i].at.shard];
      sh.mu.AssertHeld();
      out.limits[i] = impl_.Refused(sh, now, out.limits[i]);
    }
    internal::MakeDecision(n, out);
    return internal::Room::kRefresh;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool Placed(size_t i) const { return ((unstored_ >> i) & 1) == 0; }
  void Grew(const Q& q, size_t bytes) {
    internal::Shard& sh = impl_.shards_[q.at.shard];
    sh.mu.AssertHeld();
    (q.kind == internal::StateShape::kLog ? sh.log_bytes : sh.lease_bytes) += bytes;
  }
  // A state's coarse expiry with its usage level (lease sets are always protected).
  ABSL_ATTRIBUTE_ALWAYS_INLINE uint32_t ExpiryOf(const Q& q, const LimitResult& r) const {
    return impl_.expiry_.Encode(q.expiry_ms, internal::UsageLevel(r));
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE uint32_t LeaseExpiryOf(const Q& q) const {
    return impl_.expiry_.Encode(q.expiry_ms, internal::kLevelProtected);
  }
  // Writes the new state of a found one in its slot.
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Update(const Q& q, const LimitResult& r) {
    if (ABSL_PREDICT_TRUE(q.kind == internal::StateShape::kTwoWord)) {  // the common shape first
      const auto* slot = static_cast<const internal::Slot2*>(q.at.slot);
      slot->set_rel_time(impl_.expiry_.ToRel(q.two.time));
      slot->word = q.two.word;
      slot->expiry = ExpiryOf(q, r);
      if (hot_limit_ != nullptr) Bind(q, slot->rel_time(), slot->word);
      return;
    }
    switch (q.kind) {
      case internal::StateShape::kTwoWord:
        break;
      case internal::StateShape::kThreeWord: {
        const auto* slot = static_cast<const internal::Slot3*>(q.at.slot);
        slot->set_rel_time(impl_.expiry_.ToRel(q.three.time));
        slot->set_counts(q.three.previous, q.three.current);
        slot->expiry = ExpiryOf(q, r);
        break;
      }
      case internal::StateShape::kLog: {
        const auto* slot = static_cast<const internal::SlotLog*>(q.at.slot);
        slot->log = q.log;
        slot->expiry = ExpiryOf(q, r);
        break;
      }
      case internal::StateShape::kLeases: {
        const auto* slot = static_cast<const internal::SlotLease*>(q.at.slot);
        slot->leases = q.leases;
        slot->expiry = LeaseExpiryOf(q);
        break;
      }
    }
  }
  // Inserts the new state of a limit that found none (room was made for it).
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Insert(const Q& q, const LimitResult& r) {
    internal::Shard& sh = impl_.shards_[q.at.shard];
    sh.mu.AssertHeld();
    const internal::ExpiryCodec& codec = impl_.expiry_;
    switch (q.kind) {
      case internal::StateShape::kTwoWord: {
        internal::Slot2 slot{q.at.key, ExpiryOf(q, r), 0, 0, q.two.word};
        slot.set_rel_time(codec.ToRel(q.two.time));
        sh.two.insert(slot);
        if (hot_limit_ != nullptr) Bind(q, slot.rel_time(), slot.word);
        break;
      }
      case internal::StateShape::kThreeWord:
        sh.three.insert(internal::Slot3(q.at.key, ExpiryOf(q, r), codec.ToRel(q.three.time),
                                        q.three.previous, q.three.current));
        break;
      case internal::StateShape::kLog:
        sh.logs.insert(internal::SlotLog{q.at.key, ExpiryOf(q, r), q.log});
        break;
      case internal::StateShape::kLeases:
        sh.leases.insert(internal::SlotLease{q.at.key, LeaseExpiryOf(q), q.leases});
        break;
    }
  }
  // A log that grew may have passed the byte bound; it stays over (a soft bound) when nothing
  // is safe to evict. (New states found room before.)
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Wrote(const Q*, size_t n, int64_t now, bool logs_grew) {
    if (ABSL_PREDICT_TRUE(!logs_grew) || impl_.max_memory_bytes_ == 0) return;
    for (size_t i = 0; i < lock_count_; ++i) {
      internal::Shard& sh = impl_.shards_[f_.locked[i]];
      sh.mu.AssertHeld();
      impl_.MakeRoom(sh, now, 0, f_.keys, n);
    }
  }
  // A state found fresh-equivalent is dropped here (lazy expiry); the rest only gets its expiry
  // refreshed. An unchanged expiry word is not written: a denial that changes nothing leaves its
  // slot's cache line shared, so threads denied on one hot key do not pass the line between cores.
  template <class Slot, class Expiry>
  ABSL_ATTRIBUTE_ALWAYS_INLINE static void KeepExpiry(const Slot* slot, Expiry expiry) {
    if (slot->expiry != expiry) slot->expiry = expiry;
  }
  template <Op kOp>
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Refresh(const Q& q, const LimitResult& r, int64_t now) {
    internal::Shard& sh = impl_.shards_[q.at.shard];
    sh.mu.AssertHeld();
    if (q.expiry_ms <= now) {
      if (sh.Erase(q.kind, q.at.key)) ++sh.expired;
      return;
    }
    switch (q.kind) {
      case internal::StateShape::kTwoWord: {
        const auto* slot = static_cast<const internal::Slot2*>(q.at.slot);
        KeepExpiry(slot, ExpiryOf(q, r));
        if (hot_limit_ != nullptr) Bind(q, slot->rel_time(), slot->word);
        break;
      }
      case internal::StateShape::kThreeWord:
        KeepExpiry(static_cast<const internal::Slot3*>(q.at.slot), ExpiryOf(q, r));
        break;
      case internal::StateShape::kLog:
        KeepExpiry(static_cast<const internal::SlotLog*>(q.at.slot), ExpiryOf(q, r));
        break;
      case internal::StateShape::kLeases:
        if constexpr (kOp != Op::kCheck) {
          static_cast<const internal::SlotLease*>(q.at.slot)->expiry = LeaseExpiryOf(q);
        }
        break;
    }
  }

  bool BeginAdjust(const Q*, absl::Span<const Limit>, int64_t, internal::AdjustOp, int64_t) {
    return true;
  }
  // A refunded or charged state: dropped when it is equivalent to fresh, else written; a new one
  // that finds no room is not stored (fail-open for a charge: counted as an overflow).
  void Adjusted(Q& q, const LimitResult& r, bool changed, int64_t now) {
    internal::Shard& sh = impl_.shards_[q.at.shard];
    sh.mu.AssertHeld();
    const bool log = q.kind == internal::StateShape::kLog;
    if (q.found && log) static_cast<const internal::SlotLog*>(q.at.slot)->log = q.log;
    if (q.expiry_ms > now && q.found) {
      Update(q, r);
    } else if (q.expiry_ms <= now && q.found) {
      sh.Erase(q.kind, q.at.key);
    } else if (q.expiry_ms > now && changed && impl_.MakeRoom(sh, now, 1, f_.keys, n_)) {
      Insert(q, r);
    } else {
      if (q.expiry_ms > now && changed) {
        if (unstored_ == 0) ++sh.overflows;
        unstored_ |= 1;
      }
      if (log) {
        sh.log_bytes -= internal::LogBytes(q.log);
        internal::LogFree(q.log);
      }
    }
  }
  void Released(const Q& q, bool, int64_t now) {
    internal::Shard& sh = impl_.shards_[q.at.shard];
    sh.mu.AssertHeld();
    const auto* slot = static_cast<const internal::SlotLease*>(q.at.slot);
    if (internal::LeaseCount(q.leases) == 0) {
      sh.Erase(internal::StateShape::kLeases, q.at.key);
    } else {
      slot->expiry =
          impl_.expiry_.Encode(internal::LeaseExpiry(q.leases, now), internal::kLevelProtected);
    }
  }

 private:
  // Inline up to BindHot's and BindPair's first tests, where most calls stop: the entry is live
  // for another key (the shard's tag says so), or not this key's and it only becomes a candidate.
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Bind(const Q& q, int64_t rel, int64_t word) {
    if (internal::hot::TagAt(impl_.shards_[q.at.shard], q.at.key) != 0) return;  // live, by tag
    internal::HotEntry& e = internal::HotEntryOf(impl_.HotOf(q.at.shard), q.at.key);
    if (e.candidate != q.at.key && (e.meta.load(std::memory_order_relaxed) == 0 ||
                                    e.key.load(std::memory_order_relaxed) != q.at.key)) {
      e.candidate = q.at.key;
      return;
    }
    BindDead(q, rel, word);
  }
  ABSL_ATTRIBUTE_NOINLINE void BindDead(const Q& q, int64_t rel, int64_t word) {
    internal::Shard& sh = impl_.shards_[q.at.shard];
    sh.mu.AssertHeld();
    if (hot_limit_->algorithm == Algorithm::kTokenBucket) {
      internal::BindPair(impl_.HotOf(q.at.shard), sh, q.at.key, rel, word, q.expiry_ms, *hot_limit_,
                         impl_.expiry_);
      return;
    }
    internal::BindHot(impl_.HotOf(q.at.shard), sh, q.at.key, rel, word, *hot_limit_);
  }

  Impl& impl_;
  const internal::sharded::KeyHasher hasher_;
  std::string_view scope_;
  std::string_view key_;
  size_t n_ = 0;
  size_t lock_count_ = 0;
  uint32_t unstored_ = 0;             // bit i: the new state of limit i found no room
  const Limit* hot_limit_ = nullptr;  // the single limit whose state may be kept hot
  int64_t now_ = 0;
  bool have_now_ = false;   // TryHot read the clock
  bool tried_hot_ = false;  // TryHot located limit 0 (f_.keys[0], f_.locked[0])
  Frame& f_;
};

}  // namespace rl

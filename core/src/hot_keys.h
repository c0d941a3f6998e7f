// The lock-free path of a hot key: an existing GCRA state checked with a compare-and-swap on one
// 64-bit word, and an existing token-bucket state with one on a 16-byte pair, instead of under
// its shard's lock.
//
// Each shard has kHotPerShard entries beside its tables (not in them: absl's slots move on
// rehash). An entry is bound to one state key at a time; while its word is live the word, not the
// key's Slot2, holds the key's state, and every locked access to that state folds the word back
// into the slot first (FoldHot, which kills the word with one exchange, so no compare-and-swap can
// land after it). The locked path of a single-limit GCRA (or token-bucket) check revives the word
// afterwards.
//
// The live word: bit 63 set, a 15-bit binding generation (bits 48-62), and 48 bits of payload:
// the slot's time relative to the binding's base (ms) above the slot's word (GCRA's remaining
// ticks) in the low k bits. The base, k and generation are the entry's `meta`, fixed for a
// binding. A reader loads the word, then the key, then the meta (the binder stores them in the
// opposite order before it publishes a live word), and trusts what it read only when the word is
// live and both generations agree; its compare-and-swap then succeeds only on a word of the same
// binding, because a generation is never reused (an entry that has used them all stays dead).
// Within a binding, a word that was killed and revived holds the key's current state in the same
// encoding, so a compare-and-swap that finds the value it read acts on exactly that state.
//
// The token bucket needs both of its values exactly (a check whose clock reading is older than
// the stored time refills nothing, so the time cannot be rounded), which one word cannot hold for
// every limit. Its entry (meta's k = kPairK) holds a pair instead: `word` is the live bit, the
// generation and the slot's whole 48-bit time, `tokens` the slot's word, and an allowed check
// replaces both with one 16-byte compare-and-swap (x86-64's cmpxchg16b; elsewhere, or on a CPU
// without it, token buckets stay on the lock). A denial writes nothing: it reads `word`, then
// `tokens`, then `word` again, and trusts the pair when both readings of `word` agree. That is
// exact because, within one entry, `word` without its live bit never decreases as (generation,
// time): a lock-free check moves the time to its own clock reading, never back (it serves only
// calls whose clock is not behind the stored time); a fold only clears the live bit (`tokens`
// kept); and a revival keeps the generation only with a time not before the folded one and the
// same limit, else takes a new one. So two equal readings of `word` enclose only states with that
// very word, and the `tokens` read between them belongs to one of them (a revival stores `tokens`
// before `word`).
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "absl/base/attributes.h"
#include "algorithms.h"
#include "rl/decision.h"
#include "rl/limit.h"
#include "store.h"

namespace rl::internal {

struct alignas(64) HotEntry {
  // Read without the lock; written under it (the word also by the lock-free compare-and-swap).
  // `word` and `tokens` are the 16-byte pair of a token bucket's entry, compared and swapped
  // together (so they lead the aligned entry); a GCRA entry uses `word` only.
  std::atomic<uint64_t> word{0};
  std::atomic<uint64_t> tokens{0};
  std::atomic<uint64_t> key{0};
  std::atomic<uint64_t> meta{0};
  // The limit (and capacity) of the locked call that last made the word live: the lock-free path
  // serves only calls of that limit, so the expiry a fold writes is the one the locked path would
  // have written after them. Changed only while the word is dead.
  std::atomic<int64_t> limit{0};
  std::atomic<int64_t> capacity{0};
  // Under the shard lock only. The current binding's generation is meta's (0: never bound, and
  // then `key` means nothing).
  int64_t window_ms = 0;
  uint64_t candidate = 0;  // the last key that asked for this entry while it was not live
};
static_assert(sizeof(HotEntry) == 64);

namespace hot {

inline constexpr uint64_t kLive = uint64_t{1} << 63;
inline constexpr int kPayloadBits = 48;
inline constexpr uint64_t kPayloadMask = (uint64_t{1} << kPayloadBits) - 1;
inline constexpr uint32_t kMaxGen = (1u << 15) - 1;
inline constexpr int kBaseBits = 43;  // meta: gen << 49 | k << 43 | base (43-bit two's complement)
inline constexpr uint64_t kBaseMask = (uint64_t{1} << kBaseBits) - 1;

inline uint32_t GenOfWord(uint64_t w) { return static_cast<uint32_t>(w >> kPayloadBits) & kMaxGen; }
inline uint32_t GenOfMeta(uint64_t m) { return static_cast<uint32_t>(m >> 49); }
inline int KOfMeta(uint64_t m) { return static_cast<int>((m >> kBaseBits) & 63); }
inline int64_t BaseOfMeta(uint64_t m) {
  return static_cast<int64_t>((m & kBaseMask) << (64 - kBaseBits)) >> (64 - kBaseBits);
}
inline uint64_t MakeMeta(uint32_t gen, int k, int64_t base) {
  return uint64_t{gen} << 49 | uint64_t(k) << kBaseBits | (static_cast<uint64_t>(base) & kBaseMask);
}
// meta's k of a token bucket's pair (a GCRA word's k is at most 40).
inline constexpr int kPairK = 63;

// The slot's (relative time, word) of a live word.
inline void Decode(uint64_t w, uint64_t m, int64_t* rel, int64_t* word) {
  const int k = KOfMeta(m);
  const uint64_t payload = w & kPayloadMask;
  *rel = BaseOfMeta(m) + static_cast<int64_t>(payload >> k);
  *word = static_cast<int64_t>(payload & ((uint64_t{1} << k) - 1));
}
// The live word of (relative time, word) in meta's binding; false when it does not fit.
inline bool Encode(int64_t rel, int64_t word, uint64_t m, uint64_t* out) {
  const int k = KOfMeta(m);
  int64_t d;
  if (__builtin_sub_overflow(rel, BaseOfMeta(m), &d)) return false;
  if (d < 0 || static_cast<uint64_t>(d) >= (uint64_t{1} << (kPayloadBits - k))) return false;
  if (word < 0 || static_cast<uint64_t>(word) >= (uint64_t{1} << k)) return false;
  *out = kLive | uint64_t{GenOfMeta(m)} << kPayloadBits | static_cast<uint64_t>(d) << k |
         static_cast<uint64_t>(word);
  return true;
}

inline Limit LimitOf(const HotEntry& e, Algorithm algorithm) {
  Limit l;
  l.algorithm = algorithm;
  l.limit = e.limit.load(std::memory_order_relaxed);
  l.window_ms = e.window_ms;
  l.burst = e.capacity.load(std::memory_order_relaxed);
  return l;
}
inline void SetLimit(HotEntry& e, const Limit& limit) {
  e.limit.store(limit.limit, std::memory_order_relaxed);
  e.capacity.store(limit.capacity(), std::memory_order_relaxed);
  e.window_ms = limit.window_ms;
}

// The first reads of a lock-free check, inline in its caller so that a key whose entry is not
// live for it (most keys) pays two loads: the entry's word when it is live for `key`, else 0.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline uint64_t LiveWordFor(const HotEntry& e, uint64_t key) {
  const uint64_t w = e.word.load(std::memory_order_acquire);
  if ((w & kLive) == 0 || e.key.load(std::memory_order_acquire) != key) return 0;
  return w;
}
// The same, the shard's tag first (Shard::hot_tags): most keys stop there, on their lock's line.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline uint64_t LiveWordFor(const Shard& sh, const HotEntry& e,
                                                         uint64_t key) {
  return TagAt(sh, key) != TagOf(key) ? 0 : LiveWordFor(e, key);
}
// The rest of the binding checks of both lock-free checks, on the live word `w` read by
// LiveWordFor: the meta (read after the key, see the top of this file) is of w's binding and of
// the shape asked for (a token bucket's pair or a GCRA word), and the binding serves `limit`.
// Acquire (free on x86-64): a pair's limit read must stay between its two readings of `word`.
inline bool BoundTo(const HotEntry& e, uint64_t w, const Limit& limit, bool pair, uint64_t* m) {
  *m = e.meta.load(std::memory_order_acquire);
  return GenOfWord(w) == GenOfMeta(*m) && (KOfMeta(*m) == kPairK) == pair &&
         e.limit.load(std::memory_order_acquire) == limit.limit &&
         e.capacity.load(std::memory_order_acquire) == limit.capacity();
}

}  // namespace hot

// The entry a state key would use in its shard's group of kHotPerShard.
inline HotEntry& HotEntryOf(HotEntry* shard_entries, uint64_t key) {
  return shard_entries[key & (kHotPerShard - 1)];
}

// A GCRA check (or, without `consume`, a peek) of cost `cost` at `now` of the state whose live
// word `w` LiveWordFor read, without a lock: true with `*r` filled when the binding serves the
// limit and the outcome could be stored in (or needed no change of) its word; false leaves
// everything to the locked path. The same step function on the same state as the locked path, so
// the same result. A call that changes nothing writes nothing.
inline bool HotCheckGcra(HotEntry& e, uint64_t w, const ExpiryCodec& codec, const Limit& limit,
                         int64_t now, int64_t cost, bool consume, LimitResult* r) {
  uint64_t m;
  if (!hot::BoundTo(e, w, limit, /*pair=*/false, &m)) return false;
  const uint32_t gen = hot::GenOfMeta(m);
  for (;;) {
    int64_t rel, word;
    hot::Decode(w, m, &rel, &word);
    const TwoWordState old{codec.FromRel(rel), word};
    const Step<TwoWordState> step = Gcra(&old, limit, now, cost);
    if (!consume || !step.result.allowed || cost == 0) {
      // Unchanged. A state found fresh-equivalent is dropped by the locked path (lazy expiry),
      // and a peek that would admit a cost refreshes the slot's expiry to what consuming it would
      // leave: both are the lock's to do.
      if (step.expiry_ms <= now || (step.result.allowed && cost > 0)) return false;
      *r = step.result;
      return true;
    }
    uint64_t next;
    if (!hot::Encode(codec.ToRel(step.state.time), step.state.word, m, &next)) return false;
    if (e.word.compare_exchange_weak(w, next, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      *r = step.result;
      return true;
    }
    if ((w & hot::kLive) == 0 || hot::GenOfWord(w) != gen) return false;
  }
}

// Under the shard's lock: makes the slot authoritative again for the entry's key, killing the word.
// The slot gets the word's time and word, the expiry the locked path would have written after the
// same calls (the TAT, rounded up: every call the word served had the entry's limit and left the
// TAT at or after its own time), and the usage level of the state at `now` (the locked path's is
// the level at its last write, an upper bound of that: the state only got fresher since).
inline void FoldPair(HotEntry& e, Shard& sh, const ExpiryCodec& codec, int64_t now)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
inline void FoldHot(HotEntry& e, Shard& sh, const ExpiryCodec& codec, int64_t now)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  if (hot::KOfMeta(e.meta.load(std::memory_order_relaxed)) == hot::kPairK) {
    FoldPair(e, sh, codec, now);
    return;
  }
  const uint64_t w = e.word.exchange(0, std::memory_order_acq_rel);
  if ((w & hot::kLive) == 0) return;
  hot::SetTag(sh, e.key.load(std::memory_order_relaxed), 0);
  auto it = sh.two.find(e.key.load(std::memory_order_relaxed));
  if (it == sh.two.end()) return;  // cannot happen: every erase of a live key folds it first
  int64_t rel, word;
  hot::Decode(w, e.meta.load(std::memory_order_relaxed), &rel, &word);
  it->set_rel_time(rel);
  it->word = word;
  const TwoWordState state{codec.FromRel(rel), word};
  const Limit limit = hot::LimitOf(e, Algorithm::kGcra);
  const int64_t expiry_ms = Gcra(&state, limit, std::min(now, state.time), 0).expiry_ms;
  it->expiry = codec.Encode(expiry_ms, UsageLevel(Gcra(&state, limit, now, 0).result));
}
inline void FoldHotAll(HotEntry* shard_entries, Shard& sh, const ExpiryCodec& codec, int64_t now)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  for (size_t i = 0; i < kHotPerShard; ++i) FoldHot(shard_entries[i], sh, codec, now);
}
// Under the lock, the fold of `key`'s entry if it holds that key live. Inline, and the word
// first: under the lock a dead word stays dead (only the locked path makes one live; a lock-free
// compare-and-swap lands only on a live word), so most locked accesses stop at one load.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void FoldHotKey(HotEntry* shard_entries, Shard& sh,
                                                    uint64_t key, const ExpiryCodec& codec,
                                                    int64_t now)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  if (hot::TagAt(sh, key) != hot::TagOf(key)) return;  // no entry holds this key live
  HotEntry& e = HotEntryOf(shard_entries, key);
  if ((e.word.load(std::memory_order_relaxed) & hot::kLive) != 0 &&
      e.key.load(std::memory_order_relaxed) == key) {
    FoldHot(e, sh, codec, now);
  }
}

// Under the lock, after a single-limit GCRA check (or refund, charge) wrote or refreshed the slot
// of `key` to (rel, word): makes the entry hold it live. A key that holds the entry's binding is
// revived in it; otherwise a key takes an entry that no key holds live when it asks twice in a
// row (one check in passing does not take it), as a new binding with a fresh generation.
inline void BindHot(HotEntry* shard_entries, const Shard& sh, uint64_t key, int64_t rel,
                    int64_t word, const Limit& limit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  HotEntry& e = HotEntryOf(shard_entries, key);
  uint64_t next;
  const bool mine =
      e.meta.load(std::memory_order_relaxed) != 0 && e.key.load(std::memory_order_relaxed) == key;
  // Live only for another key (a live key's locked access folded it first).
  if ((e.word.load(std::memory_order_relaxed) & hot::kLive) != 0) return;
  // A revival keeps its generation only under the same limit: a reader that checked the old
  // limit must not land its compare-and-swap on a word the fold will read under the new one.
  if (mine) {
    if (e.limit.load(std::memory_order_relaxed) == limit.limit &&
        e.capacity.load(std::memory_order_relaxed) == limit.capacity() &&
        hot::Encode(rel, word, e.meta.load(std::memory_order_relaxed), &next)) {
      e.word.store(next, std::memory_order_release);
      hot::SetTag(sh, key, hot::TagOf(key));
      return;
    }
  } else if (e.candidate != key) {
    e.candidate = key;
    return;
  }
  const uint32_t gen = hot::GenOfMeta(e.meta.load(std::memory_order_relaxed));
  if (gen >= hot::kMaxGen) return;  // every generation used: this entry stays dead
  if (rel < -(int64_t{1} << (hot::kBaseBits - 1)) || rel >= (int64_t{1} << (hot::kBaseBits - 1))) {
    return;
  }
  if (word < 0) return;
  const int k = std::bit_width(static_cast<uint64_t>(std::max<int64_t>(limit.limit - 1, word)));
  if (k > 40) return;
  const uint64_t meta = hot::MakeMeta(gen + 1, k, rel);
  if (!hot::Encode(rel, word, meta, &next)) return;
  e.meta.store(meta, std::memory_order_release);
  e.key.store(key, std::memory_order_release);
  hot::SetLimit(e, limit);
  e.word.store(next, std::memory_order_release);
  hot::SetTag(sh, key, hot::TagOf(key));
}

// ---- The token bucket's pair ----

namespace hot {

// Whether this build and CPU have a 16-byte compare-and-swap (checked once, when binding).
#if defined(__x86_64__)
inline bool PairsSupported() {
  static const bool ok = [] {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_CMPXCHG16B) != 0;
  }();
  return ok;
}
// Compares the pair with (*word, *tokens) and, when equal, replaces it with the new pair; either
// way (*word, *tokens) then hold the pair as it was, read atomically.
inline bool CasPair(HotEntry& e, uint64_t* word, uint64_t* tokens, uint64_t new_word,
                    uint64_t new_tokens) {
  bool ok;
  // The operand names `word`, the pair's first half (`tokens` follows it; both are operands).
  __asm__ __volatile__("lock cmpxchg16b %[pair]"
                       : "=@ccz"(ok), [pair] "+m"(e.word), "+m"(e.tokens), "+a"(*word),
                         "+d"(*tokens)
                       : "b"(new_word), "c"(new_tokens)
                       : "memory");
  return ok;
}
#else
inline bool PairsSupported() { return false; }
inline bool CasPair(HotEntry&, uint64_t*, uint64_t*, uint64_t, uint64_t) { return false; }
#endif
static_assert(offsetof(HotEntry, tokens) == offsetof(HotEntry, word) + 8);

// A pair's `word`: the live bit, the generation and the slot's 48-bit relative time.
inline uint64_t PairWord(uint32_t gen, int64_t rel) {
  return kLive | uint64_t{gen} << kPayloadBits | (static_cast<uint64_t>(rel) & kPayloadMask);
}
inline int64_t RelOfPair(uint64_t w) {
  return static_cast<int64_t>(w << (64 - kPayloadBits)) >> (64 - kPayloadBits);
}
// The token bucket's exact form (TokenBucketExact, no unit shift) holds for the limit.
inline bool PairLimitFits(const Limit& limit) {
  return std::bit_width(static_cast<uint64_t>(limit.capacity())) +
             std::bit_width(static_cast<uint64_t>(limit.window_ms)) <=
         kTokenUnitBits;
}
// When a state of the exact form is equivalent to fresh, as every call from its own time on
// computes it (a check at or after a state's time refills it linearly, so its expiry is fixed).
inline int64_t PairExpiry(const TwoWordState& s, const Limit& limit) {
  return TokenBucketExact(&s, limit.capacity(), limit.limit, limit.window_ms, s.time, 0).expiry_ms;
}

}  // namespace hot

// A token-bucket check (or, without `consume`, a peek) without a lock: as HotCheckGcra. It serves
// only calls whose clock is not behind the stored time on a state in the exact form (both as
// TokenBucket's own fast path), where the locked path runs the same TokenBucketExact and the
// expiry it writes is PairExpiry of the state it leaves.
inline bool HotCheckPair(HotEntry& e, uint64_t w, const ExpiryCodec& codec, const Limit& limit,
                         int64_t now, int64_t cost, bool consume, LimitResult* r) {
  uint64_t m;
  if (!hot::BoundTo(e, w, limit, /*pair=*/true, &m)) return false;
  const uint32_t gen = hot::GenOfMeta(m);
  uint64_t t = e.tokens.load(std::memory_order_acquire);
  for (int tries = 0; tries < 64; ++tries) {
    const TwoWordState old{codec.FromRel(hot::RelOfPair(w)), static_cast<int64_t>(t)};
    if (old.time > now || (t >> kTokenUnitBits) != 0) return false;
    const Step<TwoWordState> step =
        TokenBucketExact(&old, limit.capacity(), limit.limit, limit.window_ms, now, cost);
    if (!consume || !step.result.allowed || cost == 0) {
      // As HotCheckGcra: what the lock must do is left to it.
      if (step.expiry_ms <= now || (step.result.allowed && cost > 0)) return false;
      // Nothing is written, so the pair read must have been one state: `word` unchanged.
      const uint64_t again = e.word.load(std::memory_order_acquire);
      if (again == w) {
        *r = step.result;
        return true;
      }
      w = again;
      t = e.tokens.load(std::memory_order_acquire);
    } else if (hot::CasPair(e, &w, &t, hot::PairWord(gen, codec.ToRel(step.state.time)),
                            static_cast<uint64_t>(step.state.word))) {
      *r = step.result;
      return true;
    }
    if ((w & hot::kLive) == 0 || hot::GenOfWord(w) != gen) return false;
  }
  return false;
}

// Under the lock: as FoldHot, for a pair. The fold clears the live bit and keeps the rest.
inline void FoldPair(HotEntry& e, Shard& sh, const ExpiryCodec& codec, int64_t now)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  uint64_t w = e.word.load(std::memory_order_acquire);
  uint64_t t = e.tokens.load(std::memory_order_acquire);
  // Lock-free checks may land meanwhile; a failed attempt reads the pair as it is.
  while ((w & hot::kLive) != 0 && !hot::CasPair(e, &w, &t, w & ~hot::kLive, t)) {
  }
  if ((w & hot::kLive) == 0) return;
  hot::SetTag(sh, e.key.load(std::memory_order_relaxed), 0);
  auto it = sh.two.find(e.key.load(std::memory_order_relaxed));
  if (it == sh.two.end()) return;  // cannot happen: every erase of a live key folds it first
  const int64_t rel = hot::RelOfPair(w);
  it->set_rel_time(rel);
  it->word = static_cast<int64_t>(t);
  const TwoWordState state{codec.FromRel(rel), static_cast<int64_t>(t)};
  const Limit limit = hot::LimitOf(e, Algorithm::kTokenBucket);
  it->expiry = codec.Encode(hot::PairExpiry(state, limit),
                            UsageLevel(TokenBucket(&state, limit, now, 0).result));
}

// Under the lock, after a single-limit token-bucket check (or refund, charge) wrote or refreshed
// the slot of `key` to (rel, word) with expiry `expiry_ms`: as BindHot, for a state in the exact
// form whose expiry is PairExpiry's (so a fold writes what the lock wrote). The key's own dead
// pair is revived in its generation only with a time not before the pair's and the same limit.
inline void BindPair(HotEntry* shard_entries, const Shard& sh, uint64_t key, int64_t rel,
                     int64_t word, int64_t expiry_ms, const Limit& limit, const ExpiryCodec& codec)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  HotEntry& e = HotEntryOf(shard_entries, key);
  const uint64_t w = e.word.load(std::memory_order_relaxed);
  if ((w & hot::kLive) != 0) return;  // live for another key
  const uint64_t m = e.meta.load(std::memory_order_relaxed);
  const bool mine = m != 0 && e.key.load(std::memory_order_relaxed) == key;
  if (!mine && e.candidate != key) {
    e.candidate = key;
    return;
  }
  if (word < 0 || (word >> kTokenUnitBits) != 0 || !hot::PairLimitFits(limit) ||
      !hot::PairsSupported() ||
      hot::PairExpiry(TwoWordState{codec.FromRel(rel), word}, limit) != expiry_ms) {
    return;
  }
  uint32_t gen = hot::GenOfMeta(m);
  if (!mine || hot::KOfMeta(m) != hot::kPairK || hot::GenOfWord(w) != gen ||
      hot::RelOfPair(w) > rel || e.limit.load(std::memory_order_relaxed) != limit.limit ||
      e.capacity.load(std::memory_order_relaxed) != limit.capacity()) {
    if (gen >= hot::kMaxGen) return;  // every generation used: this entry stays dead
    ++gen;  // a new binding (else the key's own pair is revived in its generation)
    e.meta.store(hot::MakeMeta(gen, hot::kPairK, 0), std::memory_order_release);
    e.key.store(key, std::memory_order_release);
    hot::SetLimit(e, limit);
  }
  e.tokens.store(static_cast<uint64_t>(word), std::memory_order_relaxed);
  e.word.store(hot::PairWord(gen, rel), std::memory_order_release);
  hot::SetTag(sh, key, hot::TagOf(key));
}

// The lock-free check of a hot key's single GCRA or token-bucket limit (see above).
inline bool HotAlgorithm(Algorithm a) {
  return a == Algorithm::kGcra || a == Algorithm::kTokenBucket;
}
// `w`: LiveWordFor's non-zero reading of the entry.
inline bool HotCheckLive(HotEntry& e, uint64_t w, const ExpiryCodec& codec, const Limit& limit,
                         int64_t now, int64_t cost, bool consume, LimitResult* r) {
  if (limit.algorithm == Algorithm::kTokenBucket) {
    return HotCheckPair(e, w, codec, limit, now, cost, consume, r);
  }
  return HotCheckGcra(e, w, codec, limit, now, cost, consume, r);
}
// The same, of state `key`: false when its entry does not hold it live.
inline bool HotCheck(HotEntry& e, uint64_t key, const ExpiryCodec& codec, const Limit& limit,
                     int64_t now, int64_t cost, bool consume, LimitResult* r) {
  const uint64_t w = hot::LiveWordFor(e, key);
  return w != 0 && HotCheckLive(e, w, codec, limit, now, cost, consume, r);
}

}  // namespace rl::internal

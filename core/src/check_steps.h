// The per-limit steps of a Limiter check over its sharded store (limiter.cc): the work kept for
// each limit between evaluation and write-back, evaluating a limit on the state its table holds,
// and inserting a new state. Inline: they run on every check.
#pragma once

#include <cstdint>
#include <type_traits>

#include "absl/base/attributes.h"
#include "leases.h"
#include "limiter_impl.h"
#include "registry.h"
#include "rl/decision.h"
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

// The per-limit work of one check between evaluation and write-back.
struct Pending {
  uint64_t key;
  uint32_t shard;
  StateShape kind;
  const Slot2* two_slot;  // found state, by table
  const Slot3* three_slot;
  const SlotLog* log_slot;
  const SlotLease* lease_slot;  // set only by peeks and acquires (the only runs that see leases)
  TwoWordState two;
  ThreeWordState three;
  int64_t expiry_ms;
  LogBuf* new_log;       // a log created by this check, to insert
  LeaseBuf* new_leases;  // a lease set created by this acquire, to insert
};
// Room for the most limits a check may name, constructed only as far as used: zeroing all eight
// on every check showed up in profiles.
union PendingArray {
  PendingArray() {}
  Pending items[kMaxLimitsPerCheck];
};
static_assert(std::is_trivially_destructible_v<Pending>);

// The per-table steps of a check, each on one limit's Pending. Evaluate*: find the limit's state
// in its table and evaluate the limit on it (changing nothing). Inline: they run on every check.

ABSL_ATTRIBUTE_ALWAYS_INLINE inline LimitResult EvaluateTwo(Pending& q, const Shard& sh,
                                                            const ExpiryCodec& expiry,
                                                            const Limit& limit, int64_t now,
                                                            int64_t cost)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  auto it = sh.two.find(q.key);
  TwoWordState old;
  if (it != sh.two.end()) {
    q.two_slot = &*it;
    old = TwoWordState{expiry.FromRel(it->rel_time()), it->word};
  }
  const Step<TwoWordState> step =
      TwoWordStep(q.two_slot != nullptr ? &old : nullptr, limit, now, cost);
  q.two = step.state;
  q.expiry_ms = step.expiry_ms;
  return step.result;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline LimitResult EvaluateThree(Pending& q, const Shard& sh,
                                                              const ExpiryCodec& expiry,
                                                              const Limit& limit, int64_t now,
                                                              int64_t cost)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  auto it = sh.three.find(q.key);
  ThreeWordState old;
  if (it != sh.three.end()) {
    q.three_slot = &*it;
    old = ThreeWordState{expiry.FromRel(it->rel_time()), it->previous(), it->current()};
  }
  const Step<ThreeWordState> step =
      ThreeWordStep(q.three_slot != nullptr ? &old : nullptr, limit, now, cost);
  q.three = step.state;
  q.expiry_ms = step.expiry_ms;
  return step.result;
}

inline LimitResult EvaluateLog(Pending& q, const Shard& sh, const Limit& limit, int64_t now,
                               int64_t cost) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  auto it = sh.logs.find(q.key);
  LogBuf* log = nullptr;
  if (it != sh.logs.end()) {
    q.log_slot = &*it;
    log = it->log;
    LogPrune(log, limit.window_ms, now);  // dropping expired runs changes nothing
  }
  return LogEvaluate(log, limit, now, cost, &q.expiry_ms);
}

inline LimitResult EvaluateLeases(Pending& q, const Shard& sh, const Limit& limit, int64_t now)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  auto it = sh.leases.find(q.key);
  const LeaseBuf* leases = nullptr;
  if (it != sh.leases.end()) {
    q.lease_slot = &*it;
    leases = it->leases;
  }
  return LeaseEvaluate(leases, limit, now, &q.expiry_ms);
}

// Inserts the new state of a limit that found none (room was made for it).
inline void InsertNew(Pending& q, Shard& sh, const ExpiryCodec& expiry, uint32_t word)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  switch (q.kind) {
    case StateShape::kTwoWord: {
      Slot2 slot{q.key, word, 0, 0, q.two.word};
      slot.set_rel_time(expiry.ToRel(q.two.time));
      sh.two.insert(slot);
      break;
    }
    case StateShape::kThreeWord: {
      sh.three.insert(
          Slot3(q.key, word, expiry.ToRel(q.three.time), q.three.previous, q.three.current));
      break;
    }
    case StateShape::kLog:
      sh.logs.insert(SlotLog{q.key, word, q.new_log});
      break;
    case StateShape::kLeases:
      sh.leases.insert(SlotLease{q.key, expiry.Encode(q.expiry_ms, kLevelProtected), q.new_leases});
      break;
  }
}

}  // namespace rl::internal::sharded

namespace rl {

// What the phases of one check read: its arguments and `now`. Passed by value to phases that are
// always inlined, so it stays in registers across the calls in between.
struct Limiter::Impl::CheckArgs {
  absl::Span<const Limit> limits;
  size_t n;
  int64_t cost;
  int64_t now;
  LimitResult* results;
  internal::sharded::Pending* p;
};
// The shards one check locked and its state keys (which making room must not evict).
struct Limiter::Impl::CheckFrame {
  uint32_t locked[kMaxLimitsPerCheck];
  uint64_t keys[kMaxLimitsPerCheck];
  size_t lock_count;
};

}  // namespace rl

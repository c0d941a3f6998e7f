// The Limiter: validates a check, locks the shards of its states in a fixed order, evaluates every
// limit, and writes the new states back only when all of them allow (all or nothing).
#include "rl/limiter.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "carry.h"
#include "leases.h"
#include "limiter_impl.h"
#include "rl/key_state.h"
#include "sliding_log.h"
#include "step.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rl {

using internal::LeaseBuf;
using internal::LogBuf;
using internal::Shard;
using internal::Slot2;
using internal::Slot3;
using internal::SlotBlock;
using internal::SlotLease;
using internal::SlotLog;
using internal::StateShape;
using internal::ThreeWordState;
using internal::TwoWordState;

namespace {

constexpr size_t kDefaultShards = 256;
constexpr size_t kMaxShards = 1 << 16;
constexpr size_t kDefaultMaxKeys = size_t{1} << 24;  // 16.7 M
// Budgeting estimate per state for max_memory_bytes (a token-bucket state measures 43-47 B at any
// key count, see SharesFor).
constexpr size_t kBytesPerKeyEstimate = 64;

size_t RoundUpPow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Which entries of the routing table (2^route_bits of them, indexed by a state key's top bits)
// send keys to each shard: shard i owns [first[i], first[i + 1]), and its bounds are that share of
// the limiter's.
//
// absl's tables double when 7/8 full, so a table holds 7/16 to 7/8 of its capacity and its bytes
// per key swing by 2x over its growth cycle. With equal shares every shard grows at the same key
// count and the whole store swings with them: 56.6 B per token-bucket key at 1 M keys, 37.7 at
// 3 M. Unequal shares spread the shards over the cycle instead: shard i of S gets a share
// proportional to 1 / (2S - i - 1/2), so the shards' sizes span one octave, spaced so that as many
// keys sit at each point of the cycle (log2 of its size modulo 1; the shards are denser where they
// are smaller). Every key count then costs the cycle's mean, (8/7) / ln 2 = 1.65 slots per key:
// 43-47 B per token-bucket key at 256 shards (within the table's quantization, 16 entries per
// shard on average; 40-byte keys make no difference, the user's key is never stored). The
// shards' sizes still differ by only 2x, so their locks and sweeps stay balanced. Past 4096
// shards the table (at most 2^16 entries) has no room to weight them: equal shares.
struct ShardShares {
  int route_bits;
  std::vector<size_t> first;  // shards + 1 entries
};
ShardShares SharesFor(size_t shards) {
  const int shard_bits = std::countr_zero(shards);
  ShardShares s{std::clamp(shard_bits + 4, 12, 16), std::vector<size_t>(shards + 1)};
  const size_t entries = size_t{1} << s.route_bits;
  if (shards * 16 > entries) {
    for (size_t i = 0; i <= shards; ++i) s.first[i] = i * (entries / shards);
    return s;
  }
  std::vector<double> cumulative(shards + 1, 0.0);
  for (size_t i = 0; i < shards; ++i) {
    cumulative[i + 1] = cumulative[i] + 1.0 / (2.0 * shards - i - 0.5);
  }
  for (size_t i = 0; i <= shards; ++i) {
    s.first[i] = static_cast<size_t>(std::llround(entries * cumulative[i] / cumulative[shards]));
  }
  return s;
}

// Parts [begin, end) of `total` cut into `parts` equal parts, rounded so that the shares of all
// the parts sum to `total` exactly.
size_t ShareOf(size_t total, size_t begin, size_t end, size_t parts) {
  using u128 = unsigned __int128;
  return static_cast<size_t>(u128{total} * end / parts - u128{total} * begin / parts);
}

uint64_t RandomSeed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

// State keys. (scope, key) is hashed once per check with a seeded 64-bit XXH3: the key's hash is
// seeded with the scope's, so ("ab", "c") and ("a", "bc") stay apart without copying both into
// one buffer. Each limit's key is then a bijective mix of that hash with (algorithm, window), so
// the limits of one check never collide with each other and a check of n limits hashes its
// strings once, not n times. The 128-bit hash over a copied buffer this replaces cost ~140
// instructions per limit.
class KeyHasher {
 public:
  // The empty scope (inline limits, the common case) seeds with the limiter's seed itself, which
  // saves a hash per check; it stands apart from a named scope unless that scope's hash happens
  // to equal the seed (probability 2^-64).
  KeyHasher(std::string_view scope, std::string_view key, uint64_t seed)
      : base_(XXH3_64bits_withSeed(
            key.data(), key.size(),
            scope.empty() ? seed : XXH3_64bits_withSeed(scope.data(), scope.size(), seed))) {}
  uint64_t For(const Limit& limit) const {
    // StateTag is injective in (algorithm, window), and an odd multiplier keeps it so.
    const uint64_t tail =
        internal::StateTag(limit.algorithm, limit.window_ms) * 0x9E3779B97F4A7C15ull;
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

}  // namespace

Limiter::Impl::Impl(LimiterOptions options)
    : clock_(options.clock != nullptr ? options.clock : SteadyClock::Default()),
      expiry_(clock_->NowMs()),
      seed_(RandomSeed()) {
  size_t max_keys = options.max_keys > 0 ? options.max_keys : kDefaultMaxKeys;
  if (options.max_memory_bytes > 0) {
    max_keys =
        std::min(max_keys, std::max<size_t>(1, options.max_memory_bytes / kBytesPerKeyEstimate));
  }
  size_t shards = options.shards;
  if (shards == 0) shards = std::clamp<size_t>(RoundUpPow2(max_keys / 4096), 1, kDefaultShards);
  shards = RoundUpPow2(std::clamp<size_t>(shards, 1, kMaxShards));
  shard_mask_ = shards - 1;
  max_memory_bytes_ = options.max_memory_bytes;
  overflow_ = options.overflow;
  shards_ = std::make_unique<Shard[]>(shards);
  bounds_ = std::make_unique<ShardBounds[]>(shards);
  const ShardShares shares = SharesFor(shards);
  const size_t entries = size_t{1} << shares.route_bits;
  route_shift_ = 64 - shares.route_bits;
  route_ = std::make_unique<uint16_t[]>(entries);
  for (size_t i = 0; i < shards; ++i) {
    for (size_t e = shares.first[i]; e < shares.first[i + 1]; ++e) {
      route_[e] = static_cast<uint16_t>(i);
    }
    // Each shard's bounds are its share of the limiter's, so the shards fill up together and the
    // bounds add up to max_keys (one key at least per shard: a bound below the shard count can
    // only be rounded up). Computed without (max_keys + shards - 1), which wraps for a bound near
    // SIZE_MAX and left one key per shard (issue 10 item 2).
    bounds_[i].max_keys =
        std::max<size_t>(1, ShareOf(max_keys, shares.first[i], shares.first[i + 1], entries));
    bounds_[i].max_bytes = max_memory_bytes_ == 0
                               ? 0
                               : std::max<size_t>(1, ShareOf(max_memory_bytes_, shares.first[i],
                                                             shares.first[i + 1], entries));
  }
  if (options.sweep_interval_ms > 0) {
    const absl::Duration every = absl::Milliseconds(options.sweep_interval_ms);
    sweeper_ = std::thread([this, every] {
      while (!stop_.WaitForNotificationWithTimeout(every)) Sweep(SIZE_MAX);
    });
  }
}

Limiter::Impl::~Impl() {
  stop_.Notify();
  if (sweeper_.joinable()) sweeper_.join();
  for (size_t i = 0; i <= shard_mask_; ++i) {
    internal::ShardLock lock(shards_[i].mu);
    shards_[i].Clear();
  }
}

Limiter::Impl::StateKey Limiter::Impl::KeyFor(std::string_view scope, std::string_view key,
                                              const Limit& limit) const {
  const uint64_t k = KeyHasher(scope, key, seed_).For(limit);
  return {k, ShardOf(k)};
}

Limiter::Impl::StateKey Limiter::Impl::LeaseKeyFor(uint64_t scope_id, std::string_view key) const {
  // Lease sets have a table of their own, so their keys need not stay apart from rate states'.
  uint64_t x =
      XXH3_64bits_withSeed(key.data(), key.size(), seed_ ^ (scope_id * 0xC2B2AE3D27D4EB4Full));
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  return {x, ShardOf(x)};
}

bool Limiter::Impl::Over(const Shard& shard, size_t adding) const {
  const ShardBounds& bounds = BoundsOf(shard);
  const size_t keys = shard.Size() + adding;
  if (keys > bounds.max_keys) return true;
  return bounds.max_bytes > 0 && keys * kBytesPerKeyEstimate + shard.log_bytes > bounds.max_bytes;
}

size_t Limiter::Impl::Excess(const Shard& shard, size_t adding) const {
  const ShardBounds& bounds = BoundsOf(shard);
  const size_t keys = shard.Size() + adding;
  size_t excess = keys > bounds.max_keys ? keys - bounds.max_keys : 1;
  if (bounds.max_bytes > 0) {
    const size_t bytes = keys * kBytesPerKeyEstimate + shard.log_bytes;
    if (bytes > bounds.max_bytes) {
      excess = std::max(
          excess, (bytes - bounds.max_bytes + kBytesPerKeyEstimate - 1) / kBytesPerKeyEstimate);
    }
  }
  return excess;
}

bool Limiter::Impl::MakeRoom(Shard& shard, int64_t now, size_t adding, const uint64_t* keep,
                             size_t keep_count) {
  if (!Over(shard, adding)) return true;
  const uint32_t expired_at = expiry_.ExpiredAt(now);
  if (shard.blocked_left > 0 && expired_at < shard.blocked_until) {
    --shard.blocked_left;
    return false;
  }
  uint32_t soonest = UINT32_MAX;
  while (Over(shard, adding)) {
    if (shard.FreeSafely(Excess(shard, adding), expired_at, keep, keep_count, &soonest) == 0) {
      break;
    }
  }
  if (!Over(shard, adding)) {
    shard.blocked_left = 0;
    return true;
  }
  shard.blocked_until = soonest;
  shard.blocked_left = static_cast<uint32_t>(std::clamp<size_t>(shard.Size() / 16, 16, 1 << 20));
  return false;
}

LimitResult Limiter::Impl::Refused(const Shard& shard, int64_t now, LimitResult r) const {
  // Room appears at the latest when the soonest state the last search saw expires; a shard with
  // nothing to wait for (a bound below one check's states) suggests the limit's window.
  const int64_t wait = shard.blocked_until == UINT32_MAX
                           ? r.window_ms
                           : std::max<int64_t>(1, expiry_.Decode(shard.blocked_until) - now);
  r.allowed = false;
  r.remaining = 0;
  r.retry_after_ms = wait;
  r.reset_after_ms = wait;
  return r;
}

// Penalty blocks (see step.h), after the limits were evaluated: a running block overrides its
// limit's result; then, when the call is denied and has a cost, each limit with BLOCK that denied
// it on its own starts a block (stored when `commit`; a peek reports the block it would start).
// Out of line: only checks of limits with BLOCK come here.
void Limiter::Impl::ApplyBlocks(const void* pending_items, absl::Span<const Limit> limits,
                                LimitResult* results, int64_t now, int64_t cost, bool commit) {
  const Pending* p = static_cast<const Pending*>(pending_items);
  const size_t n = limits.size();
  uint32_t blocked = 0;  // bit i: limit i is under a running block
  bool allowed = true;
  for (size_t i = 0; i < n; ++i) {
    if (limits[i].block_ms > 0) {
      Shard& sh = shards_[p[i].shard];
      sh.mu.AssertHeld();  // by Run's LockShards
      const int64_t until = sh.BlockedUntil(p[i].key, now);
      if (until > now) {
        internal::ApplyBlock(results[i], until, now);
        blocked |= 1u << i;
      }
    }
    allowed = allowed && results[i].allowed;
  }
  if (allowed || cost == 0) return;
  for (size_t i = 0; i < n; ++i) {
    if (((blocked >> i) & 1) || !internal::StartsBlock(limits[i], results[i])) continue;
    const int64_t until = internal::BlockUntil(limits[i], now);
    if (commit) {
      Shard& sh = shards_[p[i].shard];
      sh.mu.AssertHeld();
      auto [it, inserted] = sh.blocks.insert(SlotBlock{p[i].key, until});
      if (!inserted) it->until = until;
    }
    internal::ApplyBlock(results[i], until, now);
  }
}

namespace {

// The per-table steps of a check, each on one limit's Pending. Evaluate*: find the limit's state
// in its table and evaluate the limit on it (changing nothing). Inline: they run on every check.

ABSL_ATTRIBUTE_ALWAYS_INLINE inline LimitResult EvaluateTwo(Pending& q, const Shard& sh,
                                                            const internal::ExpiryCodec& expiry,
                                                            const Limit& limit, int64_t now,
                                                            int64_t cost)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  auto it = sh.two.find(q.key);
  TwoWordState old;
  if (it != sh.two.end()) {
    q.two_slot = &*it;
    old = TwoWordState{expiry.FromRel(it->rel_time()), it->word};
  }
  const internal::Step<TwoWordState> step =
      internal::TwoWordStep(q.two_slot != nullptr ? &old : nullptr, limit, now, cost);
  q.two = step.state;
  q.expiry_ms = step.expiry_ms;
  return step.result;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline LimitResult EvaluateThree(Pending& q, const Shard& sh,
                                                              const internal::ExpiryCodec& expiry,
                                                              const Limit& limit, int64_t now,
                                                              int64_t cost)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  auto it = sh.three.find(q.key);
  ThreeWordState old;
  if (it != sh.three.end()) {
    q.three_slot = &*it;
    old = ThreeWordState{expiry.FromRel(it->rel_time()), it->previous(), it->current()};
  }
  const internal::Step<ThreeWordState> step =
      internal::ThreeWordStep(q.three_slot != nullptr ? &old : nullptr, limit, now, cost);
  q.three = step.state;
  q.expiry_ms = step.expiry_ms;
  return step.result;
}

LimitResult EvaluateLog(Pending& q, const Shard& sh, const Limit& limit, int64_t now, int64_t cost)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  auto it = sh.logs.find(q.key);
  LogBuf* log = nullptr;
  if (it != sh.logs.end()) {
    q.log_slot = &*it;
    log = it->log;
    internal::LogPrune(log, limit.window_ms, now);  // dropping expired runs changes nothing
  }
  return internal::LogEvaluate(log, limit, now, cost, &q.expiry_ms);
}

LimitResult EvaluateLeases(Pending& q, const Shard& sh, const Limit& limit, int64_t now)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  auto it = sh.leases.find(q.key);
  const LeaseBuf* leases = nullptr;
  if (it != sh.leases.end()) {
    q.lease_slot = &*it;
    leases = it->leases;
  }
  return internal::LeaseEvaluate(leases, limit, now, &q.expiry_ms);
}

// Inserts the new state of a limit that found none (room was made for it).
void InsertNew(Pending& q, Shard& sh, const internal::ExpiryCodec& expiry, uint32_t word)
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
      sh.leases.insert(
          SlotLease{q.key, expiry.Encode(q.expiry_ms, internal::kLevelProtected), q.new_leases});
      break;
  }
}

}  // namespace

template <Limiter::Impl::Op kOp, size_t kN>
inline void Limiter::Impl::Apply(std::string_view scope, std::string_view key,
                                 absl::Span<const Limit> limits, int64_t cost, uint64_t nonce,
                                 bool* leased, Decision& out) {
  constexpr bool kCommit = kOp != Op::kPeek;
  // Only a peek or an acquire may name a CONCURRENCY limit, so a check compiles without leases.
  constexpr bool kLeases = kOp != Op::kCheck;
  LimitResult* results = out.limits.data();
  const size_t n = kN != 0 ? kN : limits.size();
  PendingArray pending;
  Pending* p = pending.items;
  uint32_t locked[kMaxLimitsPerCheck];
  uint64_t keys[kMaxLimitsPerCheck];
  int64_t blocks = 0;  // non-zero when some limit has a BLOCK
  {
    const KeyHasher hasher(scope, key, seed_);
    for (size_t i = 0; i < n; ++i) {
      uint64_t k;
      if (kLeases && limits[i].algorithm == Algorithm::kConcurrency) {
        k = LeaseKeyFor(ScopeId(scope), key).key;
      } else {
        k = hasher.For(limits[i]);
      }
      // Only the members read before being written: value-initializing all of Pending (with its
      // LimitResult and states) cost ~27 instructions per limit.
      new (&p[i]) Pending;
      p[i].two_slot = nullptr;
      p[i].three_slot = nullptr;
      p[i].log_slot = nullptr;
      p[i].new_log = nullptr;
      if constexpr (kLeases) {
        p[i].lease_slot = nullptr;
        p[i].new_leases = nullptr;
      }
      p[i].key = keys[i] = k;
      p[i].shard = locked[i] = ShardOf(k);
      p[i].kind = internal::ShapeOf(limits[i].algorithm);
      blocks |= limits[i].block_ms;
    }
  }
  // Whether a pending limit found a stored state.
  auto found = [](const Pending& q) {
    bool f = q.two_slot != nullptr || q.three_slot != nullptr || q.log_slot != nullptr;
    if constexpr (kLeases) f = f || q.lease_slot != nullptr;
    return f;
  };
  const size_t lock_count = LockShards(locked, n);
  // One `now` per check, read under the locks so a check that waited for a lock does not act on
  // a time older than the state it finds. A clock may still answer a time read earlier
  // (rl-server's CommandClock hands out its I/O thread's reading of the batch): every step keeps
  // counting a state newer than `now` (no refill, no new window, log runs at the newest run's
  // time), which can only admit less, never more.
  const int64_t now = clock_->NowMs();

  for (size_t i = 0; i < n; ++i) {
    Pending& q = p[i];
    Shard& sh = shards_[q.shard];
    sh.mu.AssertHeld();  // by LockShards
    switch (q.kind) {
      case StateShape::kTwoWord:
        results[i] = EvaluateTwo(q, sh, expiry_, limits[i], now, cost);
        break;
      case StateShape::kThreeWord:
        results[i] = EvaluateThree(q, sh, expiry_, limits[i], now, cost);
        break;
      case StateShape::kLog:
        results[i] = EvaluateLog(q, sh, limits[i], now, cost);
        break;
      case StateShape::kLeases:
        if constexpr (kLeases) results[i] = EvaluateLeases(q, sh, limits[i], now);
        break;
    }
  }
  if (ABSL_PREDICT_FALSE(blocks != 0)) ApplyBlocks(p, limits, results, now, cost, kCommit);
  // The decision now, while its limits' results are at hand (a refusal below redoes it).
  internal::MakeDecision(n, out);
  const bool allowed = out.allowed;

  // An acquire of cost 0 takes its lease but consumes nothing from its rate limits.
  auto writes = [&](const Pending& q) {
    return kOp != Op::kAcquire || cost > 0 || q.kind == StateShape::kLeases;
  };
  // New states need room before anything is written: at a bound with nothing safe to evict they
  // are not stored, and the overflow mode decides the check (see LimiterOptions::overflow).
  uint32_t unstored = 0;  // bit i: the new state of limit i cannot be stored
  bool write = allowed && kCommit && (cost > 0 || kOp == Op::kAcquire);
  if (write) {
    uint32_t placed = 0;
    for (size_t i = 0; i < n; ++i) {
      const Pending& q = p[i];
      if (found(q) || !writes(q)) continue;
      size_t adding = 1;  // with the new states of this check already placed in its shard
      for (size_t j = 0; j < i; ++j) adding += ((placed >> j) & 1) && p[j].shard == q.shard;
      Shard& sh = shards_[q.shard];
      sh.mu.AssertHeld();
      if (MakeRoom(sh, now, adding, keys, n)) {
        placed |= 1u << i;
      } else {
        unstored |= 1u << i;
      }
    }
    if (ABSL_PREDICT_FALSE(unstored != 0)) {
      Shard& first = shards_[p[__builtin_ctz(unstored)].shard];
      first.mu.AssertHeld();
      ++first.overflows;
      if (overflow_ == FailureMode::kFailClosed) {
        write = false;
        for (size_t i = 0; i < n; ++i) {
          if (((unstored >> i) & 1) == 0) continue;
          Shard& sh = shards_[p[i].shard];
          sh.mu.AssertHeld();
          results[i] = Refused(sh, now, results[i]);
        }
        internal::MakeDecision(n, out);
      }
    }
  }

  if (write) {
    bool logs_grew = false;
    // Update found states first (their slot pointers stay valid until a table grows: making room
    // above only erased other states), then insert new ones.
    for (size_t i = 0; i < n; ++i) {
      Pending& q = p[i];
      if (!writes(q)) continue;
      Shard& sh = shards_[q.shard];
      sh.mu.AssertHeld();
      const uint32_t expiry = expiry_.Encode(q.expiry_ms, internal::UsageLevel(results[i]));
      if (q.kind == StateShape::kLog) {
        if ((unstored >> i) & 1) continue;  // fail-open: allowed, not counted
        LogBuf* log = q.log_slot != nullptr ? q.log_slot->log : nullptr;
        const size_t before = internal::LogBytes(log);
        log = internal::LogAppend(log, limits[i], now, cost);
        sh.log_bytes += internal::LogBytes(log) - before;
        logs_grew = true;
        if (q.log_slot != nullptr) {
          q.log_slot->log = log;
          q.log_slot->expiry = expiry;
        } else {
          q.new_log = log;
        }
      } else if (q.two_slot != nullptr) {
        q.two_slot->set_rel_time(expiry_.ToRel(q.two.time));
        q.two_slot->word = q.two.word;
        q.two_slot->expiry = expiry;
      } else if (q.three_slot != nullptr) {
        q.three_slot->set_rel_time(expiry_.ToRel(q.three.time));
        q.three_slot->set_counts(q.three.previous, q.three.current);
        q.three_slot->expiry = expiry;
      } else if constexpr (kOp == Op::kAcquire) {
        if (q.kind != StateShape::kLeases || ((unstored >> i) & 1)) continue;
        // The lease: held until released or until its ttl has run out.
        const int64_t lease_end = internal::Clamp64(internal::int128{now} + limits[i].window_ms);
        LeaseBuf* leases = q.lease_slot != nullptr ? q.lease_slot->leases : nullptr;
        const size_t before = internal::LeaseBytes(leases);
        leases = internal::LeaseAdd(leases, nonce, lease_end, now);
        sh.lease_bytes += internal::LeaseBytes(leases) - before;
        q.expiry_ms = std::max(q.expiry_ms, lease_end);
        *leased = true;
        if (q.lease_slot != nullptr) {
          q.lease_slot->leases = leases;
          q.lease_slot->expiry = expiry_.Encode(q.expiry_ms, internal::kLevelProtected);
        } else {
          q.new_leases = leases;
        }
      }
    }
    for (size_t i = 0; i < n; ++i) {
      Pending& q = p[i];
      if (found(q) || !writes(q)) continue;
      if ((unstored >> i) & 1) continue;  // fail-open: allowed, not counted
      if (!kLeases && q.kind == StateShape::kLeases) continue;
      Shard& sh = shards_[q.shard];
      sh.mu.AssertHeld();
      InsertNew(q, sh, expiry_, expiry_.Encode(q.expiry_ms, internal::UsageLevel(results[i])));
    }
    // A log that grew may have passed the byte bound; it stays over (a soft bound) when nothing
    // is safe to evict. (New states found room above.)
    if (ABSL_PREDICT_FALSE(logs_grew) && max_memory_bytes_ > 0) {
      for (size_t i = 0; i < lock_count; ++i) {
        Shard& sh = shards_[locked[i]];
        sh.mu.AssertHeld();
        MakeRoom(sh, now, 0, keys, n);
      }
    }
  } else {
    // Nothing consumed. State found fresh-equivalent is dropped here (lazy expiry); the rest
    // only gets its expiry refreshed, which a changed limit may have moved.
    for (size_t i = 0; i < n; ++i) {
      Pending& q = p[i];
      Shard& sh = shards_[q.shard];
      sh.mu.AssertHeld();
      if (!found(q)) continue;
      const uint32_t expiry = expiry_.Encode(q.expiry_ms, internal::UsageLevel(results[i]));
      if (q.expiry_ms <= now) {
        if (sh.Erase(q.kind, q.key)) ++sh.expired;
      } else if (q.two_slot != nullptr) {
        q.two_slot->expiry = expiry;
      } else if (q.three_slot != nullptr) {
        q.three_slot->expiry = expiry;
      } else if (q.log_slot != nullptr) {
        q.log_slot->expiry = expiry;
      } else if constexpr (kLeases) {
        q.lease_slot->expiry = expiry_.Encode(q.expiry_ms, internal::kLevelProtected);
      }
    }
  }
  UnlockShards(locked, lock_count);
  if (ABSL_PREDICT_FALSE(unstored != 0)) out.decided_by = DecidedBy::kOverflow;
}

template <Limiter::Impl::Op kOp>
absl::StatusOr<Decision> Limiter::Impl::Run(std::string_view scope, std::string_view key,
                                            absl::Span<const Limit> limits, int64_t cost,
                                            uint64_t nonce, bool* leased) {
  // One result object, returned by name so the large Decision is built in place.
  absl::StatusOr<Decision> out(absl::in_place, kUnfilledResults);
  if (ABSL_PREDICT_FALSE(kOp == Op::kAcquire || !internal::CheckValid(limits, cost))) {
    absl::Status s = kOp == Op::kCheck  ? internal::ValidateCheck(limits, cost)
                     : kOp == Op::kPeek ? internal::ValidatePeek(limits, cost)
                                        : internal::ValidateAcquire(limits, cost);
    if (!s.ok()) {
      out = std::move(s);
      return out;
    }
  }
  // Checks of one or two limits (the common cases) get instances whose loops the compiler
  // unrolls.
  if (limits.size() == 1) {
    Apply<kOp, 1>(scope, key, limits, cost, nonce, leased, *out);
  } else if (limits.size() == 2) {
    Apply<kOp, 2>(scope, key, limits, cost, nonce, leased, *out);
  } else {
    Apply<kOp, 0>(scope, key, limits, cost, nonce, leased, *out);
  }
  if constexpr (kOp != Op::kCheck) internal::MarkLeases(limits, *out);
  return out;
}

size_t Limiter::Impl::Reset(std::string_view scope, std::string_view key,
                            absl::Span<const Limit> limits) {
  size_t removed = 0;
  for (const Limit& limit : limits) {
    if (!internal::ValidatePeek(absl::MakeConstSpan(&limit, 1), 0).ok()) continue;
    const StateShape kind = internal::ShapeOf(limit.algorithm);
    const StateKey k =
        kind == StateShape::kLeases ? LeaseKeyFor(ScopeId(scope), key) : KeyFor(scope, key, limit);
    Shard& sh = shards_[k.shard];
    internal::ShardLock lock(sh.mu);
    // A reset lifts a penalty block too, whether or not this limit was written with BLOCK.
    const bool state = sh.Erase(kind, k.key);
    const bool block = kind != StateShape::kLeases && sh.blocks.erase(k.key) > 0;
    if (state || block) ++removed;
  }
  return removed;
}

size_t Limiter::Impl::Sweep(size_t budget) {
  const int64_t now = clock_->NowMs();
  const uint32_t expired_at = expiry_.ExpiredAt(now);
  size_t removed = 0;
  for (size_t i = 0; i <= shard_mask_ && removed < budget; ++i) {
    Shard& sh = shards_[sweep_cursor_.fetch_add(1, std::memory_order_relaxed) & shard_mask_];
    internal::ShardLock lock(sh.mu);
    removed += sh.SweepExpired(expired_at, now, budget - removed);
  }
  return removed;
}

LimiterStats Limiter::Impl::Stats() const {
  LimiterStats stats;
  for (size_t i = 0; i <= shard_mask_; ++i) {
    const Shard& sh = shards_[i];
    internal::ShardLock lock(sh.mu);
    stats.keys += sh.Size();
    stats.memory_bytes += sh.MemoryBytes();
    stats.evictions += sh.evictions;
    stats.expired += sh.expired;
    stats.overflows += sh.overflows;
    stats.blocks += sh.blocks.size();
    stats.lease_sets += sh.leases.size();
    stats.max_keys += bounds_[i].max_keys;  // fixed at construction
  }
  stats.memory_bytes += (sizeof(Shard) + sizeof(ShardBounds)) * (shard_mask_ + 1) +
                        sizeof(uint16_t) * (size_t{1} << (64 - route_shift_));
  return stats;
}

size_t Limiter::Impl::KeyCount() const {
  size_t keys = 0;
  for (size_t i = 0; i <= shard_mask_; ++i) {
    internal::ShardLock lock(shards_[i].mu);
    keys += shards_[i].Size();
  }
  return keys;
}

// ---- Limiter: forwards to Impl ----

Limiter::Limiter(LimiterOptions options) : impl_(std::make_unique<Impl>(options)) {}
Limiter::~Limiter() = default;

absl::StatusOr<Decision> Limiter::Check(std::string_view scope, std::string_view key,
                                        absl::Span<const Limit> limits, int64_t cost) {
  return impl_->Run<Impl::Op::kCheck>(scope, key, limits, cost);
}

void Limiter::CarryOver(const Policy& policy, std::string_view key) {
  if (policy.carried_from.empty()) return;
  internal::CarryOver(
      policy,
      [&](const Limit& l) {
        return impl_->Run<Impl::Op::kPeek>(policy.name, key, absl::MakeConstSpan(&l, 1), 0);
      },
      [&](const Limit& l, int64_t amount) {
        (void)impl_->Adjust(policy.name, key, absl::MakeConstSpan(&l, 1), amount,
                            internal::AdjustOp::kCharge);
      },
      [&](const Limit& l) { impl_->Reset(policy.name, key, absl::MakeConstSpan(&l, 1)); });
}

absl::StatusOr<Decision> Limiter::Check(const Policy& policy, std::string_view key, int64_t cost) {
  CarryOver(policy, key);
  absl::StatusOr<Decision> d = impl_->Run<Impl::Op::kCheck>(policy.name, key, policy.limits, cost);
  if (d.ok() && policy.shadow) ApplyShadow(*d);
  return d;
}

absl::StatusOr<Decision> Limiter::Peek(const Policy& policy, std::string_view key, int64_t cost) {
  absl::StatusOr<Decision> d = impl_->Run<Impl::Op::kPeek>(policy.name, key, policy.limits, cost);
  if (d.ok() && policy.shadow) ApplyShadow(*d);
  return d;
}

size_t Limiter::Reset(const Policy& policy, std::string_view key) {
  return impl_->Reset(policy.name, key, policy.limits);
}

absl::StatusOr<Decision> Limiter::Peek(std::string_view scope, std::string_view key,
                                       absl::Span<const Limit> limits, int64_t cost) {
  return impl_->Run<Impl::Op::kPeek>(scope, key, limits, cost);
}

size_t Limiter::Reset(std::string_view scope, std::string_view key,
                      absl::Span<const Limit> limits) {
  return impl_->Reset(scope, key, limits);
}

absl::StatusOr<Lease> Limiter::Acquire(std::string_view scope, std::string_view key,
                                       absl::Span<const Limit> limits, int64_t cost) {
  // The nonce is drawn before the shard locks are taken (it may cost a system call).
  const uint64_t nonce = internal::NewLeaseNonce();
  bool leased = false;
  absl::StatusOr<Decision> d =
      impl_->Run<Impl::Op::kAcquire>(scope, key, limits, cost, nonce, &leased);
  if (!d.ok()) return d.status();
  if (!leased) return Lease(nullptr, std::string(key), "", *d);
  return Lease(this, std::string(key), internal::FormatLeaseId(ScopeId(scope), key, nonce), *d);
}

absl::StatusOr<Lease> Limiter::Acquire(const Policy& policy, std::string_view key, int64_t cost) {
  CarryOver(policy, key);
  absl::StatusOr<Lease> lease = Acquire(policy.name, key, policy.limits, cost);
  if (lease.ok() && policy.shadow) ApplyShadow(lease->decision_);
  return lease;
}

absl::StatusOr<bool> Limiter::Release(std::string_view key, std::string_view lease_id) {
  return impl_->Release(key, lease_id);
}

absl::StatusOr<Decision> Limiter::Refund(std::string_view scope, std::string_view key,
                                         absl::Span<const Limit> limits, int64_t amount) {
  return impl_->Adjust(scope, key, limits, amount, internal::AdjustOp::kRefund);
}

absl::StatusOr<Decision> Limiter::Refund(const Policy& policy, std::string_view key,
                                         int64_t amount) {
  CarryOver(policy, key);
  absl::StatusOr<Decision> d =
      impl_->Adjust(policy.name, key, policy.limits, amount, internal::AdjustOp::kRefund);
  if (d.ok() && policy.shadow) ApplyShadow(*d);
  return d;
}

absl::StatusOr<Decision> Limiter::Charge(std::string_view scope, std::string_view key,
                                         absl::Span<const Limit> limits, int64_t amount) {
  return impl_->Adjust(scope, key, limits, amount, internal::AdjustOp::kCharge);
}

absl::StatusOr<Decision> Limiter::Charge(const Policy& policy, std::string_view key,
                                         int64_t amount) {
  CarryOver(policy, key);
  absl::StatusOr<Decision> d =
      impl_->Adjust(policy.name, key, policy.limits, amount, internal::AdjustOp::kCharge);
  if (d.ok() && policy.shadow) ApplyShadow(*d);
  return d;
}

absl::Status Limiter::ExportState(std::string* out) const { return impl_->ExportState(out); }
absl::Status Limiter::ImportState(std::string_view data) { return impl_->ImportState(data); }
size_t Limiter::Sweep(size_t budget) { return impl_->Sweep(budget); }
LimiterStats Limiter::Stats() const { return impl_->Stats(); }
size_t Limiter::KeyCount() const { return impl_->KeyCount(); }
Clock& Limiter::clock() const { return impl_->clock(); }

}  // namespace rl

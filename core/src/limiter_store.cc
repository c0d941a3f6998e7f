// The Limiter's sharded store and its upkeep: the shards and their routing, each shard's share of
// the bounds, making room within them, resets, the sweep and statistics. The checks that run
// over it are in limiter.cc, refunds, charges and releases in limiter_ops.cc.
#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "check_steps.h"
#include "limiter_impl.h"
#include "rl/key_state.h"
#include "step.h"

namespace rl {

using internal::LeaseBuf;
using internal::LogBuf;
using internal::Shard;
using internal::SlotBlock;
using internal::StateShape;
using internal::sharded::KeyHasher;

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

size_t RoundDownPow2(size_t n) { return n == 0 ? 1 : std::bit_floor(n); }

}  // namespace

size_t ShardsForThreads(size_t threads, size_t max_keys) {
  constexpr size_t kPerThread = 64;
  constexpr size_t kMinKeysPerShard = 256;
  const size_t keys = max_keys > 0 ? max_keys : kDefaultMaxKeys;
  const size_t by_threads =
      RoundUpPow2(std::max(kDefaultShards, std::min(threads, kMaxShards) * kPerThread));
  return std::clamp<size_t>(std::min(by_threads, RoundDownPow2(keys / kMinKeysPerShard)), 1,
                            kMaxShards);
}

namespace {

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
  hot_ = options.hot_keys;
  if (hot_) hot_entries_ = std::make_unique<internal::HotEntry[]>(shards * internal::kHotPerShard);
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
    // SIZE_MAX.
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
  FoldHotAll(shard, now);  // eviction reads every state's level and expiry
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
    if (hot_) internal::FoldHotKey(HotOf(k.shard), sh, k.key, expiry_, clock_->NowMs());
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
    FoldHotAll(sh, now);
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
  stats.shards = shard_mask_ + 1;
  stats.memory_bytes +=
      (sizeof(Shard) + sizeof(ShardBounds)) * (shard_mask_ + 1) +
      sizeof(uint16_t) * (size_t{1} << (64 - route_shift_)) +
      (hot_ ? sizeof(internal::HotEntry) * internal::kHotPerShard : 0) * (shard_mask_ + 1);
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

}  // namespace rl

// Limiter::Impl, shared by limiter.cc (checks, sweeping, stats) and snapshot.cc (export/import).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/synchronization/notification.h"
#include "hot_keys.h"
#include "rl/limiter.h"
#include "step.h"
#include "store.h"

namespace rl {

class Limiter::Impl {
 public:
  explicit Impl(LimiterOptions options);
  ~Impl();

  // What a Run does: a check (consumes when all allow), a peek (changes nothing), or an acquire
  // (a check that also takes a lease of its CONCURRENCY limit).
  using Op = internal::RunOp;
  // One atomic step over the limits of (scope, key). An acquire adds lease `nonce` and sets
  // `*leased` when it stored it. Templated so a check compiles without the rest.
  template <Op kOp>
  absl::StatusOr<Decision> Run(std::string_view scope, std::string_view key,
                               absl::Span<const Limit> limits, int64_t cost, uint64_t nonce = 0,
                               bool* leased = nullptr);
  // Run's body, inline: Limiter::Check of inline limits (rl-server's inline RL.CHECK, and most
  // in-process checks) has it in place instead of forwarding its arguments to Run.
  template <Op kOp>
  ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::StatusOr<Decision> RunInline(
      std::string_view scope, std::string_view key, absl::Span<const Limit> limits, int64_t cost,
      uint64_t nonce, bool* leased);
  // A refund or charge (limiter_ops.cc). A charge with `max_wait_ms` >= 0 applies only when a
  // check of `amount` would pass within that wait (internal::WithinWait), decided under the same
  // locks; it then answers as an admission (internal::AdmitCharged), else as that check denied.
  absl::StatusOr<Decision> Adjust(std::string_view scope, std::string_view key,
                                  absl::Span<const Limit> limits, int64_t amount,
                                  internal::AdjustOp op, int64_t max_wait_ms = -1);
  absl::StatusOr<bool> Release(std::string_view key, std::string_view lease_id);
  size_t Reset(std::string_view scope, std::string_view key, absl::Span<const Limit> limits);
  size_t Sweep(size_t budget);
  LimiterStats Stats() const;
  size_t KeyCount() const;
  Clock& clock() const { return *clock_; }

  absl::Status ExportState(std::string* out, uint64_t* states = nullptr) const;
  absl::Status ImportState(std::string_view data, uint64_t* states = nullptr);

  // The state key of one limit and the shard that holds it.
  struct StateKey {
    uint64_t key;
    uint32_t shard;
  };
  StateKey KeyFor(std::string_view scope, std::string_view key, const Limit& limit) const;
  // The state key of the leases of (scope, key): from the scope's stable id (rl::ScopeId), since a
  // lease id carries that and not the scope's name.
  StateKey LeaseKeyFor(uint64_t scope_id, std::string_view key) const;
  // The shard that holds state key `key` (see route_).
  uint32_t ShardOf(uint64_t key) const { return route_[key >> route_shift_]; }

 private:
  friend class Limiter;
  // Makes room in a locked shard for `adding` more states if that would break a bound, by
  // removing only what is safe to lose (Shard::FreeSafely), never the keys in `keep`. False when
  // the shard stays over its bounds: new states must then not be stored (see
  // LimiterOptions::overflow).
  bool MakeRoom(internal::Shard& shard, int64_t now, size_t adding, const uint64_t* keep,
                size_t keep_count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  // Whether the shard would break a bound holding `adding` more states; how many to free if so.
  bool Over(const internal::Shard& shard, size_t adding) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  size_t Excess(const internal::Shard& shard, size_t adding) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  // The result of a limit whose new state was refused under FailureMode::kFailClosed.
  LimitResult Refused(const internal::Shard& shard, int64_t now, LimitResult r) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);

  Clock* clock_;
  // The least offset from the monotonic clock to the wall-clock frame that snapshots use: the
  // newest wall time this limiter has exported or imported, as an offset, so its time base never
  // runs back past a time it persisted. A snapshot written by a clock that was ahead (or a wall
  // clock stepped back since) then loads as if no time had passed since it was written, rather
  // than with every stored time in the future (see snapshot.cc).
  mutable std::atomic<int64_t> min_to_wall_{INT64_MIN};
  // The offset to use now: the wall clock's, raised to min_to_wall_ and recorded there.
  int64_t ToWall(int64_t mono_now, int64_t floor_wall) const;
  internal::ExpiryCodec expiry_;
  uint64_t seed_;      // replaced by ImportState (before any state exists)
  size_t shard_mask_;  // shard count - 1 (a power of two)
  // The shard of a state key: a table indexed by its top bits, which gives the shards unequal
  // shares of the keys so that their tables do not all grow at the same key count (see
  // SharesFor in limiter_store.cc). absl's tables take a slot's 7-bit tag from a key's low bits and
  // its position from the bits above them, which reach the top bits only past 2^41 slots, so the
  // states of one shard still spread over their table.
  int route_shift_;                    // 64 - log2(table entries)
  std::unique_ptr<uint16_t[]> route_;  // shard index by top bits
  // Locks the distinct shards of `shards[0..n)` in ascending order (sorting them in place);
  // returns how many distinct shards it locked (the first that many entries). A fixed lock order
  // keeps concurrent multi-limit checks deadlock-free. Inline: out of line, the pair showed in a
  // one-limit check's cost. The thread-safety analysis cannot follow a lock set chosen
  // at run time: callers state that a shard is locked with `mu.AssertHeld()` before using it.
  ABSL_ATTRIBUTE_ALWAYS_INLINE size_t LockShards(uint32_t* shards,
                                                 size_t n) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    size_t count = 1;
    if (n == 2) {  // the common multi-limit check, without a call to the sort
      if (shards[1] < shards[0]) std::swap(shards[0], shards[1]);
      count = shards[0] == shards[1] ? 1 : 2;
    } else if (n > 1) {
      std::sort(shards, shards + n);
      count = std::unique(shards, shards + n) - shards;
    }
    for (size_t i = 0; i < count; ++i) shards_[shards[i]].mu.lock();
    return count;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE void UnlockShards(const uint32_t* shards, size_t count) const
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (size_t i = count; i-- > 0;) shards_[shards[i]].mu.unlock();
  }
  // Every shard, in the same order (ImportState); the same caveat.
  void LockAll() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (size_t i = 0; i <= shard_mask_; ++i) shards_[i].mu.lock();
  }
  void UnlockAll() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (size_t i = shard_mask_ + 1; i-- > 0;) shards_[i].mu.unlock();
  }

  // One call's view of the store, for the pipeline (pipeline.h, check_steps.h).
  class Store;

  size_t max_memory_bytes_;  // 0 = none
  FailureMode overflow_;
  std::unique_ptr<internal::Shard[]> shards_;
  // Each shard's share of the limiter's bounds (keys; bytes, 0 = none), in proportion to its share
  // of the keys (see SharesFor in limiter_store.cc), so the shards fill up together. Not in Shard,
  // which they would take past four cache lines. Set in the constructor, read-only after.
  struct ShardBounds {
    size_t max_keys;
    size_t max_bytes;
  };
  std::unique_ptr<ShardBounds[]> bounds_;
  const ShardBounds& BoundsOf(const internal::Shard& shard) const {
    return bounds_[&shard - shards_.get()];
  }
  // The shards' hot entries, kHotPerShard per shard (hot_keys.h); none when
  // LimiterOptions::hot_keys is off (hot_ false).
  bool hot_;
  std::unique_ptr<internal::HotEntry[]> hot_entries_;
  internal::HotEntry* HotOf(uint32_t shard) const {
    return &hot_entries_[size_t{shard} * internal::kHotPerShard];
  }
  // Under the shard's lock, before a pass over its states (sweep, eviction, export): every hot
  // entry's word back in its slot.
  void FoldHotAll(internal::Shard& shard, int64_t now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu) {
    if (hot_) {
      internal::FoldHotAll(HotOf(static_cast<uint32_t>(&shard - shards_.get())), shard, expiry_,
                           now);
    }
  }
  std::atomic<size_t> sweep_cursor_{0};
  absl::Notification stop_;
  std::thread sweeper_;
};

}  // namespace rl

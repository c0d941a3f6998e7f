// Limiter::Impl, shared by limiter.cc (checks, sweeping, stats) and snapshot.cc (export/import).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/synchronization/notification.h"
#include "rl/limiter.h"
#include "store.h"

namespace rl {

class Limiter::Impl {
 public:
  explicit Impl(LimiterOptions options);
  ~Impl();

  absl::StatusOr<Decision> Run(std::string_view scope, std::string_view key,
                               absl::Span<const Limit> limits, int64_t cost, bool commit);
  size_t Reset(std::string_view scope, std::string_view key, absl::Span<const Limit> limits);
  size_t Sweep(size_t budget);
  LimiterStats Stats() const;
  size_t KeyCount() const;
  Clock& clock() const { return *clock_; }

  absl::Status ExportState(std::string* out) const;
  absl::Status ImportState(std::string_view data);

  // The state key of one limit and the shard that holds it.
  struct StateKey {
    uint64_t key;
    uint32_t shard;
  };
  StateKey KeyFor(std::string_view scope, std::string_view key, const Limit& limit) const;

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
  internal::ExpiryCodec expiry_;
  uint64_t seed_;  // replaced by ImportState (before any state exists)
  size_t shard_mask_;
  size_t max_keys_per_shard_;
  size_t max_bytes_per_shard_;  // 0 = none
  FailureMode overflow_;
  std::unique_ptr<internal::Shard[]> shards_;
  std::atomic<size_t> sweep_cursor_{0};
  absl::Notification stop_;
  std::thread sweeper_;
};

}  // namespace rl

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

  absl::Status ExportState(std::string* out, uint64_t* states = nullptr) const;
  absl::Status ImportState(std::string_view data, uint64_t* states = nullptr);

  // The state key of one limit and the shard that holds it.
  struct StateKey {
    uint64_t key;
    uint32_t shard;
  };
  StateKey KeyFor(std::string_view scope, std::string_view key, const Limit& limit) const;

 private:
  friend class Limiter;
  // Evicts from a locked shard while it is over its bounds, keeping `keep`.
  void MakeRoom(internal::Shard& shard, int64_t now, const uint64_t* keep, size_t keep_count)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  bool Over(const internal::Shard& shard) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);

  Clock* clock_;
  internal::ExpiryCodec expiry_;
  uint64_t seed_;  // replaced by ImportState (before any state exists)
  size_t shard_mask_;
  size_t max_keys_per_shard_;
  size_t max_bytes_per_shard_;  // 0 = none
  std::unique_ptr<internal::Shard[]> shards_;
  std::atomic<size_t> sweep_cursor_{0};
  absl::Notification stop_;
  std::thread sweeper_;
};

}  // namespace rl

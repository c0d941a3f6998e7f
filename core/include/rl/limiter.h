// The in-process rate limiter: a lock-sharded store of per-key algorithm state. Thread-safe;
// every check is one atomic read-modify-write over all the limits it names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rl/clock.h"
#include "rl/decision.h"
#include "rl/limit.h"

namespace rl {

struct LimiterOptions {
  size_t shards = 0;                 // 0 = automatic; rounded up to a power of two
  size_t max_keys = 0;               // 0 = default (large enough for at least 10 M keys)
  size_t max_memory_bytes = 0;       // 0 = no byte bound beyond max_keys
  int64_t sweep_interval_ms = 1000;  // background removal of expired state; 0 = no thread
  Clock* clock = nullptr;            // not owned; null = SteadyClock::Default()
};

struct LimiterStats {
  uint64_t keys = 0;          // live states
  uint64_t memory_bytes = 0;  // estimated bytes held by states and tables
  uint64_t evictions = 0;     // states dropped because a bound was reached
  uint64_t expired = 0;       // states dropped because they became equivalent to fresh
};

class Limiter {
 public:
  explicit Limiter(LimiterOptions options = {});
  ~Limiter();
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;

  // Checks every limit for (scope, key) and, only when all allow, consumes `cost` from each: all
  // or nothing. `scope` separates namespaces (a policy name; "" for inline limits), and each limit
  // has its own state under (scope, key, algorithm, window). cost 0 peeks; cost < 0 is an error;
  // cost above a limit's capacity is denied with retry_after_ms = kRetryNever and changes nothing.
  absl::StatusOr<Decision> Check(std::string_view scope, std::string_view key,
                                 absl::Span<const Limit> limits, int64_t cost = 1);
  // A policy's limits under the policy's name. Shadow mode is the caller's to apply.
  absl::StatusOr<Decision> Check(const Policy& policy, std::string_view key, int64_t cost = 1);
  // What Check would answer, changing nothing.
  absl::StatusOr<Decision> Peek(std::string_view scope, std::string_view key,
                                absl::Span<const Limit> limits, int64_t cost = 1);
  // Removes the states of these limits for (scope, key); returns how many existed.
  size_t Reset(std::string_view scope, std::string_view key, absl::Span<const Limit> limits);

  // Removes up to `budget` expired states (those equivalent to fresh); returns how many.
  size_t Sweep(size_t budget = SIZE_MAX);
  LimiterStats Stats() const;
  size_t KeyCount() const;
  Clock& clock() const;

  // Snapshots, so a restart does not hand every client a fresh burst. ExportState serializes all
  // live states and the key-hash seed, with times converted to wall-clock (Clock::WallMs) so they
  // mean the same after a restart; versioned and checksummed. ImportState loads one into a limiter
  // that holds no state yet and has at most as many shards as the exporter (the default does),
  // dropping states that are fresh by now. Errors: corrupt or foreign data, a non-empty limiter.
  absl::Status ExportState(std::string* out) const;
  absl::Status ImportState(std::string_view data);
  // The same, also counting the states as they are written (*states: exactly the records in
  // *out, however many checks ran meanwhile) or read (*states: records in the snapshot; the
  // limiter keeps those not fresh by now, KeyCount()).
  absl::Status ExportState(std::string* out, uint64_t* states) const;
  absl::Status ImportState(std::string_view data, uint64_t* states);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rl

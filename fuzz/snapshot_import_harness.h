// The engine's snapshot loader (rl::Limiter::ImportState) on arbitrary bytes. The trailing
// XXH64 is recomputed first, so mutations reach the record parser instead of stopping at the
// checksum. Checked on every input:
// - a refused snapshot leaves the limiter empty (validation comes before any change);
// - an accepted one keeps at most the records it read;
// - checks, peeks, resets and sweeps over the imported state (the seeds hold keys k0..k3 of
//   scope "s" under every algorithm, so mutated state values reach the algorithms) succeed with
//   replies inside the contract: remaining within [0, limit], retry-after >= -1, reset >= 0;
// - what the limiter exports afterwards imports again, with as many records.
// Shared by fuzz/snapshot_import_fuzz.cc and the corpus replay test.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "rl/clock.h"
#include "rl/limiter.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rl::fuzz {

// The limits the seeds' states were made with (fuzz/make_seeds.cc).
inline std::vector<Limit> SeedLimits() {
  return {{Algorithm::kTokenBucket, 10, 60000},  {Algorithm::kGcra, 7, 60000, 9},
          {Algorithm::kSlidingLog, 5, 60000},    {Algorithm::kSlidingWindow, 10, 60000},
          {Algorithm::kFixedWindow, 5, 3600000}, {Algorithm::kLeakyBucket, 10, 60000, 4}};
}

inline constexpr int64_t kSeedMonoMs = 1'000'000;
inline constexpr int64_t kSeedWallMs = 1'700'000'000'000;

// Replaces the last 8 bytes with the XXH64 of the rest (what a valid snapshot ends with).
inline void FixChecksum(std::string* data, size_t begin, size_t end) {
  if (end - begin < 16) return;
  uint64_t sum = XXH64(data->data() + begin, end - begin - 8, 0);
  std::memcpy(data->data() + end - 8, &sum, 8);
}

inline void CheckDecision(const Decision& d) {
  FUZZ_CHECK(d.count >= 1 && d.count <= kMaxLimitsPerCheck);
  FUZZ_CHECK(d.binding < d.count);
  for (size_t i = 0; i < d.count; ++i) {
    const LimitResult& r = d.limits[i];
    FUZZ_CHECK(r.remaining >= 0);
    FUZZ_CHECK(r.remaining <= r.limit);
    FUZZ_CHECK(r.retry_after_ms >= kRetryNever);
    FUZZ_CHECK(r.reset_after_ms >= 0);
  }
  FUZZ_CHECK(d.remaining >= 0 && d.retry_after_ms >= kRetryNever && d.reset_after_ms >= 0);
}

// Exercises a limiter that holds imported state.
inline void UseImportedState(Limiter& limiter, ManualClock& clock) {
  const std::vector<Limit> limits = SeedLimits();
  for (int64_t step : {0, 1, 999, 59'000, 3'600'000}) {
    clock.Advance(step);
    for (int k = 0; k < 4; ++k) {
      const std::string key = "k" + std::to_string(k);
      for (const Limit& l : limits) {
        for (int64_t cost : {0, 1, 3}) {
          auto peek = limiter.Peek("s", key, {l}, cost);
          FUZZ_CHECK(peek.ok());
          CheckDecision(*peek);
          auto d = limiter.Check("s", key, {l}, cost);
          FUZZ_CHECK(d.ok());
          CheckDecision(*d);
        }
      }
      auto all = limiter.Check("s", key, limits, 1);
      FUZZ_CHECK(all.ok());
      CheckDecision(*all);
    }
    (void)limiter.Sweep();
    (void)limiter.Stats();
  }
  (void)limiter.Reset("s", "k0", limits);
}

inline void RunSnapshotImport(std::string_view input) {
  std::string data(input);
  FixChecksum(&data, 0, data.size());
  ManualClock clock(kSeedMonoMs, kSeedWallMs);
  // One shard accepts a snapshot of any shard count (a limiter may not have more than its
  // snapshot), so the records are what gets tested.
  Limiter limiter(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  uint64_t read = 0;
  if (!limiter.ImportState(data, &read).ok()) {
    FUZZ_CHECK(limiter.KeyCount() == 0);
    return;
  }
  FUZZ_CHECK(limiter.KeyCount() <= read);
  UseImportedState(limiter, clock);
  std::string again;
  uint64_t written = 0;
  FUZZ_CHECK(limiter.ExportState(&again, &written).ok());
  FUZZ_CHECK(written == limiter.KeyCount());
  Limiter copy(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  uint64_t reread = 0;
  FUZZ_CHECK(copy.ImportState(again, &reread).ok());
  FUZZ_CHECK(reread == written);
  FUZZ_CHECK(copy.KeyCount() <= reread);
}

}  // namespace rl::fuzz

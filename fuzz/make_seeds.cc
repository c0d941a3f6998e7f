// Writes the binary seed corpora of the snapshot fuzz targets: engine snapshots
// (corpus/snapshot_import) and rl-server snapshot files (corpus/snapshot_file) holding states of
// keys k0..k3 of scope "s" under every algorithm (the harnesses check those keys), at several
// ages, shard counts and policy sets. Run after a snapshot format change (the fuzz tree builds it
// only when asked):
//   cmake --build build/fuzz-rl --target make_seeds && build/fuzz-rl/make_seeds fuzz/corpus
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "snapshot_file_harness.h"
#include "snapshot_format.h"
#include "snapshot_import_harness.h"

namespace {

using rl::fuzz::kSeedMonoMs;
using rl::fuzz::kSeedWallMs;

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  std::printf("%s: %zu bytes\n", path.c_str(), bytes.size());
}

// An engine snapshot after `rounds` checks of every seed key and limit, `age_ms` before export.
std::string EngineSnapshot(size_t shards, int rounds, int64_t age_ms, bool all_at_once) {
  rl::ManualClock clock(kSeedMonoMs - age_ms, kSeedWallMs - age_ms);
  rl::Limiter limiter(
      rl::LimiterOptions{.shards = shards, .sweep_interval_ms = 0, .clock = &clock});
  const auto limits = rl::fuzz::SeedLimits();
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < 4; ++k) {
      const std::string key = "k" + std::to_string(k);
      if (all_at_once) {
        (void)limiter.Check("s", key, limits, 1 + k % 2);
      } else {
        for (const auto& l : limits) (void)limiter.Check("s", key, {l}, 1 + k % 2);
      }
    }
    clock.Advance(250);
  }
  std::string out;
  (void)limiter.ExportState(&out);
  return out;
}

std::string ServerFile(const std::string& engine, bool with_policies) {
  std::vector<rl::server::SavedPolicy> policies;
  if (with_policies) {
    policies = {{"api", "GCRA 10 1s", true},
                {"login", "SLIDING_LOG 5 1m FAIL_CLOSED", true},
                {"search-trial", "GCRA 30 1m SHADOW", true},
                {"from-file", "TOKEN_BUCKET 10 1h", false},
                {"two", "SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d", true},
                {"outbound", "LEAKY_BUCKET 20 1s BURST 40", true}};
  }
  std::string prefix, suffix;
  rl::server::EncodeSnapshot(kSeedWallMs, 24, policies, engine, &prefix, &suffix);
  return prefix + engine + suffix;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::string empty = EngineSnapshot(1, 0, 0, false);
  const std::string fresh = EngineSnapshot(1, 3, 0, false);
  const std::string exhausted = EngineSnapshot(1, 12, 0, true);
  const std::string old = EngineSnapshot(4, 6, 30'000, false);
  Write(dir + "/snapshot_import/empty", empty);
  Write(dir + "/snapshot_import/three_rounds", fresh);
  Write(dir + "/snapshot_import/exhausted_multi", exhausted);
  Write(dir + "/snapshot_import/four_shards_30s_old", old);
  Write(dir + "/snapshot_file/no_policies", ServerFile(fresh, false));
  Write(dir + "/snapshot_file/policies_and_state", ServerFile(exhausted, true));
  Write(dir + "/snapshot_file/policies_empty_engine", ServerFile(empty, true));
  return 0;
}

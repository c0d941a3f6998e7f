// rl-server's snapshot file reader on arbitrary bytes, the way Snapshotter::Load runs it:
// ParseSnapshot (container, policy records, the policies to restore) then the engine import.
// Both checksums (the container's and the engine's inside it) are recomputed first, so
// mutations reach the parsers. Checked on every input:
// - every restored policy is a runtime one the config file does not define, and its spec
//   round-trips through FormatPolicy / ParsePolicy and can be defined in a registry;
// - a decoded container encodes back to a file that decodes the same;
// - the engine import keeps at most what it read, and its state can be used (as in
//   snapshot_import_harness.h).
// Shared by fuzz/snapshot_file_fuzz.cc and the corpus replay test.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.h"
#include "rl/limit.h"
#include "rl/limiter.h"
#include "rl/policy_registry.h"
#include "snapshot_format.h"
#include "snapshot_import_harness.h"

namespace rl::fuzz {

// The config file's policies in the harness: "api" is authoritative, never restored.
inline const std::vector<std::pair<std::string, std::string>>& SeedConfigPolicies() {
  static const std::vector<std::pair<std::string, std::string>> kPolicies = {{"api", "GCRA 10 1s"}};
  return kPolicies;
}

inline void RunSnapshotFile(std::string_view input) {
  std::string data(input);
  // The outer checksum first, so the container decodes; then the engine's (which changes the
  // bytes the outer one covers), then the outer one again.
  FixChecksum(&data, 0, data.size());
  server::DecodedSnapshot probe;
  if (server::DecodeSnapshot(data, &probe).ok() && !probe.state.empty()) {
    const size_t begin = static_cast<size_t>(probe.state.data() - data.data());
    FixChecksum(&data, begin, begin + probe.state.size());
    FixChecksum(&data, 0, data.size());
  }

  server::DecodedSnapshot snap;
  std::vector<Policy> restore;
  if (!server::ParseSnapshot(data, SeedConfigPolicies(), &snap, &restore).ok()) return;
  PolicyRegistry registry;
  for (const Policy& p : restore) {
    FUZZ_CHECK(p.name != "api");
    bool runtime = false;
    for (const server::SavedPolicy& saved : snap.policies) {
      runtime = runtime || (saved.runtime && saved.name == p.name);
    }
    FUZZ_CHECK(runtime);
    const std::string spec = FormatPolicy(p);
    auto again = ParsePolicy(p.name, std::string_view(spec));
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(FormatPolicy(*again) == spec);
    (void)registry.Set(p);  // may refuse (e.g. a name the registry does not take); never crash
  }

  std::string prefix, suffix;
  server::EncodeSnapshot(snap.saved_wall_ms, snap.states, snap.policies, snap.state, &prefix,
                         &suffix);
  const std::string encoded = prefix + std::string(snap.state) + suffix;
  server::DecodedSnapshot decoded;
  FUZZ_CHECK(server::DecodeSnapshot(encoded, &decoded).ok());
  FUZZ_CHECK(decoded.policies.size() == snap.policies.size());
  for (size_t i = 0; i < decoded.policies.size(); ++i) {
    FUZZ_CHECK(decoded.policies[i].name == snap.policies[i].name);
    FUZZ_CHECK(decoded.policies[i].spec == snap.policies[i].spec);
    FUZZ_CHECK(decoded.policies[i].runtime == snap.policies[i].runtime);
  }
  FUZZ_CHECK(decoded.state == snap.state);

  ManualClock clock(kSeedMonoMs, kSeedWallMs);
  Limiter limiter(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  uint64_t read = 0;
  if (!limiter.ImportState(snap.state, &read).ok()) {
    FUZZ_CHECK(limiter.KeyCount() == 0);
    return;
  }
  FUZZ_CHECK(limiter.KeyCount() <= read);
  UseImportedState(limiter, clock);
}

}  // namespace rl::fuzz

// The rl-server snapshot file's format, apart from any file I/O or server state, so the loader
// can be fuzzed on its own (fuzz/snapshot_file_fuzz.cc) exactly as Snapshotter::Load runs it.
//
// Layout (little-endian): "RLSRVSNP", u32 version, u32 flags (0), i64 wall ms at save, u64
// states at save, u32 policy count, per policy {u8 runtime, u32 name length, name, u32 spec
// length, spec (FormatPolicy)}, u64 length of the engine snapshot, the engine snapshot
// (Limiter::ExportState: its own version and checksum, times in wall-clock ms), then u64 XXH64
// of everything before it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "rl/limit.h"

namespace rl::server {

// One policy as a snapshot stores it.
struct SavedPolicy {
  std::string name;
  std::string spec;      // FormatPolicy text; ParsePolicy round-trips it
  bool runtime = false;  // defined by RL.POLICY SET (the config file's own are not restored)
};

// A decoded snapshot file; `state` points into the decoded buffer.
struct DecodedSnapshot {
  int64_t saved_wall_ms = 0;
  uint64_t states = 0;
  std::vector<SavedPolicy> policies;
  std::string_view state;
};

// The container without the engine bytes: header + policies + state length (prefix) and the
// checksum over prefix + state (suffix). Split so a save never copies the engine snapshot.
void EncodeSnapshot(int64_t saved_wall_ms, uint64_t states,
                    const std::vector<SavedPolicy>& policies, std::string_view state,
                    std::string* prefix, std::string* suffix);
// Verifies magic, version, bounds and checksum. Errors name what is wrong; never crashes.
absl::Status DecodeSnapshot(std::string_view data, DecodedSnapshot* out);
// What a load does before it touches the engine: decodes `data` and parses the runtime policies
// to restore, leaving out those the config file defines (`config_policies`: it is authoritative
// for them). Any error means nothing may be restored. The caller then imports `out->state`.
absl::Status ParseSnapshot(std::string_view data,
                           const std::vector<std::pair<std::string, std::string>>& config_policies,
                           DecodedSnapshot* out, std::vector<rl::Policy>* restore);

}  // namespace rl::server

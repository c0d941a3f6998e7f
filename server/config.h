// rl-server settings: command-line flags (Boost.Program_options) over a TOML config file
// (toml++), plus the named policies the file defines. Flags given on the command line win over
// the file; the file's [policies] table is re-read on SIGHUP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "rl/limiter.h"

namespace rl::server {

struct ServerConfig {
  int port = 6380;                 // 0 = any free port (printed on stdout when ready)
  std::string bind = "127.0.0.1";
  int threads = 0;                 // 0 = one per core
  std::string requirepass;         // empty = no authentication
  std::string config_file;
  int64_t maxclients = 10000;
  int64_t timeout_s = 0;           // idle seconds before a client is closed; 0 = never
  size_t max_keys = 0;             // limiter bound; 0 = engine default
  size_t max_memory = 0;           // limiter bound in bytes; 0 = none
  // New keys when a bound is reached and nothing is safe to evict (see
  // rl::LimiterOptions::overflow).
  rl::FailureMode overflow = rl::FailureMode::kFailOpen;
  bool protected_mode = true;      // refuse a non-loopback bind without a password
  size_t client_output_limit = 64 << 20;  // bytes of unsent replies before a client is dropped
  size_t client_query_limit = 1 << 30;    // bytes of unparsed input kept for one client
  bool quiet = false;              // no log lines on stderr
  std::string snapshot_file;       // limiter state + policies; empty = no snapshots
  int64_t snapshot_interval_ms = 3000;  // periodic save; also on SIGTERM/SIGINT
  bool snapshot_strict = false;    // refuse to start when the snapshot cannot be loaded
  int metrics_port = 0;            // Prometheus GET /metrics on --bind; 0 = off
  // (name, spec) from the config file's [policies] table, in file order.
  std::vector<std::pair<std::string, std::string>> policies;
};

// What ParseCommandLine decided: run with `config`, or exit with `exit_code` (after --help,
// --version or an error that has already been printed).
struct CommandLine {
  ServerConfig config;
  bool exit_now = false;
  int exit_code = 0;
};

// Parses argv, then loads --config FILE (if any) under the flags. Prints help or errors itself.
CommandLine ParseCommandLine(int argc, char** argv);

// Reads a TOML config file into `config`: settings the command line did not set, and the
// [policies] table. `keep` names settings that must not be overwritten (set by flags).
absl::Status LoadConfigFile(const std::string& path, const std::vector<std::string>& keep,
                            ServerConfig* config);

// Only the [policies] table of a config file, for SIGHUP reloads.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> LoadPolicies(
    const std::string& path);

// "fail-open" / "fail-closed" (case-insensitive) -> the mode; its name back.
absl::StatusOr<rl::FailureMode> ParseOverflowMode(std::string_view text);
std::string_view OverflowModeName(rl::FailureMode mode);

// "1048576", "64mb", "1gb", "512kb" -> bytes (case-insensitive units as in redis.conf).
absl::StatusOr<size_t> ParseMemorySize(std::string_view text);

// Whether `bind` only reaches this machine (127.0.0.0/8, ::1, localhost).
bool IsLoopbackAddress(const std::string& bind);

}  // namespace rl::server

// rl-server settings: command-line flags (Boost.Program_options, flags.cc) over a TOML config
// file (toml++), plus the named policies the file defines. Flags given on the command line win
// over the file; the file's [policies] table is re-read on SIGHUP. Every setting is a row of
// Settings() (settings.h), which flags, file, CONFIG GET and --help come from; a numeric one's
// row also has one in NumericSettings() (name, unit, range) that both the flags and the file are
// checked against, so "-1", an overflow or a wrapped value is refused the same way from either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rl/limiter.h"

namespace rl::server {

// Who may run DEBUG (Redis 7's enable-debug-command): nobody (the default), every client, or
// only clients connected from this machine (a loopback peer). DEBUG moves the server's clock and
// forces sweeps, for tests; it has no place in production.
enum class DebugCommandMode { kNo, kYes, kLocal };

struct ServerConfig {
  int port = 6380;  // 0 = any free port (printed on stdout when ready)
  std::string bind = "127.0.0.1";
  int threads = 0;          // 0 = one per core
  std::string requirepass;  // empty = no authentication
  std::string config_file;
  int64_t maxclients = 10000;
  int64_t timeout_s = 0;  // idle seconds before a client is closed; 0 = never
  size_t max_keys = 0;    // limiter bound; 0 = engine default
  size_t max_memory = 0;  // limiter bound in bytes; 0 = none
  // New keys when a bound is reached and nothing is safe to evict (see
  // rl::LimiterOptions::overflow).
  rl::FailureMode overflow = rl::FailureMode::kFailOpen;
  bool protected_mode = true;             // refuse a non-loopback bind without a password
  size_t client_output_limit = 64 << 20;  // bytes of unsent replies before a client is dropped
  // Input: one bulk argument, one client's unparsed bytes, and all clients' input buffers
  // together (a client whose buffer would grow past either limit is disconnected).
  size_t proto_max_bulk_len = 512 << 10;
  size_t client_query_limit = 16 << 20;
  size_t client_query_total = 256 << 20;
  bool quiet = false;                   // no log lines on stderr
  std::string snapshot_file;            // limiter state + policies; empty = no snapshots
  int64_t snapshot_interval_ms = 3000;  // periodic save; also on SIGTERM/SIGINT
  bool snapshot_strict = false;         // refuse to start when the snapshot cannot be loaded
  int metrics_port = 0;                 // Prometheus GET /metrics on --bind; 0 = off
  // How long SIGTERM/SIGINT waits for clients to take their replies before closing them.
  int64_t shutdown_grace_ms = 5000;
  DebugCommandMode enable_debug_command = DebugCommandMode::kNo;
  // Envoy's rate limit service (gRPC ShouldRateLimit, envoy/service/): its port on --bind (0 =
  // off), the directory of envoyproxy/ratelimit YAML rule files (re-read on
  // SIGHUP), whether answers carry RateLimit headers, where state lives ("" = this server's engine;
  // "host:port" = an rl-server; "cluster:host:port[,host:port...]" = a Redis Cluster with rl.so),
  // the backend's time budget per call, and the largest request message accepted.
  int envoy_port = 0;
  std::string envoy_rules;
  bool envoy_headers = false;
  std::string envoy_backend;
  int64_t envoy_backend_timeout_ms = 15;
  size_t envoy_max_message = 64 << 10;
  // (name, spec) from the config file's [policies] table, in file order.
  std::vector<std::pair<std::string, std::string>> policies;
  // The settings given on the command line (flag names without "--"): they win over the file,
  // at start and on every reload.
  std::vector<std::string> command_line_flags;
};

// How a numeric setting is written: a plain count, a byte size ("64mb" or an integer) or a
// duration ("3s" or an integer of milliseconds).
enum class SettingUnit { kCount, kBytes, kDurationMs };

struct NumericSetting {
  std::string_view name;  // the flag without "--", and the TOML key
  SettingUnit unit;
  int64_t min;
  int64_t max;
  void (*set)(ServerConfig& config, int64_t value);  // value already within [min, max]
  int64_t (*get)(const ServerConfig& config);
  std::string_view help;
};

// Every numeric setting, in --help order.
absl::Span<const NumericSetting> NumericSettings();
// The row of `name`, or null.
const NumericSetting* FindNumericSetting(std::string_view name);
// Parses `text` as `setting` is written and checks its range. Errors name the setting and the
// accepted range, e.g. "--max-keys: '-1' is not an integer in 0..4294967296".
absl::StatusOr<int64_t> ParseNumericSetting(const NumericSetting& setting, std::string_view text);
// The default of a setting as a user would type it ("64mb", "3s", "10000").
std::string FormatNumericSetting(const NumericSetting& setting, int64_t value);
// Checks between settings (after flags and file): e.g. a bulk must fit a client's buffer.
absl::Status CheckConfig(const ServerConfig& config);

// What ParseCommandLine decided: run with `config`, or exit with `exit_code` (after --help,
// --version or an error that has already been printed: 2 for a command line that cannot be
// parsed, such as an unknown flag; 1 for a value or config file that is refused).
struct CommandLine {
  ServerConfig config;
  bool exit_now = false;
  int exit_code = 0;
  bool check_only = false;  // --check-config: validate, report, exit
};

// Parses argv, then loads --config FILE (if any) under the flags. Prints help or errors itself.
CommandLine ParseCommandLine(int argc, char** argv);

// Reads a TOML config file into `config`: settings the command line did not set, and the
// [policies] table. `keep` names settings that must not be overwritten (set by flags). A path
// that is not a readable regular file (a directory, a FIFO, no permission) is an error.
absl::Status LoadConfigFile(const std::string& path, const std::vector<std::string>& keep,
                            ServerConfig* config);
// The same from TOML text already read (`source` names it in errors).
absl::Status LoadConfigText(std::string_view text, std::string_view source,
                            const std::vector<std::string>& keep, ServerConfig* config);

// What start does after the flags and the file: the checks between settings (CheckConfig) and
// the defaults that depend on the machine (threads 0 = one per core).
absl::Status FinishConfig(ServerConfig* config);

// Only the [policies] table of a config file (same file checks).
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> LoadPolicies(
    const std::string& path);
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> LoadPoliciesText(
    std::string_view text, std::string_view source);

// "yes" / "true" / "1" and "no" / "false" / "0" (case-insensitive), as redis.conf's booleans.
absl::StatusOr<bool> ParseYesNo(std::string_view text);

// "fail-open" / "fail-closed" (case-insensitive) -> the mode; its name back.
absl::StatusOr<rl::FailureMode> ParseOverflowMode(std::string_view text);
std::string_view OverflowModeName(rl::FailureMode mode);

// "no" / "yes" / "local" (case-insensitive), as Redis's enable-debug-command; its name back.
absl::StatusOr<DebugCommandMode> ParseDebugCommandMode(std::string_view text);
std::string_view DebugCommandModeName(DebugCommandMode mode);

// "1048576", "64mb", "1gb", "512kb" -> bytes (case-insensitive units as in redis.conf).
absl::StatusOr<size_t> ParseMemorySize(std::string_view text);

// Whether `bind` only reaches this machine (127.0.0.0/8, ::1, localhost).
bool IsLoopbackAddress(const std::string& bind);

}  // namespace rl::server

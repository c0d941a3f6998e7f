// Config reloads (SIGHUP): the whole file is checked as start checks it (every setting, every
// policy) before anything changes; only its policies apply to the running server, and each other
// setting the file changed is named as waiting for a restart. The outcome of the last reload is
// kept for INFO (server section) and /metrics, so a reload that failed is visible where
// monitoring looks, not only in the log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "config.h"

namespace rl::server {

struct ServerState;

// The whole config file read again as start read it, for SIGHUP: `running` with every setting the
// file may set back at its default unless the command line gave it, then the file, then
// FinishConfig. An error names what start would have refused.
absl::StatusOr<ServerConfig> ReloadConfigFile(const ServerConfig& running);

// The settings (TOML key names) whose values differ between `a` and `b`, each with its change,
// e.g. "maxclients (10000 -> 5)"; a password's value is not shown. The policies are not compared.
std::vector<std::string> ChangedSettings(const ServerConfig& a, const ServerConfig& b);

struct ReloadStatus {
  std::string last = "none";  // none | ok | error
  int64_t last_wall_ms = 0;   // Unix ms of the last reload; 0 = never
  std::string message;        // what the log said about it
  uint64_t ok = 0;
  uint64_t failed = 0;
  // Settings the file changes that only a restart applies ("maxclients (10000 -> 5)").
  std::vector<std::string> restart_pending;
};

// Thread-safe: written by the signal thread, read by INFO and /metrics.
class ReloadTracker {
 public:
  ReloadStatus Get() const ABSL_LOCKS_EXCLUDED(mu_);
  void Record(bool ok, int64_t wall_ms, std::string message,
              std::vector<std::string> restart_pending) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  ReloadStatus status_ ABSL_GUARDED_BY(mu_);
};

// Re-reads --config as start did and applies its policies when the whole file is valid; logs the
// outcome and records it in state->reloads.
void ReloadConfig(ServerState* state);

}  // namespace rl::server

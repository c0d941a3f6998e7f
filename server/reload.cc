// SIGHUP reloads; see reload.h.
#include "reload.h"

#include <fmt/format.h>

#include <algorithm>

#include "server.h"
#include "server_state.h"
#include "settings.h"

namespace rl::server {

namespace {

bool Kept(const std::vector<std::string>& keep, std::string_view name) {
  return std::find(keep.begin(), keep.end(), name) != keep.end();
}

}  // namespace

absl::StatusOr<ServerConfig> ReloadConfigFile(const ServerConfig& running) {
  ServerConfig next = running;
  const ServerConfig defaults;
  const std::vector<std::string>& keep = running.command_line_flags;
  // A setting removed from the file goes back to its default, as at start.
  for (const Setting& s : Settings()) {
    if (Kept(keep, s.name)) continue;
    absl::Status reset = SetSettingText(s, SettingText(s, defaults), next);
    if (!reset.ok()) return reset;  // a default that does not read back: a bug in the table
  }
  next.policies.clear();
  absl::Status st = LoadConfigFile(running.config_file, keep, &next);
  if (st.ok()) st = FinishConfig(&next);
  if (!st.ok()) return st;
  return next;
}

std::vector<std::string> ChangedSettings(const ServerConfig& a, const ServerConfig& b) {
  std::vector<std::string> out;
  for (const Setting& s : Settings()) {
    const std::string x = SettingText(s, a), y = SettingText(s, b);
    if (x == y) continue;
    out.push_back(s.secret ? std::string(s.name) : fmt::format("{} ({} -> {})", s.name, x, y));
  }
  return out;
}

ReloadStatus ReloadTracker::Get() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

void ReloadTracker::Record(bool ok, int64_t wall_ms, std::string message,
                           std::vector<std::string> restart_pending) {
  absl::MutexLock lock(&mu_);
  status_.last = ok ? "ok" : "error";
  status_.last_wall_ms = wall_ms;
  status_.message = std::move(message);
  ++(ok ? status_.ok : status_.failed);
  // A failed reload applied nothing: what was pending still is.
  if (ok) status_.restart_pending = std::move(restart_pending);
}

void ReloadConfig(ServerState* state) {
  const ServerConfig& running = state->configured;
  auto log = [&](std::string_view message) {
    if (!state->config.quiet) LogLine(message);
  };
  auto fail = [&](std::string message) {
    log(fmt::format("SIGHUP: {}", message));
    state->reloads.Record(false, state->clock->WallMs(), std::move(message), {});
  };
  // Without a file, only what the front ends read themselves (the Envoy rules directory) reloads.
  const bool file = !running.config_file.empty();
  if (!file && state->front_ends.empty()) return fail("no --config file: nothing to reload");
  // Everything start would check, before anything changes: a file the server could not start
  // with is refused whole, and the running server keeps what it has.
  auto next = file ? ReloadConfigFile(running) : absl::StatusOr<ServerConfig>(running);
  // Every front end checks its part first; policies apply last (their load is the commit).
  std::vector<std::function<void()>> commits;
  absl::Status st = next.status();
  for (size_t i = 0; st.ok() && i < state->front_ends.size(); ++i) {
    auto commit = state->front_ends[i]->PrepareReload(*next);
    if (commit.ok()) commits.push_back(*std::move(commit));
    st = commit.status();
  }
  if (st.ok() && file) st = state->policies.LoadFromConfig(next->policies);
  if (!st.ok()) {
    return fail(
        fmt::format("reload failed, nothing changed (a restart with this file would "
                    "fail too): {}",
                    ToStd(st.message())));
  }
  for (auto& commit : commits) commit();
  // Only policies (and the front ends' rules) apply while running; name every other change so none
  // goes unnoticed.
  std::vector<std::string> pending = ChangedSettings(running, *next);
  for (const std::string& change : pending) {
    log(fmt::format("SIGHUP: setting {} in {} is not reloadable: it applies at the next restart",
                    change, running.config_file));
  }
  std::string message =
      file ? fmt::format("reloaded {} policies from {}", next->policies.size(), running.config_file)
           : std::string("reloaded the front ends' rules (no --config file)");
  if (!pending.empty()) {
    message += fmt::format("; {} setting(s) wait for a restart", pending.size());
  }
  log(fmt::format("SIGHUP: {}", message));
  state->reloads.Record(true, state->clock->WallMs(), std::move(message), std::move(pending));
}

}  // namespace rl::server

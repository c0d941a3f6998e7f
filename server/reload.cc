// SIGHUP reloads; see reload.h.
#include "reload.h"

#include <fmt/format.h>

#include <algorithm>

#include "server.h"
#include "server_state.h"

namespace rl::server {

namespace {

// The settings a config file may hold besides the numeric ones (LoadConfigText's other keys; a
// new key there needs its row here): name, how to reset one to its default, and its value as
// text for ChangedSettings.
struct OtherSetting {
  std::string_view name;
  void (*reset)(ServerConfig& c, const ServerConfig& defaults);
  std::string (*text)(const ServerConfig& c);
};
const OtherSetting kOtherSettings[] = {
    {"bind", [](ServerConfig& c, const ServerConfig& d) { c.bind = d.bind; },
     [](const ServerConfig& c) { return c.bind; }},
    {"requirepass", [](ServerConfig& c, const ServerConfig& d) { c.requirepass = d.requirepass; },
     [](const ServerConfig& c) { return c.requirepass; }},
    {"snapshot", [](ServerConfig& c, const ServerConfig& d) { c.snapshot_file = d.snapshot_file; },
     [](const ServerConfig& c) { return c.snapshot_file; }},
    {"protected-mode",
     [](ServerConfig& c, const ServerConfig& d) { c.protected_mode = d.protected_mode; },
     [](const ServerConfig& c) { return std::string(c.protected_mode ? "yes" : "no"); }},
    {"overflow", [](ServerConfig& c, const ServerConfig& d) { c.overflow = d.overflow; },
     [](const ServerConfig& c) { return std::string(OverflowModeName(c.overflow)); }},
    {"enable-debug-command",
     [](ServerConfig& c, const ServerConfig& d) {
       c.enable_debug_command = d.enable_debug_command;
     },
     [](const ServerConfig& c) {
       return std::string(DebugCommandModeName(c.enable_debug_command));
     }},
    {"snapshot-strict",
     [](ServerConfig& c, const ServerConfig& d) { c.snapshot_strict = d.snapshot_strict; },
     [](const ServerConfig& c) { return std::string(c.snapshot_strict ? "true" : "false"); }},
};

bool Kept(const std::vector<std::string>& keep, std::string_view name) {
  return std::find(keep.begin(), keep.end(), name) != keep.end();
}

}  // namespace

absl::StatusOr<ServerConfig> ReloadConfigFile(const ServerConfig& running) {
  ServerConfig next = running;
  const ServerConfig defaults;
  const std::vector<std::string>& keep = running.command_line_flags;
  // A setting removed from the file goes back to its default, as at start.
  for (const NumericSetting& s : NumericSettings()) {
    if (!Kept(keep, s.name)) s.set(next, s.get(defaults));
  }
  for (const OtherSetting& s : kOtherSettings) {
    if (!Kept(keep, s.name)) s.reset(next, defaults);
  }
  next.policies.clear();
  absl::Status st = LoadConfigFile(running.config_file, keep, &next);
  if (st.ok()) st = FinishConfig(&next);
  if (!st.ok()) return st;
  return next;
}

std::vector<std::string> ChangedSettings(const ServerConfig& a, const ServerConfig& b) {
  std::vector<std::string> out;
  for (const NumericSetting& s : NumericSettings()) {
    if (s.get(a) == s.get(b)) continue;
    out.push_back(fmt::format("{} ({} -> {})", s.name, FormatNumericSetting(s, s.get(a)),
                              FormatNumericSetting(s, s.get(b))));
  }
  for (const OtherSetting& s : kOtherSettings) {
    const std::string x = s.text(a), y = s.text(b);
    if (x == y) continue;
    out.push_back(s.name == "requirepass" ? std::string(s.name)
                                          : fmt::format("{} ({} -> {})", s.name, x, y));
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
  if (running.config_file.empty()) return fail("no --config file: nothing to reload");
  // Everything start would check, before anything changes: a file the server could not start
  // with is refused whole, and the running server keeps what it has.
  auto next = ReloadConfigFile(running);
  absl::Status st = next.ok() ? state->policies.LoadFromConfig(next->policies) : next.status();
  if (!st.ok()) {
    return fail(
        fmt::format("reload failed, nothing changed (a restart with this file would "
                    "fail too): {}",
                    ToStd(st.message())));
  }
  // Only policies apply while running; name every other change so none goes unnoticed.
  std::vector<std::string> pending = ChangedSettings(running, *next);
  for (const std::string& change : pending) {
    log(fmt::format("SIGHUP: setting {} in {} is not reloadable: it applies at the next restart",
                    change, running.config_file));
  }
  std::string message =
      fmt::format("reloaded {} policies from {}", next->policies.size(), running.config_file);
  if (!pending.empty()) {
    message += fmt::format("; {} setting(s) wait for a restart", pending.size());
  }
  log(fmt::format("SIGHUP: {}", message));
  state->reloads.Record(true, state->clock->WallMs(), std::move(message), std::move(pending));
}

}  // namespace rl::server

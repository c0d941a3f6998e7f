// The settings table (see settings.h) and the text forms of its kinds.
#include "settings.h"

#include <fmt/core.h>

#include <algorithm>

#include "rl/ascii.h"
#include "text.h"

namespace rl::server {
namespace {

constexpr std::string_view kOverflowNames[] = {"fail-open", "fail-closed"};  // FailureMode order
constexpr std::string_view kDebugNames[] = {"no", "yes", "local"};  // DebugCommandMode order

const ChoiceSetting kOverflow = {
    kOverflowNames, false, [](const ServerConfig& c) { return static_cast<int>(c.overflow); },
    [](ServerConfig& c, int i) { c.overflow = static_cast<rl::FailureMode>(i); }};
// A boolean in the file as well, as redis.conf's yes/no.
const ChoiceSetting kDebugCommand = {
    kDebugNames, true,
    [](const ServerConfig& c) { return static_cast<int>(c.enable_debug_command); },
    [](ServerConfig& c, int i) { c.enable_debug_command = static_cast<DebugCommandMode>(i); }};

Setting Number(std::string_view name) {
  const NumericSetting* n = FindNumericSetting(name);
  return {n->name, SettingKind::kNumber, n->help, n};
}
Setting Text(std::string_view name, std::string ServerConfig::*field, std::string_view help) {
  return {name, SettingKind::kString, help, nullptr, field};
}
Setting Flag(std::string_view name, SettingKind kind, bool ServerConfig::*field,
             std::string_view help) {
  return {name, kind, help, nullptr, nullptr, field};
}
Setting Choice(std::string_view name, const ChoiceSetting* choice, std::string_view help) {
  return {name, SettingKind::kChoice, help, nullptr, nullptr, nullptr, choice};
}

std::vector<Setting> MakeSettings() {
  Setting threads = Number("threads");
  threads.config_get_name = "io-threads";
  Setting max_memory = Number("max-memory");
  max_memory.config_get_name = "maxmemory";
  Setting requirepass = Text("requirepass", &ServerConfig::requirepass,
                             "password clients must send with AUTH or HELLO ... AUTH");
  requirepass.secret = true;
  std::vector<Setting> rows = {
      Number("port"),
      Text("bind", &ServerConfig::bind,
           "address to listen on; a non-loopback address needs --requirepass or --protected-mode "
           "no"),
      threads,
      requirepass,
      Number("maxclients"),
      Number("timeout"),
      Number("max-keys"),
      max_memory,
      Choice("overflow", &kOverflow,
             "fail-open|fail-closed: new keys when --max-keys/--max-memory is reached and every "
             "state is too used to evict safely: allowed uncounted, or denied with a retry-after"),
      Number("client-output-limit"),
      Number("proto-max-bulk-len"),
      Number("client-query-buffer-limit"),
      Number("client-query-buffer-total"),
      Flag("protected-mode", SettingKind::kYesNo, &ServerConfig::protected_mode,
           "yes|no: refuse a non-loopback --bind without --requirepass"),
      Text("snapshot", &ServerConfig::snapshot_file,
           "FILE for limiter state and policies: loaded at start, saved periodically and on "
           "SIGTERM/SIGINT"),
      Number("snapshot-interval"),
      Flag("snapshot-strict", SettingKind::kSwitch, &ServerConfig::snapshot_strict,
           "refuse to start when the snapshot file exists but cannot be loaded (default: log and "
           "start empty)"),
      Number("metrics-port"),
      Number("envoy-port"),
      Text("envoy-rules", &ServerConfig::envoy_rules,
           "DIR of envoyproxy/ratelimit YAML rule files (*.yaml, *.yml) for --envoy-port; "
           "re-read on SIGHUP"),
      Flag("envoy-headers", SettingKind::kYesNo, &ServerConfig::envoy_headers,
           "yes|no: ShouldRateLimit answers carry the RateLimit response headers"),
      Text("envoy-backend", &ServerConfig::envoy_backend,
           "where --envoy-port's counts live: empty = this server's engine; HOST:PORT = an "
           "rl-server; cluster:HOST:PORT,... = some nodes of a Redis Cluster with rl.so"),
      Number("envoy-backend-timeout"),
      Number("envoy-max-message"),
      Choice("enable-debug-command", &kDebugCommand,
             "no|yes|local: allow DEBUG (moves the server's clock, for tests; never in "
             "production) to no client, every client, or clients on this machine"),
      Flag("quiet", SettingKind::kSwitch, &ServerConfig::quiet, "no log lines on stderr"),
      Number("shutdown-grace"),
  };
  // A numeric row not placed above still gets its place (at the end).
  for (const NumericSetting& n : NumericSettings()) {
    auto named = [&](const Setting& s) { return s.name == n.name; };
    if (std::none_of(rows.begin(), rows.end(), named)) rows.push_back(Number(n.name));
  }
  return rows;
}

}  // namespace

absl::Span<const Setting> Settings() {
  static const std::vector<Setting>* const rows = new std::vector<Setting>(MakeSettings());
  return *rows;
}

const Setting* FindSetting(std::string_view name) {
  for (const Setting& s : Settings()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string SettingText(const Setting& s, const ServerConfig& c) {
  switch (s.kind) {
    case SettingKind::kNumber:
      return FormatNumericSetting(*s.number, s.number->get(c));
    case SettingKind::kString:
      return c.*s.text;
    case SettingKind::kYesNo:
    case SettingKind::kSwitch:
      return c.*s.flag ? "yes" : "no";
    case SettingKind::kChoice:
      return std::string(s.choice->names[s.choice->get(c)]);
  }
  return "";
}

absl::Status SetSettingText(const Setting& s, std::string_view text, ServerConfig& c) {
  switch (s.kind) {
    case SettingKind::kNumber: {
      auto value = ParseNumericSetting(*s.number, text);
      if (!value.ok()) return value.status();
      s.number->set(c, *value);
      return absl::OkStatus();
    }
    case SettingKind::kString:
      c.*s.text = std::string(text);
      return absl::OkStatus();
    case SettingKind::kYesNo:
    case SettingKind::kSwitch: {
      auto yes = ParseYesNo(text);
      if (!yes.ok()) return yes.status();
      c.*s.flag = *yes;
      return absl::OkStatus();
    }
    case SettingKind::kChoice: {
      const std::string lower = AsciiLowered(text);
      const auto& names = s.choice->names;
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == lower) {
          s.choice->set(c, static_cast<int>(i));
          return absl::OkStatus();
        }
      }
      return absl::InvalidArgumentError(
          fmt::format("{} must be {}, got '{}'", s.name, ChoiceList(*s.choice, false), text));
    }
  }
  return absl::InternalError("unknown setting kind");
}

std::string_view ConfigGetName(const Setting& s) {
  return s.config_get_name.empty() ? s.name : s.config_get_name;
}

std::string ConfigGetValue(const Setting& s, const ServerConfig& c) {
  if (s.kind == SettingKind::kNumber) return std::to_string(s.number->get(c));
  std::string text = SettingText(s, c);
  if (s.secret && !text.empty()) return "(hidden)";
  return text;
}

std::string ChoiceList(const ChoiceSetting& choice, bool quoted) {
  std::string out;
  for (size_t i = 0; i < choice.names.size(); ++i) {
    if (i > 0) out += i + 1 == choice.names.size() ? " or " : ", ";
    out += quoted ? fmt::format("\"{}\"", choice.names[i]) : std::string(choice.names[i]);
  }
  return out;
}

absl::StatusOr<bool> ParseYesNo(std::string_view text) {
  std::string lower = AsciiLowered(text);
  if (lower == "yes" || lower == "true" || lower == "1") return true;
  if (lower == "no" || lower == "false" || lower == "0") return false;
  return absl::InvalidArgumentError(fmt::format("expected yes or no, got '{}'", text));
}

absl::StatusOr<rl::FailureMode> ParseOverflowMode(std::string_view text) {
  ServerConfig c;
  absl::Status st = SetSettingText(*FindSetting("overflow"), text, c);
  if (!st.ok()) return st;
  return c.overflow;
}

std::string_view OverflowModeName(rl::FailureMode mode) {
  return kOverflowNames[static_cast<int>(mode)];
}

absl::StatusOr<DebugCommandMode> ParseDebugCommandMode(std::string_view text) {
  ServerConfig c;
  absl::Status st = SetSettingText(*FindSetting("enable-debug-command"), text, c);
  if (!st.ok()) return st;
  return c.enable_debug_command;
}

std::string_view DebugCommandModeName(DebugCommandMode mode) {
  return kDebugNames[static_cast<int>(mode)];
}

}  // namespace rl::server

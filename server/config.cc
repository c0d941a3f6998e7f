// The numeric settings table, the TOML config file (its keys are settings.h's rows) and the
// checks between settings. Only startup and reload code: errors are values, never exceptions
// that escape.
#include "config.h"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <charconv>
#include <thread>

#include "absl/status/status.h"
#include "rl/ascii.h"
#include "rl/command/toml_file.h"
#include "rl/limit.h"
#include "settings.h"
#include "text.h"

namespace rl::server {
namespace {

constexpr int64_t kKiB = int64_t{1} << 10;
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kMaxBytes = int64_t{1} << 50;  // ParseMemorySize's bound: 1048576gb

// One row per numeric setting. The lambdas only narrow: the range was checked before.
// clang-format off
constexpr NumericSetting kSettings[] = {
    {"port", SettingUnit::kCount, 0, 65535,
     [](ServerConfig& c, int64_t v) { c.port = static_cast<int>(v); },
     [](const ServerConfig& c) { return int64_t{c.port}; },
     "TCP port to listen on (0 = any free port; the chosen one is printed)"},
    {"threads", SettingUnit::kCount, 0, 256,
     [](ServerConfig& c, int64_t v) { c.threads = static_cast<int>(v); },
     [](const ServerConfig& c) { return int64_t{c.threads}; },
     "I/O threads, one io_context each (0 = one per core)"},
    {"maxclients", SettingUnit::kCount, 1, 1'000'000,
     [](ServerConfig& c, int64_t v) { c.maxclients = v; },
     [](const ServerConfig& c) { return c.maxclients; },
     "most connected clients; more get '-ERR max number of clients reached' (lowered at start "
     "to fit the open-file limit)"},
    {"timeout", SettingUnit::kCount, 0, 2'147'483'647,
     [](ServerConfig& c, int64_t v) { c.timeout_s = v; },
     [](const ServerConfig& c) { return c.timeout_s; },
     "close a client idle for this many seconds (0 = never)"},
    {"max-keys", SettingUnit::kCount, 0, int64_t{1} << 32,
     [](ServerConfig& c, int64_t v) { c.max_keys = static_cast<size_t>(v); },
     [](const ServerConfig& c) { return static_cast<int64_t>(c.max_keys); },
     "most limiter states kept; past it the least valuable are evicted (0 = engine default)"},
    {"max-memory", SettingUnit::kBytes, 0, kMaxBytes,
     [](ServerConfig& c, int64_t v) { c.max_memory = static_cast<size_t>(v); },
     [](const ServerConfig& c) { return static_cast<int64_t>(c.max_memory); },
     "bound on limiter memory, e.g. 512mb (0 = only --max-keys)"},
    {"client-output-limit", SettingUnit::kBytes, kKiB, kMaxBytes,
     [](ServerConfig& c, int64_t v) { c.client_output_limit = static_cast<size_t>(v); },
     [](const ServerConfig& c) { return static_cast<int64_t>(c.client_output_limit); },
     "unsent reply bytes after which a client that does not read is disconnected"},
    {"proto-max-bulk-len", SettingUnit::kBytes, kKiB, 512 * kMiB,
     [](ServerConfig& c, int64_t v) { c.proto_max_bulk_len = static_cast<size_t>(v); },
     [](const ServerConfig& c) { return static_cast<int64_t>(c.proto_max_bulk_len); },
     "longest bulk argument a client may send (keys, names and specs are far shorter)"},
    {"client-query-buffer-limit", SettingUnit::kBytes, 16 * kKiB, kMaxBytes,
     [](ServerConfig& c, int64_t v) { c.client_query_limit = static_cast<size_t>(v); },
     [](const ServerConfig& c) { return static_cast<int64_t>(c.client_query_limit); },
     "input bytes buffered for one client's unfinished command; past it the client is "
     "disconnected"},
    {"client-query-buffer-total", SettingUnit::kBytes, 16 * kKiB, kMaxBytes,
     [](ServerConfig& c, int64_t v) { c.client_query_total = static_cast<size_t>(v); },
     [](const ServerConfig& c) { return static_cast<int64_t>(c.client_query_total); },
     "input buffer bytes of all clients together; a client whose buffer would grow past it is "
     "disconnected"},
    {"snapshot-interval", SettingUnit::kDurationMs, 1, rl::kMaxWindowMs,
     [](ServerConfig& c, int64_t v) { c.snapshot_interval_ms = v; },
     [](const ServerConfig& c) { return c.snapshot_interval_ms; },
     "how often the snapshot is saved, e.g. 1s or 500ms (at most one interval of grants is lost "
     "on a crash)"},
    {"shutdown-grace", SettingUnit::kDurationMs, 1, 3'600'000,
     [](ServerConfig& c, int64_t v) { c.shutdown_grace_ms = v; },
     [](const ServerConfig& c) { return c.shutdown_grace_ms; },
     "how long SIGTERM/SIGINT lets clients take their replies before closing them, e.g. 5s"},
    {"envoy-port", SettingUnit::kCount, 0, 65535,
     [](ServerConfig& c, int64_t v) { c.envoy_port = static_cast<int>(v); },
     [](const ServerConfig& c) { return int64_t{c.envoy_port}; },
     "Envoy's rate limit service (gRPC ShouldRateLimit) on the --bind address (0 = off)"},
    {"envoy-backend-timeout", SettingUnit::kDurationMs, 1, 60'000,
     [](ServerConfig& c, int64_t v) { c.envoy_backend_timeout_ms = v; },
     [](const ServerConfig& c) { return c.envoy_backend_timeout_ms; },
     "time a remote --envoy-backend has per call before the call fails with UNAVAILABLE (Envoy's "
     "own timeout is 20ms)"},
    {"envoy-max-message", SettingUnit::kBytes, kKiB, 64 * kMiB,
     [](ServerConfig& c, int64_t v) { c.envoy_max_message = static_cast<size_t>(v); },
     [](const ServerConfig& c) { return static_cast<int64_t>(c.envoy_max_message); },
     "largest ShouldRateLimit request accepted; larger ones fail with RESOURCE_EXHAUSTED"},
    {"metrics-port", SettingUnit::kCount, 0, 65535,
     [](ServerConfig& c, int64_t v) { c.metrics_port = static_cast<int>(v); },
     [](const ServerConfig& c) { return int64_t{c.metrics_port}; },
     "Prometheus endpoint (GET /metrics) on the --bind address (0 = off)"},
};
// clang-format on

bool Kept(const std::vector<std::string>& keep, std::string_view name) {
  return std::find(keep.begin(), keep.end(), name) != keep.end();
}

std::string RangeError(const NumericSetting& s, std::string_view got) {
  std::string lo = FormatNumericSetting(s, s.min), hi = FormatNumericSetting(s, s.max);
  switch (s.unit) {
    case SettingUnit::kBytes:
      return fmt::format("'{}' is not a size in {}..{} (e.g. 512kb, 64mb)", got, lo, hi);
    case SettingUnit::kDurationMs:
      return fmt::format("'{}' is not a duration in {}..{} (e.g. 500ms, 3s)", got, lo, hi);
    case SettingUnit::kCount:
      break;
  }
  return fmt::format("'{}' is not an integer in {}..{}", got, lo, hi);
}

// A numeric TOML value: an integer (bytes or milliseconds for sizes and durations) or a string
// written as on the command line.
absl::StatusOr<int64_t> TomlNumber(const NumericSetting& s, const toml::node& node) {
  if (const auto* integer = node.as_integer()) {
    int64_t v = integer->get();
    if (v < s.min || v > s.max) {
      return absl::InvalidArgumentError(RangeError(s, std::to_string(v)));
    }
    return v;
  }
  if (const auto* text = node.as_string()) return ParseNumericSetting(s, text->get());
  // A float, a boolean, a table...: say what is expected rather than echo it.
  const char* kind = s.unit == SettingUnit::kCount ? "an integer" : "an integer or a string";
  return absl::InvalidArgumentError(fmt::format("must be {} in {}..{}", kind,
                                                FormatNumericSetting(s, s.min),
                                                FormatNumericSetting(s, s.max)));
}

// A setting's TOML value: numbers as TomlNumber; strings, choices and yes/no as the flag's text
// in a TOML string; booleans where the kind takes them. Errors say what is expected.
absl::Status SetFromToml(const Setting& s, const toml::node& node, ServerConfig& c) {
  const auto* text = node.as_string();
  const auto* boolean = node.as_boolean();
  switch (s.kind) {
    case SettingKind::kNumber: {
      auto number = TomlNumber(*s.number, node);
      if (!number.ok()) return number.status();
      s.number->set(c, *number);
      return absl::OkStatus();
    }
    case SettingKind::kString:
      if (text == nullptr) return absl::InvalidArgumentError("must be a string");
      return SetSettingText(s, text->get(), c);
    case SettingKind::kYesNo:
      if (boolean != nullptr) return SetSettingText(s, boolean->get() ? "yes" : "no", c);
      if (text == nullptr) return absl::InvalidArgumentError("must be yes or no");
      return SetSettingText(s, text->get(), c);
    case SettingKind::kSwitch:
      if (boolean == nullptr) return absl::InvalidArgumentError("must be true or false");
      return SetSettingText(s, boolean->get() ? "yes" : "no", c);
    case SettingKind::kChoice:
      if (boolean != nullptr && s.choice->toml_boolean) {
        return SetSettingText(s, s.choice->names[boolean->get() ? 1 : 0], c);
      }
      if (text == nullptr) {
        return absl::InvalidArgumentError(
            fmt::format("must be {}", ChoiceList(*s.choice, /*quoted=*/true)));
      }
      return SetSettingText(s, text->get(), c);
  }
  return absl::InternalError("unknown setting kind");
}
}  // namespace

absl::Span<const NumericSetting> NumericSettings() { return kSettings; }

const NumericSetting* FindNumericSetting(std::string_view name) {
  for (const NumericSetting& s : kSettings) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

absl::StatusOr<int64_t> ParseNumericSetting(const NumericSetting& s, std::string_view text) {
  int64_t value = 0;
  bool ok = false;
  switch (s.unit) {
    case SettingUnit::kCount: {
      // Strict decimal: no sign but '-', no spaces, no overflow (from_chars reports it).
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      ok = !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
      break;
    }
    case SettingUnit::kBytes: {
      auto bytes = ParseMemorySize(text);
      ok = bytes.ok();
      if (ok) value = static_cast<int64_t>(*bytes);  // at most 2^50
      break;
    }
    case SettingUnit::kDurationMs: {
      // Settings keep their documented reading: an integer is milliseconds (as in TOML), unlike
      // a limit's window.
      auto ms = rl::ParseDurationMs(text, rl::BareDuration::kMilliseconds);
      ok = ms.ok();
      if (ok) value = *ms;
      break;
    }
  }
  if (!ok || value < s.min || value > s.max) return absl::InvalidArgumentError(RangeError(s, text));
  return value;
}

std::string FormatNumericSetting(const NumericSetting& s, int64_t value) {
  if (s.unit == SettingUnit::kDurationMs) return rl::FormatDuration(value);
  if (s.unit == SettingUnit::kBytes && value > 0) {
    if (value % kGiB == 0) return fmt::format("{}gb", value / kGiB);
    if (value % kMiB == 0) return fmt::format("{}mb", value / kMiB);
    if (value % kKiB == 0) return fmt::format("{}kb", value / kKiB);
  }
  return std::to_string(value);
}

absl::Status CheckConfig(const ServerConfig& c) {
  if (c.client_query_limit < c.proto_max_bulk_len) {
    return absl::InvalidArgumentError(fmt::format(
        "client-query-buffer-limit ({} bytes) must be at least proto-max-bulk-len ({} bytes): "
        "a bulk of the largest size could never arrive",
        c.client_query_limit, c.proto_max_bulk_len));
  }
  if (!IsLoopbackAddress(c.bind) && c.requirepass.empty() && c.protected_mode) {
    return absl::InvalidArgumentError(fmt::format(
        "refusing to listen on non-loopback address {} without a password: set --requirepass "
        "(or requirepass in the config file), or pass --protected-mode no to accept "
        "unauthenticated clients from the network",
        c.bind));
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> ParseMemorySize(std::string_view text) {
  std::string lower = AsciiLowered(text);
  size_t digits = 0;
  while (digits < lower.size() && std::isdigit(static_cast<unsigned char>(lower[digits]))) {
    ++digits;
  }
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(lower.data(), lower.data() + digits, value);
  if (digits == 0 || ec != std::errc()) {
    return absl::InvalidArgumentError(fmt::format("invalid memory size '{}'", text));
  }
  std::string_view unit = std::string_view(lower).substr(digits);
  uint64_t mult = 1;
  if (unit.empty() || unit == "b") {
    mult = 1;
  } else if (unit == "k" || unit == "kb") {
    mult = 1ull << 10;
  } else if (unit == "m" || unit == "mb") {
    mult = 1ull << 20;
  } else if (unit == "g" || unit == "gb") {
    mult = 1ull << 30;
  } else {
    return absl::InvalidArgumentError(fmt::format("invalid memory unit in '{}'", text));
  }
  if (value > static_cast<uint64_t>(kMaxBytes) / mult) {
    return absl::InvalidArgumentError(fmt::format("memory size too large: '{}'", text));
  }
  return static_cast<size_t>(value * mult);
}

bool IsLoopbackAddress(const std::string& bind) {
  if (bind == "localhost") return true;
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(bind, ec);
  return !ec && address.is_loopback();
}

absl::Status LoadConfigText(std::string_view text, std::string_view source,
                            const std::vector<std::string>& keep, ServerConfig* config) {
  auto parsed = command::ParseToml(text, source);
  if (!parsed.ok()) return parsed.status();
  const toml::table& root = *parsed;
  auto fail = [&](std::string_view key, std::string_view message) {
    return absl::InvalidArgumentError(fmt::format("{}: {}: {}", source, key, message));
  };
  for (const auto& [key_node, value] : root) {
    std::string key(key_node.str());
    std::replace(key.begin(), key.end(), '_', '-');
    if (key == "policies") continue;
    if (Kept(keep, key)) continue;
    const Setting* setting = FindSetting(key);
    if (setting == nullptr) {
      return absl::InvalidArgumentError(fmt::format("{}: unknown setting '{}'", source, key));
    }
    absl::Status st = SetFromToml(*setting, value, *config);
    if (!st.ok()) return fail(key, ToStd(st.message()));
  }
  auto policies = command::PoliciesOf(root);
  if (!policies.ok()) return policies.status();
  config->policies = std::move(*policies);
  return absl::OkStatus();
}

absl::Status LoadConfigFile(const std::string& path, const std::vector<std::string>& keep,
                            ServerConfig* config) {
  auto text = command::ReadTomlFile(path);
  if (!text.ok()) return text.status();
  return LoadConfigText(*text, path, keep, config);
}

absl::Status FinishConfig(ServerConfig* config) {
  absl::Status st = CheckConfig(*config);
  if (!st.ok()) return st;
  if (config->threads == 0) {
    config->threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> LoadPoliciesText(
    std::string_view text, std::string_view source) {
  return command::ReadPoliciesText(text, source);
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> LoadPolicies(
    const std::string& path) {
  return command::ReadPoliciesFile(path);
}

}  // namespace rl::server

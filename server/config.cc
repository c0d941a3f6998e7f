// Flags and the TOML config file. Only startup code: errors are printed and turn into an exit
// code, never into an exception that escapes.
#include "config.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <iostream>
#include <thread>

#include <boost/asio/ip/address.hpp>
#include <boost/program_options.hpp>
#include <toml++/toml.h>

#include "absl/status/status.h"
#include <fmt/core.h>
#include "rl/limit.h"

namespace rl::server {
namespace po = boost::program_options;
namespace {

constexpr std::string_view kUsage =
    "Usage: rl-server [options]\n"
    "A Redis-protocol rate limiter: any Redis client calls RL.CHECK / CL.THROTTLE.\n";

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view ToStd(absl::string_view s) { return std::string_view(s.data(), s.size()); }

absl::StatusOr<bool> ParseYesNo(std::string_view text) {
  std::string lower = Lower(text);
  if (lower == "yes" || lower == "true" || lower == "1") return true;
  if (lower == "no" || lower == "false" || lower == "0") return false;
  return absl::InvalidArgumentError(fmt::format("expected yes or no, got '{}'", text));
}

bool Kept(const std::vector<std::string>& keep, std::string_view name) {
  return std::find(keep.begin(), keep.end(), name) != keep.end();
}

// Reads an integer or a string setting; memory sizes may carry a unit.
absl::StatusOr<int64_t> TomlInt(const toml::node& node, std::string_view key, bool memory) {
  if (auto v = node.value<int64_t>()) {
    if (*v < 0) return absl::InvalidArgumentError(fmt::format("{} must not be negative", key));
    return *v;
  }
  if (memory) {
    if (auto s = node.value<std::string>()) {
      auto bytes = ParseMemorySize(*s);
      if (!bytes.ok()) return bytes.status();
      return static_cast<int64_t>(*bytes);
    }
  }
  return absl::InvalidArgumentError(fmt::format("{} must be an integer", key));
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> PoliciesOf(
    const toml::table& root) {
  std::vector<std::pair<std::string, std::string>> out;
  const toml::node* node = root.get("policies");
  if (node == nullptr) return out;
  const toml::table* table = node->as_table();
  if (table == nullptr) return absl::InvalidArgumentError("[policies] must be a table");
  for (const auto& [key, value] : *table) {
    auto spec = value.value<std::string>();
    if (!spec) {
      return absl::InvalidArgumentError(
          fmt::format("policy '{}' must be a string such as \"GCRA 100 1m\"", key.str()));
    }
    out.emplace_back(std::string(key.str()), *spec);
  }
  return out;
}

absl::StatusOr<toml::table> ParseFile(const std::string& path) {
  // Debian's toml++ is built with exceptions: parse errors arrive as toml::parse_error.
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& err) {
    return absl::InvalidArgumentError(
        fmt::format("{}:{}: {}", path, err.source().begin.line, err.description()));
  }
}

}  // namespace

absl::StatusOr<rl::FailureMode> ParseOverflowMode(std::string_view text) {
  const std::string lower = Lower(text);
  if (lower == "fail-open") return rl::FailureMode::kFailOpen;
  if (lower == "fail-closed") return rl::FailureMode::kFailClosed;
  return absl::InvalidArgumentError(
      fmt::format("overflow must be fail-open or fail-closed, got '{}'", text));
}

std::string_view OverflowModeName(rl::FailureMode mode) {
  return mode == rl::FailureMode::kFailClosed ? "fail-closed" : "fail-open";
}

absl::StatusOr<size_t> ParseMemorySize(std::string_view text) {
  std::string lower = Lower(text);
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
  if (value > (uint64_t{1} << 50) / mult) {
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

absl::Status LoadConfigFile(const std::string& path, const std::vector<std::string>& keep,
                            ServerConfig* config) {
  auto parsed = ParseFile(path);
  if (!parsed.ok()) return parsed.status();
  const toml::table& root = *parsed;
  for (const auto& [key_node, value] : root) {
    std::string key(key_node.str());
    std::replace(key.begin(), key.end(), '_', '-');
    if (key == "policies") continue;
    if (Kept(keep, key)) continue;
    absl::StatusOr<int64_t> number = 0;
    if (key == "bind") {
      auto s = value.value<std::string>();
      if (!s) return absl::InvalidArgumentError("bind must be a string");
      config->bind = *s;
    } else if (key == "requirepass") {
      auto s = value.value<std::string>();
      if (!s) return absl::InvalidArgumentError("requirepass must be a string");
      config->requirepass = *s;
    } else if (key == "protected-mode") {
      if (auto b = value.value<bool>()) {
        config->protected_mode = *b;
      } else if (auto s = value.value<std::string>()) {
        auto yes = ParseYesNo(*s);
        if (!yes.ok()) return yes.status();
        config->protected_mode = *yes;
      } else {
        return absl::InvalidArgumentError("protected-mode must be yes or no");
      }
    } else if (key == "snapshot") {
      auto s = value.value<std::string>();
      if (!s) return absl::InvalidArgumentError("snapshot must be a file name");
      config->snapshot_file = *s;
    } else if (key == "snapshot-interval") {
      // "5s" like every duration in rl, or an integer of milliseconds.
      auto ms = value.is_integer() ? absl::StatusOr<int64_t>(*value.value<int64_t>())
                                   : ParseDurationMs(value.value_or<std::string>(""));
      if (!ms.ok() || *ms <= 0) {
        return absl::InvalidArgumentError("snapshot-interval must be a duration such as \"5s\"");
      }
      config->snapshot_interval_ms = *ms;
    } else if (key == "overflow") {
      auto s = value.value<std::string>();
      if (!s)
        return absl::InvalidArgumentError("overflow must be \"fail-open\" or \"fail-closed\"");
      auto mode = ParseOverflowMode(*s);
      if (!mode.ok()) return mode.status();
      config->overflow = *mode;
    } else if (key == "snapshot-strict") {
      auto b = value.value<bool>();
      if (!b) return absl::InvalidArgumentError("snapshot-strict must be true or false");
      config->snapshot_strict = *b;
    } else if (key == "port" || key == "threads" || key == "maxclients" || key == "timeout" ||
               key == "max-keys" || key == "metrics-port") {
      number = TomlInt(value, key, /*memory=*/false);
      if (!number.ok()) return number.status();
      if (key == "port") config->port = static_cast<int>(*number);
      if (key == "threads") config->threads = static_cast<int>(*number);
      if (key == "maxclients") config->maxclients = *number;
      if (key == "timeout") config->timeout_s = *number;
      if (key == "max-keys") config->max_keys = static_cast<size_t>(*number);
      if (key == "metrics-port") config->metrics_port = static_cast<int>(*number);
    } else if (key == "max-memory" || key == "client-output-limit") {
      number = TomlInt(value, key, /*memory=*/true);
      if (!number.ok()) return number.status();
      if (key == "max-memory") config->max_memory = static_cast<size_t>(*number);
      if (key == "client-output-limit") config->client_output_limit = static_cast<size_t>(*number);
    } else {
      return absl::InvalidArgumentError(fmt::format("{}: unknown setting '{}'", path, key));
    }
  }
  auto policies = PoliciesOf(root);
  if (!policies.ok()) return policies.status();
  config->policies = std::move(*policies);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> LoadPolicies(
    const std::string& path) {
  auto parsed = ParseFile(path);
  if (!parsed.ok()) return parsed.status();
  return PoliciesOf(*parsed);
}

CommandLine ParseCommandLine(int argc, char** argv) {
  CommandLine cl;
  ServerConfig& c = cl.config;
  std::string max_memory = "0", output_limit = "64mb", protected_mode = "yes";
  std::string overflow = "fail-open";
  std::string snapshot_interval = "3s";
  po::options_description desc("Options");
  // clang-format off
  desc.add_options()
      ("help,h", "print this help and exit")
      ("version,v", "print the version and exit")
      ("port", po::value<int>(&c.port)->default_value(c.port),
       "TCP port to listen on (0 = any free port; the chosen one is printed)")
      ("bind", po::value<std::string>(&c.bind)->default_value(c.bind),
       "address to listen on; a non-loopback address needs --requirepass or --protected-mode no")
      ("threads", po::value<int>(&c.threads)->default_value(0),
       "I/O threads, one io_context each (0 = one per core)")
      ("requirepass", po::value<std::string>(&c.requirepass),
       "password clients must send with AUTH or HELLO ... AUTH")
      ("config", po::value<std::string>(&c.config_file),
       "TOML file with settings and a [policies] table; SIGHUP reloads its policies")
      ("maxclients", po::value<int64_t>(&c.maxclients)->default_value(c.maxclients),
       "most connected clients; more get '-ERR max number of clients reached'")
      ("timeout", po::value<int64_t>(&c.timeout_s)->default_value(0),
       "close a client idle for this many seconds (0 = never)")
      ("max-keys", po::value<size_t>(&c.max_keys)->default_value(0),
       "most limiter states kept; past it the least valuable are evicted (0 = engine default)")
      ("max-memory", po::value<std::string>(&max_memory)->default_value("0"),
       "bound on limiter memory, e.g. 512mb (0 = only --max-keys)")
      ("overflow", po::value<std::string>(&overflow)->default_value("fail-open"),
       "fail-open|fail-closed: new keys when --max-keys/--max-memory is reached and every state "
       "is too used to evict safely: allowed uncounted, or denied with a retry-after")
      ("client-output-limit", po::value<std::string>(&output_limit)->default_value("64mb"),
       "unsent reply bytes after which a client that does not read is disconnected")
      ("protected-mode", po::value<std::string>(&protected_mode)->default_value("yes"),
       "yes|no: refuse a non-loopback --bind without --requirepass")
      ("snapshot", po::value<std::string>(&c.snapshot_file),
       "FILE for limiter state and policies: loaded at start, saved periodically and on "
       "SIGTERM/SIGINT")
      ("snapshot-interval", po::value<std::string>(&snapshot_interval)->default_value("3s"),
       "how often the snapshot is saved, e.g. 1s or 500ms (at most one interval of grants is lost "
       "on a crash)")
      ("snapshot-strict", po::bool_switch(&c.snapshot_strict),
       "refuse to start when the snapshot file exists but cannot be loaded (default: log and "
       "start empty)")
      ("metrics-port", po::value<int>(&c.metrics_port)->default_value(0),
       "Prometheus endpoint (GET /metrics) on the --bind address (0 = off)")
      ("quiet", po::bool_switch(&c.quiet), "no log lines on stderr");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "rl-server: " << e.what() << "\n" << kUsage << desc;
    cl.exit_now = true;
    cl.exit_code = 2;
    return cl;
  }
  if (vm.count("help")) {
    std::cout << kUsage << desc;
    cl.exit_now = true;
    return cl;
  }
  if (vm.count("version")) {
    std::cout << "rl-server " << RL_VERSION << "\n";
    cl.exit_now = true;
    return cl;
  }
  auto fail = [&cl](std::string_view message) {
    std::cerr << "rl-server: " << message << "\n";
    cl.exit_now = true;
    cl.exit_code = 2;
    return cl;
  };
  auto mem = ParseMemorySize(max_memory);
  if (!mem.ok()) return fail(ToStd(mem.status().message()));
  c.max_memory = *mem;
  auto out = ParseMemorySize(output_limit);
  if (!out.ok()) return fail(ToStd(out.status().message()));
  c.client_output_limit = *out;
  auto om = ParseOverflowMode(overflow);
  if (!om.ok()) return fail(fmt::format("--overflow: {}", ToStd(om.status().message())));
  c.overflow = *om;
  auto pm = ParseYesNo(protected_mode);
  if (!pm.ok()) return fail(fmt::format("--protected-mode: {}", ToStd(pm.status().message())));
  c.protected_mode = *pm;
  auto interval = rl::ParseDurationMs(snapshot_interval);
  if (!interval.ok()) {
    return fail(fmt::format("--snapshot-interval: {}", ToStd(interval.status().message())));
  }
  c.snapshot_interval_ms = *interval;

  if (!c.config_file.empty()) {
    // Flags typed on the command line win over the file.
    std::vector<std::string> keep;
    for (const auto& [name, value] : vm) {
      if (!value.defaulted()) keep.push_back(name);
    }
    absl::Status st = LoadConfigFile(c.config_file, keep, &c);
    if (!st.ok()) return fail(ToStd(st.message()));
  }
  if (c.port < 0 || c.port > 65535) return fail("--port must be in 0..65535");
  if (c.metrics_port < 0 || c.metrics_port > 65535) {
    return fail("--metrics-port must be in 0..65535");
  }
  if (c.threads < 0 || c.threads > 256) return fail("--threads must be in 0..256");
  if (c.threads == 0) c.threads = std::max(1u, std::thread::hardware_concurrency());
  if (c.maxclients < 1) return fail("--maxclients must be at least 1");
  if (c.timeout_s < 0) return fail("--timeout must not be negative");
  if (c.client_output_limit < 1024) return fail("--client-output-limit must be at least 1kb");
  if (!IsLoopbackAddress(c.bind) && c.requirepass.empty() && c.protected_mode) {
    return fail(fmt::format(
        "refusing to listen on non-loopback address {} without a password: set --requirepass "
        "(or requirepass in the config file), or pass --protected-mode no to accept "
        "unauthenticated clients from the network",
        c.bind));
  }
  return cl;
}

}  // namespace rl::server

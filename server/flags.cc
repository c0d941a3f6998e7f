// Command-line flags (Boost.Program_options) over the config file. Numeric flags are read as
// text and checked against NumericSettings() here, not by program_options: its unsigned parsing
// wraps "-1" to 2^64-1 and its errors do not say the accepted range.
#include <fmt/core.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <iostream>
#include <map>
#include <thread>

#include "config.h"
#include "rl/ascii.h"
#include "rl/version.h"
#include "text.h"

namespace rl::server {
namespace po = boost::program_options;
namespace {

// The blank line at the end sets "Options:" apart, so help2man (the man page) reads it as a
// section heading rather than the last words of the paragraph.
constexpr std::string_view kUsage =
    "Usage: rl-server [options]\n"
    "A Redis-protocol rate limiter: any Redis client calls RL.CHECK / CL.THROTTLE.\n"
    "Exit codes: 0 after SIGTERM/SIGINT, 1 when a setting or file is refused or the final\n"
    "snapshot fails (or a second signal cut the shutdown short), 2 for an unusable command line.\n"
    "\n";

// The flags that are read as text and checked after parsing (see the file's comment).
struct FlagTexts {
  std::string protected_mode = "yes";
  std::string overflow = "fail-open";
  std::string debug_command = "no";
  std::map<std::string, std::string> numbers;  // flag name -> text as typed
};

void AddFlags(po::options_description& desc, FlagTexts& t, CommandLine& cl) {
  ServerConfig& c = cl.config;
  auto add = desc.add_options();
  add("help,h", "print this help and exit");
  add("version,v", "print the version and exit");
  // In --help order; numeric ones come from NumericSettings().
  for (std::string_view name : {"port",
                                "bind",
                                "threads",
                                "requirepass",
                                "config",
                                "maxclients",
                                "timeout",
                                "max-keys",
                                "max-memory",
                                "overflow",
                                "client-output-limit",
                                "proto-max-bulk-len",
                                "client-query-buffer-limit",
                                "client-query-buffer-total",
                                "protected-mode",
                                "snapshot",
                                "snapshot-interval",
                                "snapshot-strict",
                                "metrics-port",
                                "enable-debug-command",
                                "quiet",
                                "check-config"}) {
    if (const NumericSetting* s = FindNumericSetting(name)) {
      std::string& text = t.numbers[std::string(name)];
      add(std::string(name).c_str(), po::value<std::string>(&text)->default_value(text),
          std::string(s->help).c_str());
    } else if (name == "bind") {
      add("bind", po::value<std::string>(&c.bind)->default_value(c.bind),
          "address to listen on; a non-loopback address needs --requirepass or --protected-mode "
          "no");
    } else if (name == "requirepass") {
      add("requirepass", po::value<std::string>(&c.requirepass),
          "password clients must send with AUTH or HELLO ... AUTH");
    } else if (name == "config") {
      add("config", po::value<std::string>(&c.config_file),
          "TOML file with settings and a [policies] table; SIGHUP reloads its policies");
    } else if (name == "overflow") {
      add("overflow", po::value<std::string>(&t.overflow)->default_value("fail-open"),
          "fail-open|fail-closed: new keys when --max-keys/--max-memory is reached and every "
          "state is too used to evict safely: allowed uncounted, or denied with a retry-after");
    } else if (name == "protected-mode") {
      add("protected-mode", po::value<std::string>(&t.protected_mode)->default_value("yes"),
          "yes|no: refuse a non-loopback --bind without --requirepass");
    } else if (name == "snapshot") {
      add("snapshot", po::value<std::string>(&c.snapshot_file),
          "FILE for limiter state and policies: loaded at start, saved periodically and on "
          "SIGTERM/SIGINT");
    } else if (name == "snapshot-strict") {
      add("snapshot-strict", po::bool_switch(&c.snapshot_strict),
          "refuse to start when the snapshot file exists but cannot be loaded (default: log and "
          "start empty)");
    } else if (name == "enable-debug-command") {
      add("enable-debug-command", po::value<std::string>(&t.debug_command)->default_value("no"),
          "no|yes|local: allow DEBUG (moves the server's clock, for tests; never in production) "
          "to no client, every client, or clients on this machine");
    } else if (name == "quiet") {
      add("quiet", po::bool_switch(&c.quiet), "no log lines on stderr");
    } else if (name == "check-config") {
      add("check-config", po::bool_switch(&cl.check_only),
          "check the flags and --config FILE (every setting and policy) as start and SIGHUP do, "
          "print the result and exit: 0 when the server would start with them, 1 when not");
    }
  }
  for (const NumericSetting& s : NumericSettings()) {  // one left out of the list above
    std::string name(s.name);
    if (desc.find_nothrow(name, false) != nullptr) continue;
    add(name.c_str(), po::value<std::string>(&t.numbers[name])->default_value(t.numbers[name]),
        std::string(s.help).c_str());
  }
}

// The flags typed on the command line into `c`; errors name the flag.
absl::Status ApplyFlags(const po::variables_map& vm, FlagTexts& t, ServerConfig& c) {
  for (const NumericSetting& s : NumericSettings()) {
    std::string name(s.name);
    if (vm[name].defaulted()) continue;  // the file may still set it
    auto value = ParseNumericSetting(s, t.numbers[name]);
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("--{}: {}", name, ToStd(value.status().message())));
    }
    s.set(c, *value);
  }
  auto pm = ParseYesNo(t.protected_mode);
  if (!pm.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("--protected-mode: {}", ToStd(pm.status().message())));
  }
  c.protected_mode = *pm;
  auto om = ParseOverflowMode(t.overflow);
  if (!om.ok()) {
    return absl::InvalidArgumentError(fmt::format("--overflow: {}", ToStd(om.status().message())));
  }
  c.overflow = *om;
  auto dm = ParseDebugCommandMode(t.debug_command);
  if (!dm.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("--enable-debug-command: {}", ToStd(dm.status().message())));
  }
  c.enable_debug_command = *dm;
  return absl::OkStatus();
}

}  // namespace

CommandLine ParseCommandLine(int argc, char** argv) {
  CommandLine cl;
  ServerConfig& c = cl.config;
  const ServerConfig defaults;
  FlagTexts t;
  for (const NumericSetting& s : NumericSettings()) {
    t.numbers[std::string(s.name)] = FormatNumericSetting(s, s.get(defaults));
  }
  po::options_description desc("Options");
  AddFlags(desc, t, cl);
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
    std::cout << "rl-server " << RL_VERSION_STRING << "\n";
    cl.exit_now = true;
    return cl;
  }
  auto fail = [&cl](std::string_view message) {
    std::cerr << "rl-server: " << message << "\n";
    cl.exit_now = true;
    cl.exit_code = 1;
    return cl;
  };
  if (absl::Status st = ApplyFlags(vm, t, c); !st.ok()) return fail(ToStd(st.message()));

  // Flags typed on the command line win over the file (now and on every reload).
  for (const auto& [name, value] : vm) {
    if (!value.defaulted()) c.command_line_flags.push_back(name);
  }
  if (!c.config_file.empty()) {
    absl::Status st = LoadConfigFile(c.config_file, c.command_line_flags, &c);
    if (!st.ok()) return fail(ToStd(st.message()));
  }
  absl::Status st = FinishConfig(&c);
  if (!st.ok()) return fail(ToStd(st.message()));
  return cl;
}

}  // namespace rl::server

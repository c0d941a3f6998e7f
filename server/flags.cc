// Command-line flags (Boost.Program_options) over the config file, one per row of Settings()
// (settings.h). Values are read as text and checked by the row here, not by program_options: its
// unsigned parsing wraps "-1" to 2^64-1 and its errors do not say the accepted range.
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
#include "settings.h"
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

// Each setting's flag as typed (switches as booleans), keyed by name.
struct FlagTexts {
  std::map<std::string, std::string> texts;
  std::map<std::string, bool> switches;
};

// The flags: --help and --version, then one per row of Settings() with --config before
// maxclients and --check-config last, the places they have always had in --help.
void AddFlags(po::options_description& desc, FlagTexts& t, CommandLine& cl) {
  const ServerConfig defaults;
  auto add = desc.add_options();
  add("help,h", "print this help and exit");
  add("version,v", "print the version and exit");
  for (const Setting& s : Settings()) {
    if (s.name == "maxclients") {
      add("config", po::value<std::string>(&cl.config.config_file),
          "TOML file with settings and a [policies] table; SIGHUP reloads its policies");
    }
    const std::string name(s.name), help(s.help);
    if (s.kind == SettingKind::kSwitch) {
      add(name.c_str(), po::bool_switch(&t.switches[name]), help.c_str());
      continue;
    }
    std::string& text = t.texts[name];
    text = SettingText(s, defaults);
    // An empty default (no password, no snapshot) is not shown as "(=)".
    if (text.empty()) {
      add(name.c_str(), po::value<std::string>(&text), help.c_str());
    } else {
      add(name.c_str(), po::value<std::string>(&text)->default_value(text), help.c_str());
    }
  }
  add("check-config", po::bool_switch(&cl.check_only),
      "check the flags and --config FILE (every setting and policy) as start and SIGHUP do, "
      "print the result and exit: 0 when the server would start with them, 1 when not");
}

// The flags typed on the command line into `c`; errors name the flag. The others keep their
// defaults, which the file may still change.
absl::Status ApplyFlags(const po::variables_map& vm, FlagTexts& t, ServerConfig& c) {
  for (const Setting& s : Settings()) {
    const std::string name(s.name);
    if (vm.count(name) == 0 || vm[name].defaulted()) continue;
    const std::string text = s.kind == SettingKind::kSwitch ? "yes" : t.texts[name];
    if (s.kind == SettingKind::kSwitch && !t.switches[name]) continue;
    absl::Status st = SetSettingText(s, text, c);
    if (!st.ok())
      return absl::InvalidArgumentError(fmt::format("--{}: {}", name, ToStd(st.message())));
  }
  return absl::OkStatus();
}

}  // namespace

CommandLine ParseCommandLine(int argc, char** argv) {
  CommandLine cl;
  ServerConfig& c = cl.config;
  FlagTexts t;
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

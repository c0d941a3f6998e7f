// The settings table (server/settings.h) is the only list of rl-server's settings: every row
// reaches the command-line parser, the TOML reader, CONFIG GET and --help (so the man page, made
// from --help by help2man). Each row gets a value different from its default and must come back
// from each of them; a setting written by hand in one of those places and missing from another
// fails here by name.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "config.h"
#include "in_process.h"
#include "resp_client.h"
#include "server_process.h"
#include "settings.h"

namespace rl::test {
namespace {

using server::Setting;
using server::SettingKind;
using server::SettingText;

// A value of `s` that is not its default and that start accepts on its own (the checks between
// settings included: a string is a loopback address, the one value every string setting takes
// without tripping protected mode).
std::string OtherValue(const Setting& s) {
  const server::ServerConfig defaults;
  switch (s.kind) {
    case SettingKind::kNumber: {
      const int64_t d = s.number->get(defaults);
      int64_t v = d == 0 ? std::max<int64_t>(1, s.number->min) : d * 2;
      if (v > s.number->max) v = s.number->min;
      return server::FormatNumericSetting(*s.number, v);
    }
    case SettingKind::kString:
      return "127.0.0.2";
    case SettingKind::kYesNo:
    case SettingKind::kSwitch:
      return defaults.*s.flag ? "no" : "yes";
    case SettingKind::kChoice: {
      const auto& names = s.choice->names;
      return std::string(names[(s.choice->get(defaults) + 1) % names.size()]);
    }
  }
  return "";
}

// The config with `s` set to `text`, as the row itself reads it.
server::ServerConfig With(const Setting& s, const std::string& text) {
  server::ServerConfig c;
  absl::Status st = server::SetSettingText(s, text, c);
  EXPECT_TRUE(st.ok()) << s.name << " = " << text << ": " << st;
  return c;
}

std::string RunHelp() {
  std::string out;
  FILE* p = popen(RL_SERVER_PATH " --help 2>&1", "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << out;
  return out;
}

// Whitespace runs as one space: --help wraps long texts over indented lines.
std::string Squeezed(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (std::isspace(static_cast<unsigned char>(ch))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += ch;
    }
  }
  return out;
}

TEST(SettingsTableTest, EveryRowHasADistinctNameAndAValueOtherThanItsDefault) {
  const server::ServerConfig defaults;
  std::vector<std::string_view> names;
  for (const Setting& s : server::Settings()) {
    EXPECT_EQ(std::count(names.begin(), names.end(), s.name), 0) << s.name;
    names.push_back(s.name);
    EXPECT_FALSE(s.help.empty()) << s.name;
    EXPECT_NE(SettingText(s, With(s, OtherValue(s))), SettingText(s, defaults)) << s.name;
  }
  EXPECT_GE(names.size(), 20u);
  for (const server::NumericSetting& n : server::NumericSettings()) {
    EXPECT_NE(server::FindSetting(n.name), nullptr) << n.name << " has no row";
  }
}

TEST(SettingsTableTest, EveryRowIsAFlag) {
  for (const Setting& s : server::Settings()) {
    const std::string value = OtherValue(s);
    std::vector<std::string> args = {"rl-server", "--" + std::string(s.name)};
    if (s.kind != SettingKind::kSwitch) args.push_back(value);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    server::CommandLine cl = server::ParseCommandLine(static_cast<int>(argv.size()), argv.data());
    if (cl.exit_now) {
      ADD_FAILURE() << "--" << s.name << " " << value << " refused";
      continue;
    }
    EXPECT_EQ(SettingText(s, cl.config), SettingText(s, With(s, value))) << s.name;
    const auto& given = cl.config.command_line_flags;
    EXPECT_NE(std::find(given.begin(), given.end(), s.name), given.end()) << s.name;
  }
}

TEST(SettingsTableTest, EveryRowIsATomlKey) {
  for (const Setting& s : server::Settings()) {
    const std::string value = OtherValue(s);
    const std::string toml = std::string(s.name) + " = " +
                             (s.kind == SettingKind::kSwitch ? (value == "yes" ? "true" : "false")
                                                             : "\"" + value + "\"") +
                             "\n";
    server::ServerConfig c;
    absl::Status st = server::LoadConfigText(toml, "t.toml", {}, &c);
    if (!st.ok()) {
      ADD_FAILURE() << toml << st;
      continue;
    }
    EXPECT_EQ(SettingText(s, c), SettingText(s, With(s, value))) << toml;
    // The command line wins over the file.
    server::ServerConfig kept;
    ASSERT_TRUE(server::LoadConfigText(toml, "t.toml", {std::string(s.name)}, &kept).ok());
    EXPECT_EQ(SettingText(s, kept), SettingText(s, server::ServerConfig{})) << toml;
  }
}

TEST(SettingsTableTest, EveryRowAnswersConfigGet) {
  for (const Setting& s : server::Settings()) {
    const server::ServerConfig config = With(s, OtherValue(s));
    InProcessServer server(config);
    const std::string name(server::ConfigGetName(s));
    if (!config.requirepass.empty()) {
      ASSERT_EQ(server.Run({"AUTH", config.requirepass}).str, "OK");
    }
    Reply r = server.Run({"CONFIG", "GET", name});
    if (r.elements.size() != 2) {
      ADD_FAILURE() << "CONFIG GET " << name << ": " << r.str << " (" << r.elements.size()
                    << " elements)";
      continue;
    }
    EXPECT_EQ(r.elements[0].str, name);
    EXPECT_EQ(r.elements[1].str, server::ConfigGetValue(s, config)) << name;
    EXPECT_NE(r.elements[1].str, server::ConfigGetValue(s, server::ServerConfig{})) << name;
    if (s.secret) {
      EXPECT_EQ(r.elements[1].str.find(SettingText(s, config)), std::string::npos) << name;
    }
  }
}

// The same through a real rl-server, all at once: CONFIG GET * names every row, and the port is
// the one in use (the flags said 0).
TEST(SettingsTableTest, ARealServerAnswersConfigGetForEveryRow) {
  ServerProcess server({"--overflow", "fail-closed"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  Reply all = c.Call({"CONFIG", "GET", "*"});
  std::map<std::string, std::string> got;
  for (size_t i = 0; i + 1 < all.elements.size(); i += 2) {
    got[all.elements[i].str] = all.elements[i + 1].str;
  }
  for (const Setting& s : server::Settings()) {
    EXPECT_EQ(got.count(std::string(server::ConfigGetName(s))), 1u) << s.name;
  }
  EXPECT_EQ(got["port"], std::to_string(server.port()));
  EXPECT_EQ(got["overflow"], "fail-closed");
  EXPECT_EQ(got["appendonly"], "no") << "Redis's fixed answers stay";
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(SettingsTableTest, EveryRowIsInHelp) {
  const std::string help = Squeezed(RunHelp());
  const server::ServerConfig defaults;
  for (const Setting& s : server::Settings()) {
    std::string flag = "--" + std::string(s.name);
    const std::string text = SettingText(s, defaults);
    if (s.kind != SettingKind::kSwitch) flag += text.empty() ? " arg" : " arg (=" + text + ")";
    const size_t at = help.find(flag + " ");
    if (at == std::string::npos) {
      ADD_FAILURE() << flag << " missing from --help:\n" << help;
      continue;
    }
    EXPECT_NE(help.find(Squeezed(std::string(s.help)), at), std::string::npos) << s.name;
  }
}

}  // namespace
}  // namespace rl::test

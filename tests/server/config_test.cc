// Unit tests of rl-server's startup pieces that need no process: memory sizes, loopback
// detection, the TOML config file (flags win, unknown keys rejected, policies in order), and the
// password comparison.
#include "config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "rl/limit.h"
#include "server_state.h"

namespace rl::server {
namespace {

std::string WriteTemp(const std::string& content) {
  char path[] = "/tmp/rl-config-test-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  std::ofstream(path) << content;
  return path;
}

TEST(ConfigTest, MemorySizes) {
  EXPECT_EQ(*ParseMemorySize("0"), 0u);
  EXPECT_EQ(*ParseMemorySize("1048576"), 1048576u);
  EXPECT_EQ(*ParseMemorySize("64kb"), 64u << 10);
  EXPECT_EQ(*ParseMemorySize("512MB"), 512u << 20);
  EXPECT_EQ(*ParseMemorySize("2g"), 2ull << 30);
  EXPECT_FALSE(ParseMemorySize("").ok());
  EXPECT_FALSE(ParseMemorySize("mb").ok());
  EXPECT_FALSE(ParseMemorySize("12tb").ok());
  EXPECT_FALSE(ParseMemorySize("-1").ok());
  EXPECT_FALSE(ParseMemorySize("99999999999999999999gb").ok());
}

// What --help and the range errors print is what a user may type back: every bound (and value)
// of every numeric setting round-trips (the config fuzz target found "4tb", a unit the parser
// does not take).
TEST(ConfigTest, NumericSettingsRoundTrip) {
  for (const NumericSetting& s : NumericSettings()) {
    for (int64_t v : {s.min, s.max, s.max / 3, int64_t{4} << 40}) {
      if (v < s.min || v > s.max) continue;
      const std::string text = FormatNumericSetting(s, v);
      auto back = ParseNumericSetting(s, text);
      ASSERT_TRUE(back.ok()) << s.name << " " << text << ": " << back.status().message();
      EXPECT_EQ(*back, v) << s.name << " " << text;
    }
  }
}

TEST(ConfigTest, Loopback) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_TRUE(IsLoopbackAddress("localhost"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackAddress("10.1.2.3"));
  EXPECT_FALSE(IsLoopbackAddress("::"));
  EXPECT_FALSE(IsLoopbackAddress("not-an-address"));
}

TEST(ConfigTest, FileSettingsAndPolicies) {
  std::string path = WriteTemp(
      "port = 7000\n"
      "maxclients = 12\n"
      "max_keys = 1000\n"
      "max-memory = \"1mb\"\n"
      "protected-mode = false\n"
      "[policies]\n"
      "zeta = \"GCRA 1 1s\"\n"
      "alpha = \"FIXED_WINDOW 5 1m\"\n");
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, {"port"}, &c).ok());
  EXPECT_EQ(c.port, 6380) << "a flag given on the command line wins";
  EXPECT_EQ(c.maxclients, 12);
  EXPECT_EQ(c.max_keys, 1000u);
  EXPECT_EQ(c.max_memory, 1u << 20);
  EXPECT_FALSE(c.protected_mode);
  ASSERT_EQ(c.policies.size(), 2u);
  auto policies = LoadPolicies(path);
  ASSERT_TRUE(policies.ok());
  EXPECT_EQ(policies->size(), 2u);
  std::remove(path.c_str());
}

TEST(ConfigTest, OverflowMode) {
  EXPECT_EQ(*ParseOverflowMode("fail-open"), rl::FailureMode::kFailOpen);
  EXPECT_EQ(*ParseOverflowMode("FAIL-CLOSED"), rl::FailureMode::kFailClosed);
  EXPECT_FALSE(ParseOverflowMode("").ok());
  EXPECT_FALSE(ParseOverflowMode("open").ok());
  EXPECT_EQ(OverflowModeName(rl::FailureMode::kFailClosed), "fail-closed");
  ServerConfig c;
  EXPECT_EQ(c.overflow, rl::FailureMode::kFailOpen) << "the default";
  std::string good = WriteTemp("overflow = \"fail-closed\"\n");
  ASSERT_TRUE(LoadConfigFile(good, {}, &c).ok());
  EXPECT_EQ(c.overflow, rl::FailureMode::kFailClosed);
  ServerConfig flag_wins;
  ASSERT_TRUE(LoadConfigFile(good, {"overflow"}, &flag_wins).ok());
  EXPECT_EQ(flag_wins.overflow, rl::FailureMode::kFailOpen);
  std::string wrong_value = WriteTemp("overflow = \"sometimes\"\n");
  std::string wrong_type = WriteTemp("overflow = true\n");
  EXPECT_FALSE(LoadConfigFile(wrong_value, {}, &c).ok());
  EXPECT_FALSE(LoadConfigFile(wrong_type, {}, &c).ok());
  for (const auto& p : {good, wrong_value, wrong_type}) std::remove(p.c_str());
}

// enable-debug-command: off by default; "no", "yes", "local" (or a TOML boolean); anything else
// refused. "local" lets only clients on this machine run DEBUG.
TEST(ConfigTest, EnableDebugCommand) {
  ServerConfig c;
  EXPECT_EQ(c.enable_debug_command, DebugCommandMode::kNo) << "off by default";
  EXPECT_FALSE(DebugAllowed(c, true));
  EXPECT_EQ(*ParseDebugCommandMode("LOCAL"), DebugCommandMode::kLocal);
  EXPECT_EQ(*ParseDebugCommandMode("yes"), DebugCommandMode::kYes);
  EXPECT_EQ(*ParseDebugCommandMode("no"), DebugCommandMode::kNo);
  EXPECT_FALSE(ParseDebugCommandMode("maybe").ok());
  EXPECT_FALSE(ParseDebugCommandMode("").ok());
  EXPECT_EQ(DebugCommandModeName(DebugCommandMode::kLocal), "local");
  ASSERT_TRUE(LoadConfigText("enable-debug-command = \"local\"\n", "a.toml", {}, &c).ok());
  EXPECT_EQ(c.enable_debug_command, DebugCommandMode::kLocal);
  EXPECT_TRUE(DebugAllowed(c, /*peer_is_local=*/true));
  EXPECT_FALSE(DebugAllowed(c, /*peer_is_local=*/false));
  ASSERT_TRUE(LoadConfigText("enable_debug_command = true\n", "b.toml", {}, &c).ok());
  EXPECT_EQ(c.enable_debug_command, DebugCommandMode::kYes);
  EXPECT_TRUE(DebugAllowed(c, false));
  EXPECT_FALSE(LoadConfigText("enable-debug-command = \"always\"\n", "c.toml", {}, &c).ok());
  EXPECT_FALSE(LoadConfigText("enable-debug-command = 1\n", "d.toml", {}, &c).ok());
}

TEST(ConfigTest, FileErrors) {
  ServerConfig c;
  std::string unknown = WriteTemp("portt = 1\n");
  EXPECT_FALSE(LoadConfigFile(unknown, {}, &c).ok());
  std::string syntax = WriteTemp("port = = 1\n");
  absl::Status st = LoadConfigFile(syntax, {}, &c);
  EXPECT_FALSE(st.ok());
  std::string types = WriteTemp("[policies]\napi = 5\n");
  EXPECT_FALSE(LoadConfigFile(types, {}, &c).ok());
  EXPECT_FALSE(LoadConfigFile("/nonexistent/rl.toml", {}, &c).ok());
  // A directory is no config (toml++ would read it as an empty document).
  EXPECT_FALSE(LoadConfigFile("/tmp", {}, &c).ok());
  EXPECT_FALSE(LoadPolicies("/tmp").ok());
  for (const auto& p : {unknown, syntax, types}) std::remove(p.c_str());
}

// toml++ 3.3.0 runs into undefined behaviour on non-ASCII characters (found by fuzz/config_fuzz),
// so it only ever gets ASCII: "..." strings keep theirs (as \u escapes), comments lose theirs,
// anywhere else (and in '...' strings, which cannot escape) one is refused with its line.
TEST(ConfigTest, NonAsciiReachesTomlOnlyAsEscapes) {
  ServerConfig c;
  // Between tokens, and where toml++ would scan a bare value on through a quote.
  absl::Status st = LoadConfigText("max-keys = 42\n\xc5\xa0x = 1\n", "a.toml", {}, &c);
  EXPECT_EQ(st.message(), "a.toml:2: non-ASCII character outside a quoted string or comment");
  EXPECT_FALSE(LoadConfigText("max-keys = -2\"\xc9\x8e\"\n", "b.toml", {}, &c).ok());
  EXPECT_FALSE(
      LoadConfigText("max-ke= 429'''49672648\x0f['))A\xef\xb6\xbfOPv\n", "b.toml", {}, &c).ok());
  EXPECT_EQ(LoadConfigText("snapshot = '/tmp/\xc3\xa9'\n", "c.toml", {}, &c).message(),
            "c.toml:1: non-ASCII character in a '...' string: write it in a \"...\" string");
  EXPECT_EQ(LoadConfigText("requirepass = \"a\xff\"\n", "d.toml", {}, &c).message(),
            "d.toml:1: invalid UTF-8");
  EXPECT_FALSE(LoadPoliciesText("[policies]\n\xc2\xa7 = \"GCRA 1 1s\"\n", "e.toml").ok());
  // Kept: "..." strings (keys too, and after a line-ending backslash), comments, a BOM.
  ASSERT_TRUE(LoadConfigText("\xef\xbb\xbf# caf\xc3\xa9\n"
                             "requirepass = \"caf\xc3\xa9 \xf0\x9f\x94\x91\"\n"
                             "snapshot = \"\"\"\\\n  \xc2\xa7\"\"\"\n"
                             "[policies]\n\"\xc3\xa9t\xc3\xa9\" = \"GCRA 1 1s\" # \xc3\xa9\n",
                             "f.toml", {}, &c)
                  .ok());
  EXPECT_EQ(c.requirepass, "caf\xc3\xa9 \xf0\x9f\x94\x91");
  EXPECT_EQ(c.snapshot_file, "\xc2\xa7");
  ASSERT_EQ(c.policies.size(), 1u);
  EXPECT_EQ(c.policies[0].first, "\xc3\xa9t\xc3\xa9");
}

TEST(ConfigTest, PasswordComparison) {
  EXPECT_TRUE(PasswordMatches("s3cret", "s3cret"));
  EXPECT_FALSE(PasswordMatches("s3cres", "s3cret"));
  EXPECT_FALSE(PasswordMatches("s3cre", "s3cret"));
  EXPECT_FALSE(PasswordMatches("s3crets", "s3cret"));
  EXPECT_FALSE(PasswordMatches("", "s3cret"));
  EXPECT_FALSE(PasswordMatches("", "")) << "no password configured never matches";
}

// config/rl.toml as shipped: it loads, every policy in it parses, and the `<limit> :=` grammar in
// its comment names every algorithm and option the parser takes (CONCURRENCY, BLOCK and LEASE
// were missing).
TEST(ConfigTest, ShippedConfigLoadsAndItsGrammarIsComplete) {
  const std::string path = RL_SOURCE_DIR "/config/rl.toml";
  ServerConfig c;
  absl::Status loaded = LoadConfigFile(path, {}, &c);
  ASSERT_TRUE(loaded.ok()) << loaded;
  EXPECT_FALSE(c.policies.empty());
  for (const auto& [name, spec] : c.policies) {
    EXPECT_TRUE(rl::ParsePolicy(name, spec).ok()) << name << " = " << spec;
  }
  std::ifstream in(path);
  std::string line, grammar;
  bool in_grammar = false;
  while (std::getline(in, line)) {
    if (line.find("<limit> :=") != std::string::npos) in_grammar = true;
    if (in_grammar && (line.rfind("#", 0) != 0 || line.find(":=") == std::string::npos) &&
        line.find("| ") == std::string::npos) {
      break;
    }
    if (in_grammar) grammar += line + "\n";
  }
  ASSERT_FALSE(grammar.empty()) << "no <limit> := grammar in " << path;
  for (const char* word : {"TOKEN_BUCKET", "GCRA", "SLIDING_LOG", "SLIDING_WINDOW", "FIXED_WINDOW",
                           "LEAKY_BUCKET", "CONCURRENCY", "BURST", "BLOCK", "LEASE"}) {
    EXPECT_NE(grammar.find(word), std::string::npos) << word << " missing from\n" << grammar;
  }
}

}  // namespace
}  // namespace rl::server

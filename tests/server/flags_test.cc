// Startup settings of the real binary: every numeric flag and TOML setting is range-checked
// ("-1", overflow, wrapped values, junk are refused with the flag's name and exit code 1; an
// unknown flag is a usage error, exit 2), and a config path that is not a readable regular file
// is refused at start and, on SIGHUP, leaves the current policies in place.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "config.h"
#include "resp_client.h"
#include "server_process.h"
#include "test_files.h"

namespace rl::test {
namespace {

// Runs rl-server with `args` (it must exit by itself within 10 s) and returns its exit code;
// stdout and stderr go to *output.
int RunServer(const std::string& args, std::string* output) {
  std::string cmd = "timeout 10 " + std::string(RL_SERVER_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) output->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

using rl_test::TempDir;

TEST(FlagsTest, EveryNumericFlagRefusesNegativeOverflowAndJunk) {
  for (const server::NumericSetting& s : server::NumericSettings()) {
    std::string flag = "--" + std::string(s.name);
    // Never a server that starts: --port 0 only keeps a wrongly accepted value off 6380.
    std::string prefix = s.name == "port" ? "" : "--port 0 ";
    for (std::string bad : {"-1", "99999999999999999999999", "abc", "1e3", "12 "}) {
      std::string out;
      int code = RunServer(prefix + flag + "='" + bad + "'", &out);
      EXPECT_EQ(code, 1) << flag << "=" << bad << ": " << out;
      EXPECT_NE(out.find(flag + ":"), std::string::npos) << flag << "=" << bad << ": " << out;
      EXPECT_EQ(out.find("ready"), std::string::npos) << out;
    }
    // One past the top of the range.
    std::string above = server::FormatNumericSetting(s, s.max);
    if (s.unit == server::SettingUnit::kCount) above = std::to_string(s.max + 1);
    if (s.unit == server::SettingUnit::kBytes) above = std::to_string(s.max + 1);
    if (s.unit == server::SettingUnit::kDurationMs) above = std::to_string(s.max + 1) + "ms";
    std::string out;
    EXPECT_EQ(RunServer(prefix + flag + " " + above, &out), 1) << flag << " " << above << out;
  }
}

TEST(FlagsTest, MaxKeysMinusOneWasAcceptedAndWrapped) {
  // The case: program_options parsed "-1" into size_t as 2^64-1 and the engine kept 256
  // states. Now refused, naming the range.
  std::string out;
  EXPECT_EQ(RunServer("--port 0 --max-keys -1", &out), 1);
  EXPECT_NE(out.find("--max-keys: '-1' is not an integer in 0..4294967296"), std::string::npos)
      << out;
  // A valid value is taken as given.
  ServerProcess server({"--max-keys", "100000"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  EXPECT_NE(c.Call({"INFO", "memory"}).str.find("max_keys:100000\r\n"), std::string::npos);
  EXPECT_EQ(server.Terminate(), 0);
}

// INFO's max_keys is the bound in force, not the setting as typed: without --max-keys the
// engine's default (2^24), and with --max-memory what those bytes allow (64 B per key).
TEST(FlagsTest, InfoShowsTheKeyBoundInForce) {
  {
    ServerProcess server({"--threads", "1"});
    ASSERT_GT(server.port(), 0);
    RespClient c(server.port());
    const std::string info = c.Call({"INFO", "memory"}).str;
    EXPECT_NE(info.find("max_keys:16777216\r\n"), std::string::npos) << info;
    EXPECT_EQ(server.Terminate(), 0);
  }
  ServerProcess server({"--threads", "1", "--max-memory", "64mb"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  const std::string info = c.Call({"INFO", "memory"}).str;
  EXPECT_NE(info.find("max_keys:1048576\r\n"), std::string::npos) << info;
  EXPECT_EQ(server.Terminate(), 0);
}

// The store's shard count follows the I/O threads (64 per thread, 256 at least) and no longer
// falls with a low --max-keys (100000 gave 32 shards); only a bound too small to share out (256
// keys per shard at least) keeps fewer.
TEST(FlagsTest, ShardCountFollowsThreadsNotALowKeyBound) {
  struct Case {
    std::vector<std::string> flags;
    std::string want;
  };
  for (const Case& k : {Case{{"--threads", "8"}, "shards:512\r\n"},
                        Case{{"--threads", "2", "--max-keys", "100000"}, "shards:256\r\n"},
                        Case{{"--threads", "1", "--max-keys", "100"}, "shards:1\r\n"}}) {
    ServerProcess server(k.flags);
    ASSERT_GT(server.port(), 0);
    RespClient c(server.port());
    const std::string info = c.Call({"INFO", "memory"}).str;
    EXPECT_NE(info.find(k.want), std::string::npos) << info;
    EXPECT_EQ(server.Terminate(), 0);
  }
}

TEST(FlagsTest, UnknownFlagIsAUsageError) {
  std::string out;
  EXPECT_EQ(RunServer("--port 0 --no-such-flag", &out), 2);
  EXPECT_NE(out.find("Usage:"), std::string::npos) << out;
}

// The version is written once (the top-level CMakeLists.txt) and reaches --version and INFO.
TEST(FlagsTest, VersionComesFromTheProjectVersion) {
  std::string out;
  EXPECT_EQ(RunServer("--version", &out), 0);
  EXPECT_EQ(out, "rl-server 0.3.0\n");
  ServerProcess server;
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  EXPECT_NE(c.Call({"INFO", "server"}).str.find("rl_version:0.3.0\r\n"), std::string::npos);
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(FlagsTest, EnableDebugCommandTakesNoYesOrLocal) {
  std::string out;
  EXPECT_EQ(RunServer("--port 0 --enable-debug-command sometimes", &out), 1);
  EXPECT_NE(out.find("--enable-debug-command: enable-debug-command must be no, yes or local"),
            std::string::npos)
      << out;
}

TEST(FlagsTest, TomlNumbersAreRangeChecked) {
  const TempDir dir("rl-flags-test");
  // 2^32 + 80 used to be narrowed to port 80; -1 max-keys was refused already, floats were not
  // named.
  const std::pair<const char*, const char*> cases[] = {
      {"port = 4294967376\n", "port: '4294967376' is not an integer in 0..65535"},
      {"threads = 4294967297\n", "threads:"},
      {"metrics-port = -1\n", "metrics-port:"},
      {"max-keys = 9223372036854775807\n", "max-keys:"},
      {"max-memory = \"-1\"\n", "max-memory:"},
      {"timeout = 1.5\n", "timeout: must be an integer"},
      {"snapshot-interval = 0\n", "snapshot-interval:"},
      {"proto-max-bulk-len = \"2gb\"\n", "proto-max-bulk-len:"},
      {"client-query-buffer-total = 1\n", "client-query-buffer-total:"},
  };
  for (const auto& [toml, expected] : cases) {
    std::string path = dir.Write("rl.toml", toml);
    std::string out;
    // A --port flag would win over the file's port.
    std::string port = std::string_view(toml).starts_with("port") ? "" : " --port 0";
    EXPECT_EQ(RunServer("--config " + path + port, &out), 1) << toml << out;
    EXPECT_NE(out.find(expected), std::string::npos) << toml << out;
  }
  // Sizes and durations may be written as text or as integers (bytes, milliseconds).
  std::string path = dir.Write("ok.toml",
                               "proto-max-bulk-len = \"64kb\"\nclient-query-buffer-limit = "
                               "1048576\nsnapshot-interval = 250\n");
  server::ServerConfig config;
  ASSERT_TRUE(server::LoadConfigFile(path, {}, &config).ok());
  EXPECT_EQ(config.proto_max_bulk_len, 64u << 10);
  EXPECT_EQ(config.client_query_limit, 1u << 20);
  EXPECT_EQ(config.snapshot_interval_ms, 250);
}

TEST(FlagsTest, ConfigPathThatIsNotARegularFileIsRefusedAtStart) {
  const TempDir dir("rl-flags-test");
  std::string sub = dir.path() + "/rl.toml";
  ASSERT_EQ(mkdir(sub.c_str(), 0700), 0);
  std::string out;
  EXPECT_EQ(RunServer("--port 0 --config " + sub, &out), 1);
  EXPECT_NE(out.find("is a directory"), std::string::npos) << out;
  EXPECT_EQ(out.find("ready"), std::string::npos) << out;

  // A FIFO would block the start forever (nobody writes to it).
  std::string fifo = dir.path() + "/fifo.toml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  out.clear();
  EXPECT_EQ(RunServer("--port 0 --config " + fifo, &out), 1);
  EXPECT_NE(out.find("not a regular file"), std::string::npos) << out;

  out.clear();
  EXPECT_EQ(RunServer("--port 0 --config " + dir.path() + "/missing.toml", &out), 1);
  EXPECT_NE(out.find("cannot read config file"), std::string::npos) << out;

  if (geteuid() != 0) {  // root reads a mode-000 file anyway
    std::string locked = dir.Write("locked.toml", "port = 0\n");
    chmod(locked.c_str(), 0);
    out.clear();
    EXPECT_EQ(RunServer("--port 0 --config " + locked, &out), 1);
    EXPECT_NE(out.find("Permission denied"), std::string::npos) << out;
  }
}

TEST(FlagsTest, ReloadFromADirectoryKeepsThePolicies) {
  const TempDir dir("rl-flags-test");
  std::string path = dir.Write("rl.toml", "[policies]\napi = \"FIXED_WINDOW 2 1m\"\n");
  std::string log = dir.path() + "/stderr.log";
  ServerOptions options;
  options.quiet = false;
  options.stderr_path = log;
  ServerProcess server({"--config", path, "--threads", "1"}, options);
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  ASSERT_EQ(c.Call({"RL.POLICY", "GET", "api"}).str, "FIXED_WINDOW 2 1m");

  // The file becomes a directory (a botched deploy): the reload fails and says why; before
  // the fix toml++ read it as an empty file and every policy was dropped.
  std::filesystem::remove(path);
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
  server.Signal(SIGHUP);
  bool logged = false;
  for (int i = 0; i < 100 && !logged; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    logged = rl_test::ReadFile(log).find("reload failed") != std::string::npos;
  }
  EXPECT_TRUE(logged) << rl_test::ReadFile(log);
  EXPECT_NE(rl_test::ReadFile(log).find("is a directory"), std::string::npos)
      << rl_test::ReadFile(log);
  EXPECT_EQ(c.Call({"RL.POLICY", "GET", "api"}).str, "FIXED_WINDOW 2 1m");
  EXPECT_EQ(c.Call({"RL.CHECK", "u", "POLICY", "api"}).Ints().at(0), 1);
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

// SIGHUP reloads of the real server: a file start would refuse (a value out of range, an unknown
// setting, a bad policy) is refused whole by a reload too, and says so in INFO and /metrics, not
// only in the log; a setting that only a restart applies is named in the log, INFO and /metrics;
// --check-config gives the same verdict before a reload (systemd's ExecReload uses it); a
// changed window carries each key's use over.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "resp_client.h"
#include "server_process.h"
#include "subprocess.h"
#include "test_files.h"

namespace rl::test {
namespace {

void Rewrite(const std::string& path, const std::string& content) {
  std::string tmp = path + ".new";
  std::ofstream(tmp) << content;
  std::rename(tmp.c_str(), path.c_str());
}

std::string Field(const std::string& info, const std::string& field) {
  size_t pos = info.find("\r\n" + field + ":");
  if (pos == std::string::npos) return "";
  size_t start = pos + field.size() + 3;
  return info.substr(start, info.find("\r\n", start) - start);
}

// One sample of the /metrics page (a raw HTTP GET), or "" when absent.
std::string Metric(int port, const std::string& sample) {
  RespClient conn(port);
  conn.SendRaw("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string raw;
  char buf[65536];
  timeval tv{5, 0};
  setsockopt(conn.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  for (ssize_t n; (n = recv(conn.fd(), buf, sizeof(buf), 0)) > 0;) raw.append(buf, n);
  size_t pos = raw.find("\n" + sample + " ");
  if (pos == std::string::npos) return "";
  size_t start = pos + sample.size() + 2;
  return raw.substr(start, raw.find('\n', start) - start);
}

int CheckConfig(const std::string& path) {
  std::string cmd =
      std::string(RL_SERVER_PATH) + " --check-config --config " + path + " >/dev/null 2>&1";
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class ReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temp_.path().empty());
    dir_ = temp_.path();
    config_ = dir_ + "/rl.toml";
    log_ = dir_ + "/server.log";
  }

  // Sends SIGHUP and waits for the reload counters of INFO to move; returns INFO server.
  std::string Reload(ServerProcess& server, RespClient& c) {
    auto count = [&] {
      std::string info = c.Call({"INFO", "server"}).str;
      return Field(info, "config_reloads_ok") + "/" + Field(info, "config_reloads_failed");
    };
    const std::string before = count();
    server.Signal(SIGHUP);
    for (int i = 0; i < 200 && count() == before; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return c.Call({"INFO", "server"}).str;
  }

  const rl_test::TempDir temp_{"rl-reload-test"};
  std::string dir_, config_, log_;
};

TEST_F(ReloadTest, AFileStartWouldRefuseIsRefusedWholeAndReported) {
  const std::string good = "threads = 1\n[policies]\napi = \"GCRA 5 1m\"\n";
  std::ofstream(config_) << good;
  const int metrics_port = rl_test::FreeLoopbackPort();
  ServerOptions options;
  options.quiet = false;
  options.stderr_path = log_;
  ServerProcess server({"--config", config_, "--metrics-port", std::to_string(metrics_port)},
                       options);
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  std::string info = c.Call({"INFO", "server"}).str;
  EXPECT_EQ(Field(info, "config_reload_last_status"), "none");
  EXPECT_EQ(Metric(metrics_port, "rl_config_last_reload_successful"), "1");

  // Start refuses each of these files; so must a reload, leaving the policies as they were.
  const std::string bad[] = {
      "threads = 1\nmaxclients = -5\n[policies]\napi = \"GCRA 9 1m\"\n",
      "threads = 1\nno_such_setting = 1\n[policies]\napi = \"GCRA 9 1m\"\n",
      "threads = 1\n[policies]\napi = \"GCRA 9 1m\"\nbroken = \"GCRA x 1m\"\n",
  };
  for (size_t i = 0; i < std::size(bad); ++i) {
    Rewrite(config_, bad[i]);
    EXPECT_EQ(CheckConfig(config_), 1) << bad[i];
    info = Reload(server, c);
    EXPECT_EQ(Field(info, "config_reloads_failed"), std::to_string(i + 1)) << bad[i];
    EXPECT_EQ(Field(info, "config_reload_last_status"), "error");
    EXPECT_NE(Field(info, "config_reload_last_time"), "0");
    EXPECT_EQ(c.Call({"RL.POLICY", "GET", "api"}).str, "GCRA 5 1m") << bad[i];
  }
  EXPECT_NE(Field(info, "config_reload_last_message").find("broken"), std::string::npos) << info;
  EXPECT_EQ(Metric(metrics_port, "rl_config_last_reload_successful"), "0");
  EXPECT_EQ(Metric(metrics_port, "rl_config_reloads_total{result=\"error\"}"), "3");

  // A good file applies its policies; a setting only a restart applies is named everywhere.
  Rewrite(config_, "threads = 1\nmaxclients = 50\n[policies]\napi = \"GCRA 9 1m\"\n");
  EXPECT_EQ(CheckConfig(config_), 0);
  info = Reload(server, c);
  EXPECT_EQ(Field(info, "config_reload_last_status"), "ok");
  EXPECT_EQ(Field(info, "config_reloads_ok"), "1");
  EXPECT_EQ(Field(info, "config_restart_pending"), "maxclients");
  EXPECT_EQ(c.Call({"RL.POLICY", "GET", "api"}).str, "GCRA 9 1m");
  EXPECT_EQ(Metric(metrics_port, "rl_config_last_reload_successful"), "1");
  EXPECT_EQ(Metric(metrics_port, "rl_config_restart_pending_settings"), "1");
  EXPECT_EQ(Field(c.Call({"INFO", "clients"}).str, "maxclients"), "10000") << "not applied";
  const std::string log = rl_test::ReadFile(log_);
  EXPECT_NE(log.find("maxclients (10000 -> 50)"), std::string::npos) << log;
  EXPECT_NE(log.find("not reloadable"), std::string::npos) << log;

  // Back to the running values: nothing waits for a restart any more.
  Rewrite(config_, good);
  info = Reload(server, c);
  EXPECT_EQ(Field(info, "config_reload_last_status"), "ok");
  EXPECT_EQ(Field(info, "config_restart_pending"), "");
  EXPECT_EQ(server.Terminate(), 0);
}

TEST_F(ReloadTest, FlagsStillWinOverTheFileOnReload) {
  std::ofstream(config_) << "timeout = 30\n[policies]\napi = \"GCRA 5 1m\"\n";
  ServerProcess server({"--config", config_, "--timeout", "7"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  // The file's timeout changes, but the command line's 7 is what the server runs with.
  Rewrite(config_, "timeout = 60\n[policies]\napi = \"GCRA 5 1m\"\n");
  std::string info = Reload(server, c);
  EXPECT_EQ(Field(info, "config_reload_last_status"), "ok");
  EXPECT_EQ(Field(info, "config_restart_pending"), "");
  EXPECT_EQ(server.Terminate(), 0);
}

// A changed window carries each key's use over, by reload and by RL.POLICY SET alike.
TEST_F(ReloadTest, AChangedWindowCarriesEachKeysUseOver) {
  std::ofstream(config_) << "[policies]\napi = \"SLIDING_LOG 3 1m\"\n";
  ServerProcess server({"--config", config_});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  auto allowed = [&](const std::string& key, const std::string& policy) {
    return c.Call({"RL.CHECK", key, "POLICY", policy}).Ints()[0];
  };
  for (int i = 0; i < 3; ++i) ASSERT_EQ(allowed("full", "api"), 1);
  ASSERT_EQ(allowed("full", "api"), 0);
  ASSERT_EQ(allowed("one", "api"), 1);
  Rewrite(config_, "[policies]\napi = \"SLIDING_LOG 3 2m\"\n");
  ASSERT_EQ(Field(Reload(server, c), "config_reload_last_status"), "ok");
  ASSERT_EQ(c.Call({"RL.POLICY", "GET", "api"}).str, "SLIDING_LOG 3 2m");
  EXPECT_EQ(allowed("full", "api"), 0) << "a key at its limit got a fresh allowance";
  EXPECT_EQ(allowed("one", "api"), 1);
  EXPECT_EQ(allowed("one", "api"), 1);
  EXPECT_EQ(allowed("one", "api"), 0) << "1 of 3 used carries over";

  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "rt", "GCRA", "2", "1m"}).str, "OK");
  for (int i = 0; i < 2; ++i) ASSERT_EQ(allowed("k", "rt"), 1);
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "rt", "GCRA", "2", "1h"}).str, "OK");
  EXPECT_EQ(allowed("k", "rt"), 0) << "RL.POLICY SET with another window";
  EXPECT_EQ(server.Terminate(), 0);
}

// The same when the window changes while the server is down: the snapshot's version of the
// policy links to the file's new one at start.
TEST_F(ReloadTest, AWindowChangedAcrossARestartCarriesOverToo) {
  const std::string snapshot = dir_ + "/state.rlsnap";
  std::ofstream(config_) << "[policies]\napi = \"FIXED_WINDOW 2 1m\"\n";
  {
    ServerProcess server({"--config", config_, "--snapshot", snapshot});
    ASSERT_GT(server.port(), 0);
    RespClient c(server.port());
    for (int i = 0; i < 2; ++i) ASSERT_EQ(c.Call({"RL.CHECK", "k", "POLICY", "api"}).Ints()[0], 1);
    ASSERT_EQ(server.Terminate(), 0);
  }
  Rewrite(config_, "[policies]\napi = \"FIXED_WINDOW 2 5m\"\n");
  ServerProcess server({"--config", config_, "--snapshot", snapshot});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  EXPECT_EQ(c.Call({"RL.CHECK", "k", "POLICY", "api"}).Ints()[0], 0) << "fresh after a restart";
  EXPECT_EQ(c.Call({"RL.CHECK", "other", "POLICY", "api"}).Ints()[0], 1);
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

// Starts the real rl-server binary on a free loopback port (--port 0; the server prints the port
// it bound on its readiness line), and stops it. Used by every server test.
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "subprocess.h"

namespace rl::test {

// How the server process is started beyond its flags.
struct ServerOptions {
  bool quiet = true;        // pass --quiet (no log lines)
  std::string stderr_path;  // non-empty: the server's stderr goes to this file (for its logs)
  rlim_t nofile = 0;        // non-zero: RLIMIT_NOFILE of the server (soft and hard)
};

// rl-server as a child process (tests/support/subprocess.h: reaped always, killed if the test
// dies), ready once it has printed the port it bound.
class ServerProcess {
 public:
  // Starts RL_SERVER_PATH with `flags` (plus --port 0 --bind 127.0.0.1 unless given) and waits
  // up to 10 s for "rl-server ready: listening on HOST:PORT". port() is 0 on failure.
  explicit ServerProcess(std::vector<std::string> flags = {}, ServerOptions options = {}) {
    std::vector<std::string> argv = {RL_SERVER_PATH};
    if (options.quiet) argv.push_back("--quiet");
    bool has_port = false;
    for (const auto& f : flags) has_port = has_port || f == "--port";
    if (!has_port) argv.insert(argv.end(), {"--port", "0"});
    argv.insert(argv.end(), flags.begin(), flags.end());
    rl_test::SpawnOptions spawn;
    spawn.stderr_path = options.stderr_path;
    spawn.nofile = options.nofile;
    if (!process_.Start(argv, spawn)) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::string line;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (!process_.ReadLine(&line, left)) break;
      const size_t colon = line.rfind(':');
      if (line.rfind("rl-server ready", 0) == 0 && colon != std::string::npos) {
        port_ = std::atoi(line.c_str() + colon + 1);
        break;
      }
    }
  }

  int port() const { return port_; }
  pid_t pid() const { return process_.pid(); }
  void Signal(int signo) { process_.Signal(signo); }

  // Sends SIGTERM and waits up to `timeout_ms`; returns the exit code, or -1 on timeout/signal.
  int Terminate(int timeout_ms = 10000) {
    Signal(SIGTERM);
    return Wait(timeout_ms);
  }

  int Wait(int timeout_ms) {
    std::optional<int> status = process_.Wait(std::chrono::milliseconds(timeout_ms));
    return status.has_value() && *status >= 0 && *status < 128 ? *status : -1;
  }

 private:
  rl_test::Subprocess process_;
  int port_ = 0;
};

// A test suite whose tests share one rl-server (--threads 2), started before the suite's first
// test and stopped (exit code 0 expected) after its last. CRTP gives each suite its own server.
template <typename Suite>
class SharedServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--threads", "2"});
    ASSERT_GT(server_->port(), 0) << "rl-server did not start";
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->Terminate(), 0);
    delete server_;
    server_ = nullptr;
  }
  int port() const { return server_->port(); }
  static inline ServerProcess* server_ = nullptr;
};

}  // namespace rl::test

// Starts the real rl-server binary on a free loopback port (--port 0; the server prints the port
// it bound on its readiness line), and stops it: the one way every test (server, client, module
// parity, examples) starts rl-server.
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

// Starts `binary` (an rl-server) in `process` with `flags`, plus --port 0 unless they name a
// port, and waits up to 20 s (a loaded machine starts slowly) for its readiness line, "rl-server
// ready: listening on HOST:PORT". Returns the port, 0 on failure.
inline int StartRlServer(rl_test::Subprocess& process, const std::string& binary,
                         const std::vector<std::string>& flags, const ServerOptions& options = {}) {
  std::vector<std::string> argv = {binary};
  if (options.quiet) argv.push_back("--quiet");
  bool has_port = false;
  for (const auto& f : flags) has_port = has_port || f == "--port";
  if (!has_port) argv.insert(argv.end(), {"--port", "0"});
  argv.insert(argv.end(), flags.begin(), flags.end());
  rl_test::SpawnOptions spawn;
  spawn.stderr_path = options.stderr_path;
  spawn.nofile = options.nofile;
  if (!process.Start(argv, spawn)) return 0;
  return rl_test::ReadyPort(process, "rl-server ready: listening on ",
                            std::chrono::milliseconds(20000));
}

#ifdef RL_SERVER_PATH
// rl-server (RL_SERVER_PATH) as a child process (tests/support/subprocess.h: reaped always,
// killed if the test dies), ready once it has printed the port it bound.
class ServerProcess {
 public:
  // Starts RL_SERVER_PATH as StartRlServer does. port() is 0 on failure.
  explicit ServerProcess(std::vector<std::string> flags = {}, ServerOptions options = {})
      : port_(StartRlServer(process_, RL_SERVER_PATH, flags, options)) {}

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
  int port_;
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
#endif  // RL_SERVER_PATH

}  // namespace rl::test

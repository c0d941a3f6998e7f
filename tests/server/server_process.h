// Starts the real rl-server binary on a free loopback port (--port 0; the server prints the port
// it bound on its readiness line), and stops it. Used by every server test.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace rl::test {

// How the server process is started beyond its flags.
struct ServerOptions {
  bool quiet = true;        // pass --quiet (no log lines)
  std::string stderr_path;  // non-empty: the server's stderr goes to this file (for its logs)
  rlim_t nofile = 0;        // non-zero: RLIMIT_NOFILE of the server (soft and hard)
};

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
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      if (!options.stderr_path.empty()) {
        int err = open(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (err >= 0) {
          dup2(err, STDERR_FILENO);
          close(err);
        }
      }
      if (options.nofile > 0) {
        rlimit lim{options.nofile, options.nofile};
        setrlimit(RLIMIT_NOFILE, &lim);
      }
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    close(out[1]);
    stdout_fd_ = out[0];
    std::string line;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{stdout_fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char c;
      if (read(stdout_fd_, &c, 1) != 1) break;
      if (c != '\n') {
        line.push_back(c);
        continue;
      }
      size_t colon = line.rfind(':');
      if (line.rfind("rl-server ready", 0) == 0 && colon != std::string::npos) {
        port_ = std::atoi(line.c_str() + colon + 1);
        break;
      }
      line.clear();
    }
  }

  ~ServerProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_fd_ >= 0) close(stdout_fd_);
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  void Signal(int signo) { kill(pid_, signo); }

  // Sends SIGTERM and waits up to `timeout_ms`; returns the exit code, or -1 on timeout/signal.
  int Terminate(int timeout_ms = 10000) {
    kill(pid_, SIGTERM);
    return Wait(timeout_ms);
  }

  int Wait(int timeout_ms) {
    for (int waited = 0; waited <= timeout_ms; waited += 10) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      usleep(10 * 1000);
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int port_ = 0;
  bool exited_ = false;
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

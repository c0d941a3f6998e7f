// Test support: start a real program (rl-server, rl-http-example, redis-server, redis-cli) as a
// child process, read its stdout or send it to a file, wait for it with a bound, signal it, and
// always reap it. The child gets SIGKILL if the test process dies first (PR_SET_PDEATHSIG), so
// a crashed or timed-out test leaves no server behind. Header-only, Linux.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace rl_test {

// A port that was free a moment ago (the kernel picks it; the tiny race is acceptable in tests).
inline int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// True once something accepts TCP connections on 127.0.0.1:port, false after `timeout`.
inline bool WaitForPort(int port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Where a child's stdout and stderr go.
struct SpawnOptions {
  enum class Output {
    kPipe,     // stdout to a pipe read with ReadLine/ReadAll; stderr as below
    kInherit,  // the test's own stdout
    kFile,     // stdout and stderr appended to `output_path`
  };
  Output output = Output::kPipe;
  std::string output_path;        // for kFile
  bool stderr_to_stdout = false;  // for kPipe: capture stderr too (otherwise it is the test's)
  std::string stderr_path;        // for kPipe: stderr to this file (truncated) instead
  rlim_t nofile = 0;              // non-zero: the child's RLIMIT_NOFILE (soft and hard)
};

class Subprocess {
 public:
  Subprocess() = default;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess() { Kill(); }

  // Starts argv[0] (a path) with argv. False when the program could not be started.
  bool Start(const std::vector<std::string>& argv, const SpawnOptions& options = {}) {
    Kill();
    if (argv.empty()) return false;
    int fds[2] = {-1, -1};
    int file_fd = -1;
    if (options.output == SpawnOptions::Output::kPipe && ::pipe2(fds, O_CLOEXEC) != 0) {
      return false;
    }
    if (options.output == SpawnOptions::Output::kFile) {
      file_fd =
          ::open(options.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (file_fd < 0) return false;
    }
    int err_fd = -1;
    if (options.output == SpawnOptions::Output::kPipe && !options.stderr_path.empty()) {
      err_fd = ::open(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (err_fd < 0) return false;
    }
    // Everything the child touches is prepared before fork: between fork and exec only
    // async-signal-safe calls are allowed (the test may have threads).
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the parent is already gone
      if (fds[1] >= 0) {
        ::dup2(fds[1], STDOUT_FILENO);
        if (options.stderr_to_stdout) ::dup2(fds[1], STDERR_FILENO);
      }
      if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
      if (file_fd >= 0) {
        ::dup2(file_fd, STDOUT_FILENO);
        ::dup2(file_fd, STDERR_FILENO);
      }
      if (options.nofile > 0) {
        const rlimit lim{options.nofile, options.nofile};
        ::setrlimit(RLIMIT_NOFILE, &lim);
      }
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    if (fds[1] >= 0) ::close(fds[1]);
    if (file_fd >= 0) ::close(file_fd);
    if (err_fd >= 0) ::close(err_fd);
    if (pid < 0) {
      if (fds[0] >= 0) ::close(fds[0]);
      return false;
    }
    pid_ = pid;
    stdout_fd_ = fds[0];
    return true;
  }

  // stdout to a pipe, stderr to `stderr_path` (truncated) for the test to read.
  bool Start(const std::vector<std::string>& argv, const std::string& stderr_path) {
    SpawnOptions options;
    options.stderr_path = stderr_path;
    return Start(argv, options);
  }

  // SIGSTOP, and returns once the child is stopped: kill() only queues the signal, and a child
  // that is still running on another CPU may answer a request or two after it returned.
  bool Stop() {
    if (pid_ <= 0 || ::kill(pid_, SIGSTOP) != 0) return false;
    int status = 0;
    return ::waitpid(pid_, &status, WUNTRACED) == pid_ && WIFSTOPPED(status);
  }

  // The next line of the child's stdout, or false after `timeout` / at end of output.
  bool ReadLine(std::string* line, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        *line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return true;
      }
      if (!ReadMore(deadline)) return false;
    }
  }

  // Everything the child writes to stdout until it closes it, or until `timeout`; true if the
  // end of output was reached in time.
  bool ReadAll(std::string* out, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool eof = false;
    while (!eof) {
      if (!ReadMore(deadline, &eof) && !eof) break;
    }
    *out = std::move(buffer_);
    buffer_.clear();
    return eof;
  }

  // Waits up to `timeout` for the child to exit and reaps it. The exit code, 128 + signal number
  // when a signal ended it, or nullopt if it is still running.
  std::optional<int> Wait(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return exit_status_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      const pid_t got = ::waitpid(pid_, &status, WNOHANG);
      if (got == pid_ || (got < 0 && errno == ECHILD)) {
        exit_status_ = got == pid_ && WIFEXITED(status)     ? WEXITSTATUS(status)
                       : got == pid_ && WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                                            : -1;
        pid_ = -1;
        return exit_status_;
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // SIGTERM, then SIGKILL if it has not exited after `grace`. The exit status as for Wait.
  std::optional<int> Terminate(std::chrono::milliseconds grace) {
    Signal(SIGTERM);
    if (auto status = Wait(grace)) return status;
    Kill();
    return exit_status_;
  }

  void Signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }

  // SIGKILL (after SIGCONT, in case it was stopped) and reap; safe to call twice.
  void Kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGCONT);
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      exit_status_ = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
      pid_ = -1;
    }
    if (stdout_fd_ >= 0) {
      ::close(stdout_fd_);
      stdout_fd_ = -1;
    }
    buffer_.clear();
  }

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  // Appends what is readable before `deadline` to buffer_; false on timeout or end of output
  // (then *eof is set).
  bool ReadMore(std::chrono::steady_clock::time_point deadline, bool* eof = nullptr) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || stdout_fd_ < 0) return false;
    pollfd pfd{stdout_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return false;
    char chunk[4096];
    const ssize_t n = ::read(stdout_fd_, chunk, sizeof(chunk));
    if (n <= 0) {
      if (eof != nullptr) *eof = true;
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::optional<int> exit_status_;
  std::string buffer_;
};

// The port a child names on its readiness line: the first stdout line within `timeout` that
// starts with `prefix` ends in ":PORT" (rl-server with --port 0 prints "rl-server ready:
// listening on 127.0.0.1:PORT"). Other lines before it are skipped; 0 when none came. Binding
// port 0 and reading the port back leaves no gap in which another test could take it.
inline int ReadyPort(Subprocess& process, const std::string& prefix,
                     std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string line;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !process.ReadLine(&line, left)) return 0;
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t colon = line.rfind(':');
    if (colon == std::string::npos) return 0;
    const int port = std::atoi(line.c_str() + colon + 1);
    return port > 0 && port <= 65535 ? port : 0;
  }
}

// Runs argv to completion with stdout and stderr captured. The exit status (as Subprocess::Wait)
// or nullopt if it did not finish within `timeout` (it is killed then).
struct RunResult {
  std::optional<int> exit_status;
  std::string output;
};
inline RunResult Run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  RunResult result;
  Subprocess process;
  SpawnOptions options;
  options.stderr_to_stdout = true;
  if (!process.Start(argv, options)) return result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  process.ReadAll(&result.output, timeout);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  result.exit_status = process.Wait(std::max(left, std::chrono::milliseconds(0)));
  return result;
}

}  // namespace rl_test

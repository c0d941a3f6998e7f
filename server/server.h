// The rl-server process: one acceptor, N I/O threads with an io_context each (connections are
// handed out round-robin and stay on their thread), signal handling (SIGTERM/SIGINT: stop
// accepting, finish replies, exit 0; SIGHUP: reload the config file's policies).
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/status/status.h"
#include "server_state.h"

namespace rl::server {

class Connection;
class MetricsHttpServer;
class Snapshotter;

// One I/O thread: its io_context, its connections and its counters.
class Worker {
 public:
  Worker(ServerState* state, WorkerStats* stats);
  boost::asio::io_context& context() { return ctx_; }
  ServerState& state() { return *state_; }
  WorkerStats& stats() { return *stats_; }

  // Takes an accepted socket; runs on this worker's thread.
  void Adopt(boost::asio::ip::tcp::socket socket);
  void Register(Connection* conn);
  void Unregister(Connection* conn);
  // Closes connections gracefully and lets run() return once they are gone.
  void BeginShutdown();
  void Run();

 private:
  void ScheduleSweep();
  void Sweep();  // idle timeouts

  ServerState* state_;
  WorkerStats* stats_;
  boost::asio::io_context ctx_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  boost::asio::steady_timer sweep_timer_;
  std::list<Connection*> connections_;
  bool shutting_down_ = false;
};

class Server {
 public:
  explicit Server(ServerConfig config);
  ~Server();

  // Builds the engine, loads policies, binds and listens. Errors are printed by the caller.
  absl::Status Start();
  // Runs until SIGTERM/SIGINT; returns the process exit code.
  int Run();
  int port() const { return state_.port; }

 private:
  void Accept();
  void WaitSignal();
  void Reload();
  void Shutdown();

  ServerState state_;
  std::unique_ptr<Snapshotter> snapshotter_;  // after state_: it reads state_ until destroyed
  std::unique_ptr<MetricsHttpServer> metrics_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::unique_ptr<boost::asio::signal_set> signals_;
  size_t next_worker_ = 0;
  std::atomic<bool> stopping_{false};
};

// Current steady-clock milliseconds (idle timeouts, uptime).
int64_t SteadyNowMs();

// Writes one log line to stderr, stamped with UTC wall time to the millisecond:
// "2026-12-01T09:30:00.123Z rl-server: <message>". Under systemd the journal adds its own
// stamp; run by hand or under another supervisor, this one is the only one.
void LogLine(std::string_view message);

}  // namespace rl::server

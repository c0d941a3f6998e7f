// The rl-server process: one acceptor, N I/O threads with an io_context each (connections are
// handed out round-robin and stay on their thread), signal handling (SIGTERM/SIGINT: stop
// accepting, finish replies within a grace period, save, exit 0; a second SIGTERM/SIGINT during
// the grace period closes the remaining clients at once and exits 1 after the save; SIGHUP:
// reload the config file's policies).
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <list>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "server_state.h"

namespace rl::server {

class AcceptBackoff;
class Connection;
class MetricsHttpServer;
class Snapshotter;

// One I/O thread: its io_context, its connections and its counters.
class Worker {
 public:
  // `gate_slot`: this thread's slot of state->gate.
  Worker(ServerState* state, WorkerStats* stats, size_t gate_slot);
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
  // After run() returned on every I/O thread (the grace period is over): closes what is left and
  // runs the aborted handlers, so every connection is freed here, while this worker is whole.
  void Drain();
  // Closes the clients idle for longer than --timeout (none when it is 0, or while shutting
  // down). Runs every second from a timer, and on DEBUG SWEEP; on this worker's thread.
  void Sweep();
  // This thread's slot of the transaction gate, taken before an RL.* command runs and kept until
  // the batch of commands read is done (ReleaseGate), so a batch pays one uncontended lock.
  void HoldGate() {
    if (gate_held_) return;
    state_->gate.LockShared(gate_slot_);
    gate_held_ = true;
  }
  void ReleaseGate() {
    if (!gate_held_) return;
    state_->gate.UnlockShared(gate_slot_);
    gate_held_ = false;
  }

 private:
  void ScheduleSweep();

  ServerState* state_;
  WorkerStats* stats_;
  // Declared before ctx_ so it outlives it: handlers the io_context destroys own connections,
  // whose destructors unregister from this list.
  std::list<Connection*> connections_;
  boost::asio::io_context ctx_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  boost::asio::steady_timer sweep_timer_;
  bool shutting_down_ = false;
  size_t gate_slot_;
  bool gate_held_ = false;
};

class Server {
 public:
  explicit Server(ServerConfig config);
  ~Server();

  // Builds the engine, loads policies, binds and listens. Errors are printed by the caller.
  absl::Status Start();
  // Runs until SIGTERM/SIGINT; returns the process exit code: 0, or 1 when the final snapshot
  // failed or a second SIGTERM/SIGINT cut the grace period short.
  int Run();
  int port() const { return state_.port; }
  // A front end beside RESP, made at Start (when its factory returns one) and stopped at exit.
  void AddFrontEnd(FrontEndFactory factory) { factories_.push_back(std::move(factory)); }

 private:
  // Makes and starts the configured front ends (AddFrontEnd), before the RESP listener.
  absl::Status StartFrontEnds();
  void Accept();
  void WaitSignal();
  void Reload();
  // First SIGTERM/SIGINT: stop accepting, let every connection send what it has, and give them
  // a grace period.
  void Shutdown();
  // Grace period over, or a second signal: stop every I/O thread now.
  void ForceStop();

  ServerState state_;
  std::vector<FrontEndFactory> factories_;
  std::unique_ptr<Snapshotter> snapshotter_;  // after state_: it reads state_ until destroyed
  std::unique_ptr<MetricsHttpServer> metrics_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;  // on workers_[0]'s io_context
  std::unique_ptr<AcceptBackoff> accept_backoff_;             // the same
  // Signals and the grace timer live on a thread of their own: a second signal is heard while
  // the I/O threads drain, and no I/O thread waits on them to finish.
  boost::asio::io_context control_ctx_{1};
  std::unique_ptr<boost::asio::signal_set> signals_;
  std::unique_ptr<boost::asio::steady_timer> grace_timer_;
  size_t next_worker_ = 0;
  std::atomic<bool> stopping_{false};
  bool forced_ = false;  // control thread; read after it is joined
};

// Lowers config->maxclients, with a warning, so clients and the server's own descriptors fit
// RLIMIT_NOFILE (raising the soft limit first if the hard one allows); an error when not even
// one client fits.
absl::Status FitMaxClientsToFileLimit(ServerConfig* config);

// Writes one log line to stderr, stamped with UTC wall time to the millisecond:
// "2026-12-01T09:30:00.123Z rl-server: <message>". Under systemd the journal adds its own
// stamp; run by hand or under another supervisor, this one is the only one.
void LogLine(std::string_view message);

}  // namespace rl::server

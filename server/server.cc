// Acceptor, I/O threads, signals and shutdown; see server.h.
#include "server.h"

#include <fmt/core.h>
#include <sys/resource.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <random>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "accept_backoff.h"
#include "connection.h"
#include "metrics_http.h"
#include "snapshot.h"

namespace rl::server {
namespace asio = boost::asio;
using asio::ip::tcp;

void LogLine(std::string_view message) {
  std::string stamp = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  fmt::print(stderr, "{} rl-server: {}\n", stamp, message);
  std::fflush(stderr);
}

namespace {

void Log(const ServerConfig& config, std::string_view message) {
  if (!config.quiet) LogLine(message);
}

std::string RandomRunId() {
  std::random_device rd;
  std::string id;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 40; ++i) id.push_back(kHex[rd() % 16]);
  return id;
}

}  // namespace

absl::Status FitMaxClientsToFileLimit(ServerConfig* config) {
  // Descriptors besides clients: stdio, the listeners, an epoll + eventfd + timerfd per
  // io_context, the signal pipe, snapshot files (32, as Redis reserves), and the metrics
  // endpoint's sessions when it is on.
  const int64_t reserved =
      32 + 4 * int64_t{config->threads} + (config->metrics_port > 0 ? 4 + kMetricsMaxSessions : 0);
  const int64_t wanted = config->maxclients + reserved;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return absl::OkStatus();
  if (lim.rlim_cur == RLIM_INFINITY || static_cast<int64_t>(lim.rlim_cur) >= wanted) {
    return absl::OkStatus();
  }
  // Raise the soft limit as far as the hard one allows.
  rlim_t target = lim.rlim_max == RLIM_INFINITY || static_cast<int64_t>(lim.rlim_max) >= wanted
                      ? static_cast<rlim_t>(wanted)
                      : lim.rlim_max;
  if (target > lim.rlim_cur) {
    rlimit raised{target, lim.rlim_max};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim.rlim_cur = target;
  }
  if (static_cast<int64_t>(lim.rlim_cur) >= wanted) return absl::OkStatus();
  const int64_t fit = static_cast<int64_t>(lim.rlim_cur) - reserved;
  if (fit < 1) {
    return absl::ResourceExhaustedError(
        fmt::format("the open-file limit (ulimit -n) of {} is too low: rl-server needs at least {} "
                    "descriptors for itself and one client",
                    lim.rlim_cur, reserved + 1));
  }
  Log(*config, fmt::format("warning: maxclients {} needs {} file descriptors but the open-file "
                           "limit (ulimit -n) is {}: maxclients lowered to {} (raise ulimit -n "
                           "for more)",
                           config->maxclients, wanted, lim.rlim_cur, fit));
  config->maxclients = fit;
  return absl::OkStatus();
}

bool PasswordMatches(std::string_view guess, std::string_view secret) {
  // Touch every byte of the guess whatever the secret, so timing reveals no prefix match.
  volatile unsigned char diff = guess.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < guess.size(); ++i) {
    unsigned char s = secret.empty() ? 0 : static_cast<unsigned char>(secret[i % secret.size()]);
    diff = diff | (static_cast<unsigned char>(guess[i]) ^ s);
  }
  return diff == 0 && !secret.empty();
}

// ---- Worker ----

Worker::Worker(ServerState* state, WorkerStats* stats, size_t gate_slot)
    : state_(state),
      stats_(stats),
      guard_(ctx_.get_executor()),
      sweep_timer_(ctx_),
      gate_slot_(gate_slot) {}

void Worker::Adopt(tcp::socket socket) {
  if (shutting_down_) {
    state_->global.connected_clients.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  auto conn = std::make_shared<Connection>(this, std::move(socket));
  conn->Start();
}

void Worker::Register(Connection* conn) {
  connections_.push_back(conn);
  conn->registry_pos = std::prev(connections_.end());
}

void Worker::Unregister(Connection* conn) { connections_.erase(conn->registry_pos); }

void Worker::Run() {
  if (state_->config.timeout_s > 0) ScheduleSweep();
  ctx_.run();
}

void Worker::ScheduleSweep() {
  sweep_timer_.expires_after(std::chrono::seconds(1));
  sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || shutting_down_) return;
    Sweep();
    ScheduleSweep();
  });
}

void Worker::Sweep() {
  if (shutting_down_ || state_->config.timeout_s <= 0) return;
  int64_t limit_ms = state_->config.timeout_s * 1000;
  int64_t now = state_->clock->NowMs();
  // Closing only marks the socket; connections unregister later, from their handlers.
  for (Connection* conn : connections_) {
    if (conn->closed()) continue;  // closed by an earlier sweep; counted then
    if (now - conn->session().last_active_ms.load(std::memory_order_relaxed) > limit_ms) {
      state_->global.idle_disconnects.fetch_add(1, std::memory_order_relaxed);
      conn->CloseNow();
    }
  }
}

void Worker::Drain() {
  shutting_down_ = true;  // an Adopt still queued closes its socket
  sweep_timer_.cancel();
  guard_.reset();
  std::vector<Connection*> conns(connections_.begin(), connections_.end());
  for (Connection* conn : conns) conn->CloseNow();
  // Closing aborted every pending read and write; their handlers hold the last references.
  ctx_.restart();
  ctx_.poll();
}

void Worker::BeginShutdown() {
  shutting_down_ = true;
  sweep_timer_.cancel();
  // Shutdown may not destroy a connection synchronously, but copy anyway: cheap and safe.
  std::vector<Connection*> conns(connections_.begin(), connections_.end());
  for (Connection* conn : conns) conn->Shutdown();
  guard_.reset();
}

// ---- Server ----

// The engine's options from the settings; the clock is chosen in Start.
static rl::LimiterOptions LimiterOptionsFor(const ServerConfig& c) {
  rl::LimiterOptions options;
  options.max_keys = c.max_keys;
  // Shards follow the I/O threads (a check rarely finds its shard held), not a low --max-keys.
  options.shards = rl::ShardsForThreads(static_cast<size_t>(c.threads), c.max_keys);
  options.max_memory_bytes = c.max_memory;
  options.overflow = c.overflow;
  return options;
}

Server::Server(ServerConfig config) { state_.config = std::move(config); }

Server::~Server() = default;

absl::Status Server::Start() {
  state_.configured = state_.config;
  if (absl::Status fds = FitMaxClientsToFileLimit(&state_.config); !fds.ok()) return fds;
  const ServerConfig& c = state_.config;
  rl::LimiterOptions options = LimiterOptionsFor(c);
  InstallDebugClock(&state_);  // first: everything below reads the clock it installs
  options.clock = state_.clock;
  if (state_.clock == rl::SteadyClock::Default()) {
    state_.command_clock = std::make_unique<CommandClock>(state_.clock);
    options.clock = state_.command_clock.get();
  }
  state_.limiter = std::make_unique<rl::Limiter>(options);
  absl::Status st = state_.policies.LoadFromConfig(c.policies);
  if (!st.ok())
    return absl::InvalidArgumentError(fmt::format("{}: {}", c.config_file, ToStd(st.message())));
  state_.start_steady_ms = state_.clock->NowMs();
  state_.run_id = RandomRunId();
  state_.gate.Init(static_cast<size_t>(c.threads));
  for (int i = 0; i < c.threads; ++i) {
    state_.worker_stats.push_back(std::make_unique<WorkerStats>());
    workers_.push_back(std::make_unique<Worker>(&state_, state_.worker_stats.back().get(),
                                                static_cast<size_t>(i)));
  }
  state_.sweep_idle = [this] {
    for (auto& worker : workers_) asio::post(worker->context(), [w = worker.get()] { w->Sweep(); });
  };
  // A deleted policy's counters go with it, on each I/O thread (their only writer).
  state_.policies.set_on_removed([this](const std::string& name) {
    for (auto& worker : workers_) {
      WorkerStats* stats = &worker->stats();
      asio::post(worker->context(), [stats, name] { stats->Forget(name); });
    }
  });
  // Before listening: no check may run on an empty limiter that a snapshot would fill.
  snapshotter_ = std::make_unique<Snapshotter>(&state_);
  state_.snapshotter = snapshotter_.get();
  st = snapshotter_->Load();
  if (st.ok()) st = StartFrontEnds();  // after the load, as the RESP listener
  if (!st.ok()) return st;
  if (c.metrics_port > 0) {
    metrics_ = std::make_unique<MetricsHttpServer>(&state_);
    st = metrics_->Listen(c.bind, c.metrics_port);
    if (!st.ok()) return st;
    state_.metrics_port = metrics_->port();
    if (!IsLoopbackAddress(c.bind)) {
      // /metrics has no password: policy names and counters become readable from the network.
      Log(c, fmt::format("warning: /metrics on {}:{} is readable without a password", c.bind,
                         state_.metrics_port));
    }
  }
  asio::io_context& main_ctx = workers_[0]->context();
  boost::system::error_code ec;
  asio::ip::address address;
  if (c.bind == "localhost") {
    address = asio::ip::address_v4::loopback();
  } else {
    address = asio::ip::make_address(c.bind, ec);
    if (ec) return absl::InvalidArgumentError(fmt::format("invalid --bind '{}'", c.bind));
  }
  tcp::endpoint endpoint(address, static_cast<unsigned short>(c.port));
  acceptor_ = std::make_unique<tcp::acceptor>(main_ctx);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        fmt::format("cannot listen on {}:{}: {}", c.bind, c.port, ec.message()));
  }
  state_.port = acceptor_->local_endpoint().port();
  state_.config.port = state_.port;  // in force: what port 0 chose (CONFIG GET)
  accept_backoff_ = std::make_unique<AcceptBackoff>(main_ctx, "clients", c.quiet,
                                                    &state_.global.accept_resource_errors);
  signals_ = std::make_unique<asio::signal_set>(control_ctx_, SIGTERM, SIGINT, SIGHUP);
  grace_timer_ = std::make_unique<asio::steady_timer>(control_ctx_);
  return absl::OkStatus();
}

absl::Status Server::StartFrontEnds() {
  for (const FrontEndFactory& make : factories_) {
    auto front_end = make(&state_);
    if (!front_end.ok()) return front_end.status();
    if (*front_end == nullptr) continue;  // not configured
    absl::Status st = (*front_end)->Start();
    if (!st.ok()) return st;
    state_.front_ends.push_back(*std::move(front_end));
  }
  return absl::OkStatus();
}

void Server::Accept() {
  Worker& target = *workers_[next_worker_];
  next_worker_ = (next_worker_ + 1) % workers_.size();
  acceptor_->async_accept(target.context(), [this, &target](const boost::system::error_code& ec,
                                                            tcp::socket socket) {
    if (stopping_) return;
    if (!ec) {
      accept_backoff_->OnSuccess();
      auto& global = state_.global;
      if (global.connected_clients.load(std::memory_order_relaxed) >= state_.config.maxclients) {
        // As Redis: tell the client why, then close. A fresh socket accepts this small write.
        global.rejected_connections.fetch_add(1, std::memory_order_relaxed);
        static constexpr std::string_view kFull = "-ERR max number of clients reached\r\n";
        boost::system::error_code wec;
        asio::write(socket, asio::buffer(kFull), wec);
        socket.close(wec);
      } else {
        // Count now so a burst of accepts cannot overshoot maxclients before the worker runs;
        // the connection gives the slot back when it is destroyed.
        global.connected_clients.fetch_add(1, std::memory_order_relaxed);
        asio::post(target.context(),
                   [&target, s = std::move(socket)]() mutable { target.Adopt(std::move(s)); });
      }
    } else if (ec == asio::error::operation_aborted) {
      return;
    } else if (accept_backoff_->OnError(ec, [this] {
                 if (!stopping_) Accept();
               })) {
      return;
    }
    Accept();
  });
}

void Server::WaitSignal() {
  signals_->async_wait([this](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    if (signo == SIGHUP) {
      Reload();
    } else if (!stopping_) {
      Log(state_.config, fmt::format("signal {}: shutting down", signo));
      Shutdown();
    } else {
      Log(state_.config, fmt::format("signal {} again: closing the remaining clients now", signo));
      forced_ = true;
      ForceStop();
      return;
    }
    WaitSignal();
  });
}

void Server::Reload() { ReloadConfig(&state_); }

void Server::Shutdown() {
  stopping_ = true;
  // The acceptor belongs to worker 0's thread; closing it there aborts the pending accept.
  asio::post(workers_[0]->context(), [this] {
    boost::system::error_code ec;
    acceptor_->close(ec);
    accept_backoff_->Cancel();
  });
  for (auto& worker : workers_) {
    Worker* w = worker.get();
    asio::post(w->context(), [w] { w->BeginShutdown(); });
  }
  // A client that never reads its replies must not hold the process forever.
  const int64_t grace_ms = state_.config.shutdown_grace_ms;
  grace_timer_->expires_after(std::chrono::milliseconds(grace_ms));
  grace_timer_->async_wait([this, grace_ms](const boost::system::error_code& ec) {
    if (ec) return;
    Log(state_.config, fmt::format("clients still connected after {} ms: closing them", grace_ms));
    ForceStop();
  });
}

void Server::ForceStop() {
  grace_timer_->cancel();
  for (auto& w : workers_) w->context().stop();
}

int Server::Run() {
  Accept();
  WaitSignal();
  Log(state_.config,
      fmt::format("{} I/O threads, {} policies", workers_.size(), state_.policies.size()));
  // The readiness line tests and scripts wait for (and learn the port from, with --port 0).
  fmt::print("rl-server ready: listening on {}:{}\n", state_.config.bind, state_.port);
  std::fflush(stdout);

  snapshotter_->StartPeriodic();
  if (metrics_) metrics_->Start();
  auto control_guard = asio::make_work_guard(control_ctx_);
  std::thread control([this] { control_ctx_.run(); });
  std::vector<std::thread> threads;
  for (size_t i = 1; i < workers_.size(); ++i) {
    threads.emplace_back([w = workers_[i].get()] { w->Run(); });
  }
  workers_[0]->Run();
  for (auto& t : threads) t.join();
  control_ctx_.stop();
  control.join();
  // Whatever the grace period left behind is freed now, with every worker still whole.
  for (auto& w : workers_) w->Drain();
  if (metrics_) metrics_->Stop();
  for (auto& front_end : state_.front_ends) front_end->Stop();
  // Every worker has stopped, so this snapshot holds every grant made.
  snapshotter_->Stop();
  int exit_code = 0;
  if (!state_.config.snapshot_file.empty()) {
    absl::Status saved = snapshotter_->Save();
    if (saved.ok()) {
      PersistenceStats ps = snapshotter_->Stats();
      Log(state_.config,
          fmt::format("snapshot saved to {}: {} states in {} ms", state_.config.snapshot_file,
                      ps.last_save_keys, ps.last_save_duration_us / 1000));
    } else {
      Log(state_.config, fmt::format("final snapshot failed: {}", ToStd(saved.message())));
      exit_code = 1;  // a supervisor should notice that state was lost
    }
  }
  if (forced_) exit_code = 1;  // some clients did not get their replies
  Log(state_.config, "bye");
  return exit_code;
}

}  // namespace rl::server

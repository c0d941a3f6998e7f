// The Prometheus endpoint (--metrics-port): a tiny HTTP/1.1 server (Boost.Beast) on its own
// thread and io_context, so a slow scraper never delays a rate-limit check. Serves GET/HEAD
// /metrics (RenderMetrics); anything else gets 404 or 405. Bounded: request headers 8 KB, no
// bodies, 10 s per request, 64 connections at once; at 64 a new connection closes the one that
// has waited longest for a request, so idle connections cannot lock scrapers out.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"

namespace rl::server {

struct ServerState;
class AcceptBackoff;

// Scraper connections served at once.
inline constexpr int kMetricsMaxSessions = 64;

class MetricsHttpServer {
 public:
  explicit MetricsHttpServer(ServerState* state);
  ~MetricsHttpServer();  // stops
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // Binds and listens on bind:port (port 0 = any free one). Errors name the address.
  absl::Status Listen(const std::string& bind, int port);
  // Serves on a thread of its own until Stop.
  void Start();
  void Stop();
  int port() const { return port_; }

 private:
  class Session;
  void Accept();
  // Closes the session that has waited longest for a request; false when every one is busy.
  bool EvictIdle();

  ServerState* state_;
  std::list<Session*> sessions_;  // before ctx_: sessions may die with the io_context
  boost::asio::io_context ctx_{1};
  boost::asio::ip::tcp::acceptor acceptor_{ctx_};
  std::unique_ptr<AcceptBackoff> backoff_;  // after ctx_: its timer lives on it
  std::thread thread_;
  int port_ = 0;
};

}  // namespace rl::server

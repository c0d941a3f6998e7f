// rl-http-example: a single-binary HTTP service that rate-limits its routes with rl, in-process
// (--limiter local) or through a shared rl-server (--limiter remote --server host:port) or a
// Redis Cluster whose nodes load rl.so (--limiter remote --cluster host:port[,host:port...]).
//   GET /api/products  5 per minute per client      GET /health  unlimited
//   POST /v1/exports   cost 10 of 30/h, fail-closed  anything else: the global default policy
//   POST /v1/reports   at most 3 at once and 20/h per client, fail-closed: the request holds a
//                      concurrency lease while the report is built (--report-ms)
// A client is its X-Api-Key (hashed), else its IP. Denied: 429 {"error":"rate_limited"} with
// Retry-After; every limited response carries X-RateLimit-* and RateLimit-Policy/RateLimit.
// Limiter unreachable (remote): fail-open routes answer normally without rate-limit headers,
// fail-closed routes 503 {"error":"rate_limiter_unavailable"} with a short Retry-After; the log
// gets one line when the outage starts and one when it ends. With --fallback-instances N the
// outage is decided by a local limiter at each policy's limits / N instead (real rate-limit
// headers, 429 past this instance's share), and the log lines say so.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/signal_set.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/beast/http/field.hpp"
#include "boost/beast/http/status.hpp"
#include "boost/program_options.hpp"
#include "http_server.h"
#include "outage_log.h"
#include "rate_limit_gate.h"
#include "rl/limiter.h"
#include "rl/rate_limiter.h"
#include "rl/remote_limiter.h"

namespace {

namespace http = boost::beast::http;
namespace po = boost::program_options;
using rl_http::Request;
using rl_http::Response;

std::string_view View(boost::beast::string_view s) { return std::string_view(s.data(), s.size()); }

Response Json(http::status status, std::string body) {
  Response response{status, 11};
  response.set(http::field::content_type, "application/json");
  response.set(http::field::cache_control, "no-store");
  response.body() = std::move(body);
  return response;
}

// The application's own work, reached only after the gate allowed the request (a report's is
// started by Handle: it takes time).
Response Route(std::string_view method, std::string_view path) {
  if (path == "/health" && method == "GET") return Json(http::status::ok, R"({"status":"ok"})");
  if (path == "/api/products" && method == "GET") {
    return Json(http::status::ok,
                R"({"products":[{"id":1,"name":"widget"},{"id":2,"name":"gadget"}]})");
  }
  if (path == "/v1/exports" && method == "POST") {
    return Json(http::status::accepted, R"({"export":"queued"})");
  }
  if (path == "/v1/reports" && method == "POST") {
    return Json(http::status::ok, R"({"report":"ready"})");
  }
  return Json(http::status::not_found, R"({"error":"not_found"})");
}

// The response to a request the gate has decided.
Response Build(const rl_http::GateResult& result, std::string_view method, std::string_view path) {
  Response response;
  if (result.unavailable) {
    response = Json(http::status::service_unavailable, R"({"error":"rate_limiter_unavailable"})");
  } else if (!result.allowed) {
    response = Json(http::status::too_many_requests, R"({"error":"rate_limited"})");
  } else {
    response = Route(method, path);
  }
  for (const rl::HeaderField& field : result.headers) response.set(field.name, field.value);
  return response;
}

// One request, without blocking the I/O thread: the gate answers asynchronously (a remote
// limiter's answer, or its timeout, arrives on the limiter's thread), and a report's work is a
// timer of `report_ms` during which the request holds its lease.
void Handle(const rl_http::RateLimitGate& gate, boost::asio::io_context& io, const Request& request,
            const std::string& peer_ip, int report_ms, rl_http::Respond respond) {
  const std::string_view target = View(request.target());
  std::string path(target.substr(0, target.find('?')));
  std::string method(View(request.method_string()));
  // Identify the client first, then limit, then do the work (never the other way round).
  const std::string client = rl_http::ClientKey(View(request["X-Api-Key"]), peer_ip);
  gate.CheckAsync(
      method, path, client,
      [&io, method, path, report_ms, respond = std::move(respond)](rl_http::GateResult result) {
        if (result.allowed && !result.unavailable && method == "POST" && path == "/v1/reports") {
          auto work =
              std::make_shared<boost::asio::steady_timer>(io, std::chrono::milliseconds(report_ms));
          auto held = std::make_shared<rl_http::GateResult>(std::move(result));
          work->async_wait([work, held, method, path, respond](const boost::system::error_code&) {
            respond(Build(*held, method, path));
            // *held's lease, if any, is released when the last of these handlers is gone: the
            // work is done.
          });
          return;
        }
        respond(Build(result, method, path));
      });
}

// A log line on stderr, stamped with the UTC time.
void Log(std::string_view line) {
  const std::string now =
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  std::fprintf(stderr, "%s %.*s\n", now.c_str(), static_cast<int>(line.size()), line.data());
}

bool ParseHostPort(const std::string& text, std::string* host, uint16_t* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  try {
    const int value = std::stoi(text.substr(colon + 1));
    if (value <= 0 || value > 65535) return false;
    *port = static_cast<uint16_t>(value);
  } catch (...) {
    return false;
  }
  *host = text.substr(0, colon);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int port = 8080;
  std::string bind = "127.0.0.1";
  std::string backend = "local";
  std::string server = "127.0.0.1:6380";
  std::string cluster;
  int timeout_ms = 50;
  int fallback_instances = 0;
  int threads = 4;
  int report_ms = 1000;
  po::options_description options("rl-http-example options");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("port", po::value(&port)->default_value(port), "HTTP port (0 = any free port)")
      ("bind", po::value(&bind)->default_value(bind), "address to listen on")
      ("limiter", po::value(&backend)->default_value(backend), "local | remote")
      ("server", po::value(&server)->default_value(server), "rl-server host:port (remote)")
      ("cluster", po::value(&cluster),
       "Redis Cluster seed nodes host:port[,host:port...] with rl.so loaded (remote; instead "
       "of --server)")
      ("timeout-ms", po::value(&timeout_ms)->default_value(timeout_ms),
       "per-check timeout for the remote limiter")
      ("fallback-instances", po::value(&fallback_instances)->default_value(fallback_instances),
       "remote: while the limiter is unreachable, decide locally at each policy's limits / N "
       "(N = instances of this service sharing them); 0 = the failure modes decide")
      ("report-ms", po::value(&report_ms)->default_value(report_ms),
       "how long POST /v1/reports works while holding its lease (0..60000)")
      ("threads", po::value(&threads)->default_value(threads), "I/O threads");
  // clang-format on
  po::variables_map vars;
  try {
    po::store(po::parse_command_line(argc, argv, options), vars);
    po::notify(vars);
  } catch (const po::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  if (vars.count("help")) {
    std::printf("usage: rl-http-example [options]\n");
    std::cout << options;
    return 0;
  }
  if (port < 0 || port > 65535 || threads < 1 || timeout_ms < 1 || fallback_instances < 0 ||
      report_ms < 0 || report_ms > 60000) {
    std::fprintf(stderr,
                 "bad --port, --threads, --timeout-ms, --fallback-instances or --report-ms\n");
    return 2;
  }
  if (backend != "remote") fallback_instances = 0;  // nothing to fall back from

  // A cluster's outages are its nodes': one node down must not read as an outage per check.
  rl_http::OutageLog outage(nullptr, Log, fallback_instances, !cluster.empty());
  std::unique_ptr<rl::Limiter> engine;
  std::unique_ptr<rl::RateLimiter> limiter;
  if (backend == "local") {
    engine = std::make_unique<rl::Limiter>();
    limiter = std::make_unique<rl::LocalRateLimiter>(engine.get());
  } else if (backend == "remote") {
    rl::RemoteLimiterOptions remote;
    if (!cluster.empty()) {
      // Checked by RemoteLimiter::Create, which names a bad one.
      std::vector<std::string> nodes = absl::StrSplit(cluster, ',', absl::SkipWhitespace());
      remote.cluster_nodes = std::move(nodes);
    } else if (!ParseHostPort(server, &remote.host, &remote.port)) {
      std::fprintf(stderr, "bad --server %s (want host:port)\n", server.c_str());
      return 2;
    }
    remote.timeout = std::chrono::milliseconds(timeout_ms);
    remote.fallback.instances = fallback_instances;
    // Per node in cluster mode. Calls are pipelined and nothing waits on a connection, so the
    // default two carry any load here; fewer connections also means fewer left behind in a
    // stalled server's backlog (examples/README.md).
    remote.connections = 2;
    remote.on_failure = [&outage](const rl::Policy& policy, const absl::Status& why) {
      outage.Failure(policy, why);
    };
    absl::StatusOr<std::unique_ptr<rl::RemoteLimiter>> created =
        rl::RemoteLimiter::Create(std::move(remote));
    if (!created.ok()) {
      std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
      return 2;
    }
    limiter = *std::move(created);
  } else {
    std::fprintf(stderr, "--limiter must be local or remote\n");
    return 2;
  }

  // The remote limiter is asked asynchronously (RateLimitGate::CheckAsync): an HTTP I/O thread
  // never waits for it, so a stalled limiter costs each request at most its timeout.
  absl::StatusOr<rl_http::RateLimitGate> gate = rl_http::RateLimitGate::Create(
      rl_http::DefaultRouteConfig(), limiter.get(), &outage,
      backend == "remote" ? static_cast<rl::RemoteLimiter*>(limiter.get()) : nullptr);
  if (!gate.ok()) {
    std::fprintf(stderr, "policy config: %s\n", gate.status().ToString().c_str());
    return 2;
  }

  boost::asio::io_context io(threads);
  rl_http::HttpServer http_server(
      io, [&gate, &io, report_ms](const Request& request, const std::string& peer,
                                  rl_http::Respond respond) {
        Handle(*gate, io, request, peer, report_ms, std::move(respond));
      });
  absl::StatusOr<uint16_t> bound = http_server.Listen(bind, static_cast<uint16_t>(port));
  if (!bound.ok()) {
    std::fprintf(stderr, "%s\n", bound.status().ToString().c_str());
    return 1;
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&io](const boost::system::error_code&, int) { io.stop(); });
  // Tests read this line to learn the port.
  const std::string fallback =
      fallback_instances > 0 ? " fallback=1/" + std::to_string(fallback_instances) : "";
  std::printf("rl-http-example listening on %s:%u limiter=%s%s%s\n", bind.c_str(), *bound,
              backend.c_str(), backend == "remote" && !cluster.empty() ? " (cluster)" : "",
              fallback.c_str());
  std::fflush(stdout);

  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&io] { io.run(); });
  io.run();
  for (std::thread& thread : pool) thread.join();
  // Calls still in flight complete in the limiter's destructor, and their callbacks use the gate
  // and post to `io` (which no longer runs them): both must still exist then.
  limiter.reset();
  return 0;
}

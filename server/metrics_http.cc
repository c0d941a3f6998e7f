// Boost.Beast HTTP server for /metrics; see metrics_http.h.
#include "metrics_http.h"

#include <fmt/core.h>

#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>

#include "accept_backoff.h"
#include "metrics.h"
#include "server_state.h"

namespace rl::server {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {
constexpr auto kRequestTimeout = std::chrono::seconds(10);
constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";
}  // namespace

// One scraper connection: read a request, answer, repeat while keep-alive.
class MetricsHttpServer::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(MetricsHttpServer* owner, tcp::socket socket)
      : owner_(owner), stream_(std::move(socket)) {
    owner_->sessions_.push_front(this);
    pos_ = owner_->sessions_.begin();
  }
  ~Session() { owner_->sessions_.erase(pos_); }

  // Whether the session waits for a request (idle keep-alive, or a client that has not sent a
  // whole one yet): such a session may be closed to make room for a new scraper.
  bool waiting() const { return waiting_; }
  std::chrono::steady_clock::time_point waiting_since() const { return waiting_since_; }

  void Read() {
    waiting_ = true;
    waiting_since_ = std::chrono::steady_clock::now();
    parser_.emplace();
    parser_->header_limit(8 * 1024);
    parser_->body_limit(0);
    stream_.expires_after(kRequestTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

 private:
  void OnRead(beast::error_code ec) {
    waiting_ = false;
    if (ec) return Close();  // EOF, timeout, oversized or malformed request
    const auto& req = parser_->get();
    response_ = {};
    response_.version(req.version());
    response_.keep_alive(req.keep_alive());
    response_.set(http::field::server, "rl-server");
    std::string_view target(req.target().data(), req.target().size());
    std::string_view path = target.substr(0, target.find('?'));
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      response_.result(http::status::method_not_allowed);
      response_.set(http::field::allow, "GET, HEAD");
      response_.body() = "only GET /metrics\n";
    } else if (path == "/metrics") {
      response_.result(http::status::ok);
      response_.set(http::field::content_type, kContentType);
      response_.body() = RenderMetrics(*owner_->state_);
    } else {
      response_.result(http::status::not_found);
      response_.body() = "rl-server: metrics are at /metrics\n";
    }
    if (response_.result() != http::status::ok) {
      response_.set(http::field::content_type, "text/plain; charset=utf-8");
    }
    response_.prepare_payload();
    if (req.method() == http::verb::head) response_.body().clear();  // length stays
    stream_.expires_after(kRequestTimeout);
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        if (ec || !self->response_.keep_alive()) return self->Close();
                        self->Read();
                      });
  }

  friend class MetricsHttpServer;
  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  MetricsHttpServer* owner_;
  std::list<Session*>::iterator pos_;
  bool waiting_ = false;
  std::chrono::steady_clock::time_point waiting_since_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_{8 * 1024};
  std::optional<http::request_parser<http::empty_body>> parser_;
  http::response<http::string_body> response_;
};

MetricsHttpServer::MetricsHttpServer(ServerState* state)
    : state_(state),
      backoff_(std::make_unique<AcceptBackoff>(ctx_, "metrics scrapers", state->config.quiet,
                                               &state->global.accept_resource_errors)) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

absl::Status MetricsHttpServer::Listen(const std::string& bind, int port) {
  boost::system::error_code ec;
  asio::ip::address address = bind == "localhost"
                                  ? asio::ip::address(asio::ip::address_v4::loopback())
                                  : asio::ip::make_address(bind, ec);
  if (ec) return absl::InvalidArgumentError(fmt::format("invalid --bind '{}'", bind));
  tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        fmt::format("cannot listen for metrics on {}:{}: {}", bind, port, ec.message()));
  }
  port_ = acceptor_.local_endpoint().port();
  return absl::OkStatus();
}

void MetricsHttpServer::Accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec && backoff_->OnError(ec, [this] { Accept(); })) return;
    if (!ec) {
      backoff_->OnSuccess();
      if (sessions_.size() >= static_cast<size_t>(kMetricsMaxSessions) && !EvictIdle()) {
        socket.close(ec);  // a scraper storm must not exhaust file descriptors
      } else {
        std::make_shared<Session>(this, std::move(socket))->Read();
      }
    }
    Accept();
  });
}

bool MetricsHttpServer::EvictIdle() {
  // Idle connections must never lock a scraper out: the one that has waited longest for a
  // request makes room (its read is cancelled and it goes away with its handler).
  Session* victim = nullptr;
  for (Session* s : sessions_) {
    if (s->waiting() && (victim == nullptr || s->waiting_since() < victim->waiting_since())) {
      victim = s;
    }
  }
  if (victim == nullptr) return false;
  victim->waiting_ = false;  // not picked twice before its handler runs
  victim->Close();
  return true;
}

void MetricsHttpServer::Start() {
  if (!acceptor_.is_open() || thread_.joinable()) return;
  Accept();
  thread_ = std::thread([this] { ctx_.run(); });
}

void MetricsHttpServer::Stop() {
  if (!thread_.joinable()) return;
  ctx_.stop();
  thread_.join();
  boost::system::error_code ec;
  acceptor_.close(ec);
}

}  // namespace rl::server

// Beast session and listener for HttpServer (see http_server.h).
#include "http_server.h"

#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "boost/asio/post.hpp"
#include "boost/asio/strand.hpp"
#include "boost/beast/core/bind_handler.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/tcp_stream.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/http/write.hpp"

namespace rl_http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

constexpr std::chrono::seconds kIdleTimeout{30};
constexpr uint64_t kMaxBodyBytes = 64 * 1024;
constexpr uint32_t kMaxHeaderBytes = 16 * 1024;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Handler& handler)
      : stream_(std::move(socket)), handler_(handler) {
    boost::system::error_code ec;
    tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    if (!ec) peer_ip_ = peer.address().to_string();
  }

  void Start() {
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&Session::Read, shared_from_this()));
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->body_limit(kMaxBodyBytes);
    parser_->header_limit(kMaxHeaderBytes);
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, size_t) {
    if (ec) {  // end_of_stream, timeout, oversized or malformed request: close this one only
      Close();
      return;
    }
    // No read is started until this response is written, so the request stays put meanwhile.
    stream_.expires_never();
    handler_(parser_->get(), peer_ip_, [self = shared_from_this()](Response response) {
      asio::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        self->Write(std::move(response));
      });
    });
  }

  // On the session's strand.
  void Write(Response response) {
    const Request& request = parser_->get();
    response_ = std::move(response);
    response_.version(request.version());
    response_.keep_alive(request.keep_alive());
    response_.prepare_payload();
    stream_.expires_after(kIdleTimeout);
    http::async_write(stream_, response_,
                      beast::bind_front_handler(&Session::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, size_t) {
    if (ec || !response_.keep_alive()) {
      Close();
      return;
    }
    Read();
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Response response_;
  const Handler& handler_;
  std::string peer_ip_;
};

}  // namespace

HttpServer::HttpServer(asio::io_context& io, Handler handler)
    : io_(io),
      acceptor_(asio::make_strand(io)),
      accept_retry_(acceptor_.get_executor()),
      handler_(std::move(handler)) {}

absl::StatusOr<uint16_t> HttpServer::Listen(const std::string& address, uint16_t port) {
  beast::error_code ec;
  asio::ip::address ip = asio::ip::make_address(address, ec);
  if (ec) return absl::InvalidArgumentError("bad bind address " + address);
  const tcp::endpoint endpoint(ip, port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return absl::UnavailableError("listen on " + address + ": " + ec.message());
  const uint16_t bound = acceptor_.local_endpoint(ec).port();
  Accept();
  return bound;
}

void HttpServer::Accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (!acceptor_.is_open() || ec == asio::error::operation_aborted) return;
    if (!ec) {
      std::make_shared<Session>(std::move(socket), handler_)->Start();
      Accept();
      return;
    }
    // Out of file descriptors and the like: pause instead of spinning on the error.
    accept_retry_.expires_after(std::chrono::milliseconds(50));
    accept_retry_.async_wait([this](beast::error_code) { Accept(); });
  });
}

}  // namespace rl_http

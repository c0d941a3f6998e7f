// A small asynchronous HTTP/1.1 server on Boost.Beast: accepts connections, reads requests with
// bounded sizes and idle time, and hands each one to a handler that returns the response.
// Keep-alive is honoured; errors on a connection close that connection only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/beast/http/message.hpp"
#include "boost/beast/http/string_body.hpp"

namespace rl_http {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;
// Hands a request's response back to its connection; callable from any thread, once.
using Respond = std::function<void(Response response)>;
// Called on an I/O thread with the request and the peer's address; must not block: it calls
// `respond` when the response is ready (later, from any thread, or before it returns). The
// request stays valid until then.
using Handler =
    std::function<void(const Request& request, const std::string& peer_ip, Respond respond)>;

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, Handler handler);

  // Binds and starts accepting; returns the bound port (useful with port 0).
  absl::StatusOr<uint16_t> Listen(const std::string& address, uint16_t port);

 private:
  void Accept();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_retry_;
  Handler handler_;
};

}  // namespace rl_http

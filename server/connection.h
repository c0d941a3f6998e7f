// One client connection. Reads into a buffer that keeps unparsed bytes (pipelining), executes
// every complete command of a read, and sends all their replies in one write. Bounded: input by
// the parser's limits and the query-buffer cap, output by the client output limit (a client that
// does not read is dropped, nobody else notices). Lives on one I/O thread; never locked.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "command_table.h"
#include "handler_memory.h"
#include "resp/parser.h"
#include "resp/writer.h"

namespace rl::server {

class Worker;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Worker* worker, boost::asio::ip::tcp::socket socket);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts reading. Call once, on the worker's thread.
  void Start();
  // Graceful close for shutdown: replies already computed are sent, then the socket closes.
  void Shutdown();
  // Immediate close; pending output is dropped.
  void CloseNow();

  const ClientSession& session() const { return session_; }
  std::list<Connection*>::iterator registry_pos;  // owned by Worker

 private:
  void DoRead();
  void OnRead(const boost::system::error_code& ec, size_t n);
  // Parses and executes every complete command in the buffer. False when the connection closed.
  bool ProcessInput();
  void Execute(absl::Span<const std::string_view> args);
  void UpdateParserLimits();
  void MaybeWrite();
  void OnWrite(const boost::system::error_code& ec, size_t n);
  size_t PendingOutput() const { return out_.size() + writing_.size(); }

  Worker* worker_;
  boost::asio::ip::tcp::socket socket_;
  resp::Parser parser_;
  std::vector<std::string_view> args_;  // reused for every command
  std::vector<char> in_;                // [in_start_, in_end_) are unparsed bytes
  size_t in_start_ = 0;
  size_t in_end_ = 0;
  std::string out_;      // replies not yet handed to the socket
  std::string writing_;  // the buffer of the write in flight
  resp::Writer writer_;  // appends into out_
  ClientSession session_;
  HandlerMemory read_memory_;
  HandlerMemory write_memory_;
  bool write_in_flight_ = false;
  bool read_closed_ = false;  // EOF, error, QUIT or protocol error: no more commands
  bool closed_ = false;
};

}  // namespace rl::server

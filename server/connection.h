// One client connection. Reads into a buffer that keeps unparsed bytes (pipelining), executes
// every complete command of a read, and sends all their replies in one write. Bounded: input by
// the parser's limits (proto-max-bulk-len) and the query-buffer caps (one client's, and all
// clients' together), output by the client output limit (a client that does not read is dropped,
// nobody else notices). Lives on one I/O thread; never locked.
#pragma once

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <cstdlib>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "command_table.h"
#include "handler_memory.h"
#include "policies.h"
#include "resp/parser.h"
#include "resp/writer.h"
#include "transaction.h"

namespace rl::server {

class Worker;

// A connection's input buffer. malloc'd rather than a std::vector so that growing it is one
// realloc (for large buffers an mremap: no copy and no second buffer alive meanwhile) and new
// bytes are not zero-filled (pages cost memory only once data arrives in them), so the bytes
// the query-buffer limits count are close to what the process really holds.
class InputBuffer {
 public:
  InputBuffer() = default;
  InputBuffer(const InputBuffer&) = delete;
  InputBuffer& operator=(const InputBuffer&) = delete;
  ~InputBuffer() { std::free(data_); }

  char* data() { return data_; }
  size_t size() const { return size_; }
  // Keeps the first min(size(), n) bytes. False (nothing changed) when memory is short.
  bool Resize(size_t n) {
    void* p = std::realloc(data_, n);
    if (p == nullptr) return false;
    data_ = static_cast<char*>(p);
    size_ = n;
    return true;
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

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
  bool closed() const { return closed_; }
  std::list<Connection*>::iterator registry_pos;  // owned by Worker

 private:
  void DoRead();
  // Doubles the input buffer within the per-client and server-wide limits; false (and the
  // connection closed) when either would be exceeded.
  bool GrowInput();
  void OnRead(const boost::system::error_code& ec, size_t n);
  // Runs what the buffer holds, writes the replies and reads on, unless a command asked for a
  // pause (ClientSession::pause_ms): then replies and reading wait for Pause's timer.
  void OnInput();
  void Pause();
  // Parses and executes every complete command in the buffer. False when the connection closed.
  bool ProcessInput();
  // Parses the command after the one about to run, when `rest` (the bytes after it) starts with
  // one, and runs its row's prefetch hint: a pipeline of checks then overlaps their cache misses.
  // The parse is kept for that command's turn (have_next_); an incomplete one resumes then, and a
  // protocol error stays in the parser and is reported then, after the commands before it ran.
  void LookAhead(std::string_view rest);
  // Runs one command; `found` is FindCommand(args[0]) (looked up by LookAhead for its command).
  void Execute(absl::Span<const std::string_view> args, const CommandSpec* found);
  // The command table row of `name` (null when unknown), remembered for the next command: a client
  // mostly repeats one command, and comparing its name's bytes is cheaper than folding case and
  // hashing.
  const CommandSpec* FindCommand(std::string_view name);
  void UpdateParserLimits();
  void MaybeWrite();
  void OnWrite(const boost::system::error_code& ec, size_t n);
  size_t PendingOutput() const { return out_.size() + writing_.size(); }

  Worker* worker_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer pause_timer_;
  resp::Parser parser_;
  std::vector<std::string_view> args_;  // reused for every command
  // The next command, parsed by LookAhead before the current one ran (have_next_: not run yet).
  std::vector<std::string_view> next_args_;
  size_t next_consumed_ = 0;
  const CommandSpec* next_found_ = nullptr;  // FindCommand(next_args_[0])
  bool have_next_ = false;
  InputBuffer in_;  // [in_start_, in_end_) are unparsed bytes
  size_t in_start_ = 0;
  size_t in_end_ = 0;
  std::string out_;      // replies not yet handed to the socket
  std::string writing_;  // the buffer of the write in flight
  resp::Writer writer_;  // appends into out_
  ClientSession session_;
  rl::command::LimitCache limit_cache_;  // this client's last RL.* limit list, parsed
  Transaction txn_;                      // MULTI queue and WATCHed keys
  PolicyCache policy_cache_;             // the policies this client's RL.* commands named
  // FindCommand's memo: the last known command's name as sent (up to 16 bytes) and its row.
  const CommandSpec* last_command_ = nullptr;
  std::array<char, 16> last_command_name_{};
  size_t last_command_len_ = 0;
  HandlerMemory read_memory_;
  HandlerMemory write_memory_;
  bool write_in_flight_ = false;
  bool read_closed_ = false;  // EOF, error, QUIT or protocol error: no more commands
  bool closed_ = false;
};

}  // namespace rl::server

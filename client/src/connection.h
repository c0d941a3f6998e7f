// One pipelined RESP connection of rl::RemoteLimiter's pool. Callers on any thread submit
// encoded commands; everything else runs on the pool's single I/O thread, so the connection's
// state needs no lock. Replies come back in request order (RESP), so the first pending call
// takes the first reply. A call that is not answered in time poisons the order for every call
// behind it, so a timeout closes the connection: the remaining calls fail fast and the next call
// after the back-off reconnects. Every new connection starts with HELLO 3 (and AUTH), and the
// calls queued behind it are written only once its reply has come: a server that accepts
// connections but does not run (stopped, hung) gets handshakes, never checks it would run later,
// long after their callers were answered by the timeout.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "resp/reply_parser.h"
#include "rl/clock.h"
#include "steady_time.h"

namespace rl::client_internal {

// The meeting point of a waiting caller and the I/O thread: collects `expected` replies, or
// one error for all of them. Completes once; later completions are ignored.
class Call {
 public:
  explicit Call(size_t expected) : expected_(expected) {}
  // An asynchronous call: `on_done` runs once, on the I/O thread, when the call completes
  // (then Take() gives the result). Nobody waits for it.
  Call(size_t expected, std::function<void()> on_done)
      : expected_(expected), on_done_(std::move(on_done)) {}

  // I/O thread. Returns true when this reply was the last one expected.
  bool AddReply(resp::Value value);
  void Fail(const absl::Status& status);
  bool done() const;

  // Caller. False when `deadline` passed first (the call may still complete later, unobserved).
  // Real time, not the injected Clock: this bounds a wait for bytes from the network, which a
  // manual clock cannot make arrive sooner or later; the steady clock (steady_time.h).
  bool WaitUntil(Deadline deadline);
  // Caller, after WaitFor returned true.
  absl::StatusOr<std::vector<resp::Value>> Take();

 private:
  // Runs on_done_ (outside the lock) once done_ was set by this thread.
  void Completed();

  const size_t expected_;
  std::function<void()> on_done_;
  mutable SteadyMutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<resp::Value> replies_ ABSL_GUARDED_BY(mu_);
};

// Counters the connections share with their pool (relaxed atomics, read by Stats()).
struct ConnectionCounters {
  std::atomic<uint64_t> connects{0};
  std::atomic<uint64_t> connection_failures{0};
};

// Where and how to connect: the addresses of one server (one endpoint; tried in order).
struct ConnectionOptions {
  std::vector<boost::asio::ip::tcp::endpoint> endpoints;
  // The host the endpoints were resolved from: a cluster redirection that names no host
  // means this one.
  std::string host;
  // Names the server in error messages: "rl-server", or "cluster node 10.0.0.7:7001".
  std::string name = "rl-server";
  int64_t reconnect_backoff_ms = 100;
  std::string password;
  // Reads the back-off's time; not owned. The call timeout is not measured here (see Call).
  const Clock* clock = nullptr;
};

// Bounds for what a server sends back: our replies are a few hundred bytes, anything much
// larger is a broken or hostile peer. The largest is CLUSTER SLOTS: one element per slot range,
// and a cluster resharded slot by slot can have up to 16384 ranges.
inline constexpr resp::ReplyLimits kReplyLimits{.max_line = 64 * 1024,
                                                .max_bulk = 1 << 20,
                                                .max_elements = 16384,
                                                .max_depth = 8,
                                                .max_reply = 16 << 20};

class Connection {
 public:
  Connection(boost::asio::io_context& io, const ConnectionOptions& options,
             ConnectionCounters* counters);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Any thread: queues `command` (RESP-encoded, producing call->expected replies) and connects
  // first when needed. Within the back-off after a failure the call fails at once (Unavailable).
  void Submit(std::shared_ptr<Call> call, std::string command);
  // Submit, on the I/O thread (no hop through the queue).
  void SubmitHere(std::shared_ptr<Call> call, std::string_view command);
  // Any thread: the caller gave up on `call`. If it is still unanswered the server is too slow
  // for this connection to stay usable, so it is closed.
  void Abandon(std::shared_ptr<Call> call, absl::Duration waited);
  // Abandon, on the I/O thread: `call` is complete (DeadlineExceeded) when this returns.
  void AbandonHere(const std::shared_ptr<Call>& call, absl::Duration waited);
  // I/O thread: closes the socket and fails every pending call with `status`.
  void Close(const absl::Status& status);
  // Any thread: whether calls submitted now would fail at once because of the back-off. Lets
  // the pool route around one broken connection while the others are healthy.
  bool InBackoff() const {
    return options_.clock->NowMs() < backoff_until_ms_.load(std::memory_order_relaxed);
  }

 private:
  enum class State { kDisconnected, kConnecting, kConnected };
  struct Pending {
    std::shared_ptr<Call> call;  // null for the HELLO sent on connect
  };

  void DoSubmit(std::shared_ptr<Call> call, std::string_view command);
  void StartConnect();
  void OnConnected();
  void StartWrite();
  // Writes `bytes` (the handshake or a batch; kept alive by the connection until done), then
  // writes what was queued meanwhile.
  void Write(const std::string& bytes);
  void StartRead();
  void OnData(size_t bytes);
  // Closes the connection after an error and starts the back-off.
  void Fail(const absl::Status& status);

  boost::asio::io_context& io_;
  const ConnectionOptions& options_;
  ConnectionCounters* counters_;
  boost::asio::ip::tcp::socket socket_;
  State state_ = State::kDisconnected;
  // Bumped on every close so completions of a previous socket's operations are ignored.
  uint64_t generation_ = 0;
  // Clock::NowMs before which calls fail at once (written on the I/O thread, read by callers).
  std::atomic<int64_t> backoff_until_ms_{INT64_MIN};
  std::deque<Pending> pending_;  // sent or queued calls, in order of their replies
  std::string out_;              // encoded commands not yet handed to a write
  std::string writing_;          // the buffer of the write in flight
  bool write_in_flight_ = false;
  // Connected, HELLO sent, its reply not read yet: calls wait in out_ (see the file comment).
  bool handshaking_ = false;
  std::string hello_;  // the buffer of the handshake's write
  std::string in_;     // received bytes not yet forming a whole reply
  std::vector<char> read_chunk_;
  resp::ReplyParser parser_{kReplyLimits};
};

}  // namespace rl::client_internal

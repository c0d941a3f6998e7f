// The connections of rl::RemoteLimiter to one endpoint (one rl-server; for a cluster, one node
// each): a fixed set of pipelined connections, calls spread round-robin over those not in their
// reconnect back-off, and the per-call timeout; plus up to as many blocking connections lent to
// synchronous callers one at a time (direct.h), their fast path. Knows nothing of rate limits: it
// sends encoded commands and hands back replies.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "boost/asio/io_context.hpp"
#include "connection.h"
#include "direct.h"
#include "resp/reply_parser.h"
#include "steady_time.h"

namespace rl::client_internal {

class EndpointPool {
 public:
  // `connections` > 0. Connects lazily (the first call on each connection).
  EndpointPool(boost::asio::io_context& io, ConnectionOptions options, size_t connections);
  EndpointPool(const EndpointPool&) = delete;
  EndpointPool& operator=(const EndpointPool&) = delete;

  // A call sent and not yet waited for.
  struct Ticket {
    Connection* connection = nullptr;
    std::shared_ptr<Call> call;
  };
  // Any thread: sends `commands` (encoded, producing `expected` replies) on one connection,
  // pipelined behind whatever that connection already carries. A ticket that is not waited for
  // (fire and forget) has its replies read and dropped; nothing then bounds how long it waits.
  Ticket Submit(std::string commands, size_t expected);
  // I/O thread: Submit for an asynchronous call, whose `on_done` runs on the I/O thread once its
  // replies (or its error) are in (see Call); nothing waits. The caller bounds it with
  // AbandonHere.
  Ticket SubmitHere(std::string_view commands, size_t expected, std::function<void()> on_done);
  // I/O thread: the deadline of `ticket` passed: it completes now with DeadlineExceeded (if it
  // had not completed), and its connection is closed, as Wait does.
  void AbandonHere(const Ticket& ticket, absl::Duration waited);
  // Any thread: the replies of `ticket`, all of them by `deadline` (real time). DeadlineExceeded
  // when they do not come in time (that connection is then closed), Unavailable /
  // PermissionDenied / Internal when the connection fails. Several tickets on several pools can
  // be in flight at once and waited for one after the other against one deadline.
  absl::StatusOr<std::vector<resp::Value>> Wait(const Ticket& ticket, Deadline deadline);
  // Synchronous fast path: the call on an idle blocking connection, on the calling thread, by
  // `deadline`; nullopt when none is free (then Submit and Wait). While the blocking connections
  // are in their reconnect back-off (one failed: timeout, refused, closed), calls fail at once.
  std::optional<absl::StatusOr<std::vector<resp::Value>>> ExecuteDirect(std::string_view commands,
                                                                        size_t expected,
                                                                        Deadline deadline);
  // Submit and Wait, within `timeout`.
  absl::StatusOr<std::vector<resp::Value>> Execute(std::string commands, size_t expected,
                                                   absl::Duration timeout);
  // Any thread: every connection is in its reconnect back-off, so a call would fail at once.
  bool Unusable() const;
  // I/O thread: closes every connection, failing their pending calls with `status`.
  void CloseAll(const absl::Status& status);

  const ConnectionOptions& options() const { return options_; }
  uint64_t timeouts() const { return timeouts_.load(std::memory_order_relaxed); }
  const ConnectionCounters& counters() const { return counters_; }

 private:
  // Round-robin, skipping connections in their back-off while another one is usable: one
  // connection closed by a single slow reply should not fail a share of the calls.
  Connection& Pick();

  const ConnectionOptions options_;  // the connections keep a reference
  ConnectionCounters counters_;
  std::atomic<uint64_t> timeouts_{0};
  std::vector<std::unique_ptr<Connection>> connections_;
  std::atomic<size_t> next_{0};
  // The blocking connections: not lent out now, and how many exist (at most connections_).
  absl::Mutex direct_mu_;
  std::vector<std::unique_ptr<DirectConnection>> idle_ ABSL_GUARDED_BY(direct_mu_);
  size_t direct_count_ ABSL_GUARDED_BY(direct_mu_) = 0;
  std::atomic<int64_t> direct_backoff_until_ms_{INT64_MIN};  // Clock::NowMs
};

}  // namespace rl::client_internal

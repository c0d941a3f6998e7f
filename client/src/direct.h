// A blocking connection of rl::RemoteLimiter's pool for synchronous calls: the calling thread
// writes the command and reads the reply itself, as redis-benchmark does, so a call costs the
// wire's round trip and no hand-over to the I/O thread and back (two thread wake-ups, about as
// much again as the round trip on loopback). One caller at a time (the pool lends it out).
// Same rules as a pipelined Connection: HELLO 3 (and AUTH) answered before any call is written,
// and any failure, a timeout included, closes it (the next call reconnects).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "connection.h"
#include "resp/reply_parser.h"
#include "steady_time.h"

namespace rl::client_internal {

class DirectConnection {
 public:
  DirectConnection(const ConnectionOptions& options, ConnectionCounters* counters)
      : options_(options), counters_(counters) {}
  ~DirectConnection() { Close(); }
  DirectConnection(const DirectConnection&) = delete;
  DirectConnection& operator=(const DirectConnection&) = delete;

  // Sends `commands` (producing `expected` replies) and reads the replies by `deadline` (real
  // time), connecting first when needed. DeadlineExceeded when they do not come in time,
  // Unavailable / PermissionDenied / Internal when the connection fails; either way it is closed.
  absl::StatusOr<std::vector<resp::Value>> Execute(std::string_view commands, size_t expected,
                                                   Deadline deadline);

 private:
  absl::Status Connect(Deadline deadline);
  absl::Status Send(std::string_view data, Deadline deadline);
  // Reads replies into *out until it holds `expected` (pushes skipped).
  absl::Status Receive(size_t expected, Deadline deadline, std::vector<resp::Value>* out);
  // Waits until the socket is ready for `events` (POLLIN / POLLOUT) or the deadline passes.
  absl::Status Await(short events, Deadline deadline, const char* doing);
  void Close();

  const ConnectionOptions& options_;
  ConnectionCounters* counters_;
  int fd_ = -1;
  std::string in_;  // received bytes not yet parsed
  resp::ReplyParser parser_{kReplyLimits};
};

}  // namespace rl::client_internal

// DirectConnection: see direct.h.
#include "direct.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "protocol.h"

namespace rl::client_internal {

absl::StatusOr<std::vector<resp::Value>> DirectConnection::Execute(std::string_view commands,
                                                                   size_t expected,
                                                                   Deadline deadline) {
  // A connection the server closed while it was idle (a restart, an idle timeout) is replaced
  // before use rather than failing this call.
  if (fd_ >= 0) {
    char byte;
    const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) Close();
  }
  absl::Status status = fd_ < 0 ? Connect(deadline) : absl::OkStatus();
  std::vector<resp::Value> replies;
  replies.reserve(expected);
  if (status.ok()) status = Send(commands, deadline);
  if (status.ok()) status = Receive(expected, deadline, &replies);
  if (!status.ok()) {
    Close();
    counters_->connection_failures.fetch_add(1, std::memory_order_relaxed);
    return status;
  }
  return replies;
}

absl::Status DirectConnection::Connect(Deadline deadline) {
  absl::Status last = absl::UnavailableError(absl::StrCat("connect to ", options_.name));
  for (const boost::asio::ip::tcp::endpoint& endpoint : options_.endpoints) {
    fd_ = ::socket(endpoint.protocol().family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) break;
    int rc = ::connect(fd_, endpoint.data(), static_cast<socklen_t>(endpoint.size()));
    if (rc != 0 && errno == EINPROGRESS) {
      last = Await(POLLOUT, deadline, "connect to");
      if (!last.ok()) {
        Close();
        if (absl::IsDeadlineExceeded(last)) return last;
        continue;
      }
      int error = 0;
      socklen_t len = sizeof(error);
      ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &len);
      rc = error == 0 ? 0 : -1;
      errno = error;
    }
    if (rc != 0) {
      last = absl::UnavailableError(
          absl::StrCat("connect to ", options_.name, ": ", std::strerror(errno)));
      Close();
      continue;
    }
    // Commands are tiny and latency is the point: do not let Nagle hold them back.
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    counters_->connects.fetch_add(1, std::memory_order_relaxed);
    // The handshake alone first: only a server that answers it is sent calls.
    std::string hello;
    AppendHello(options_.password, &hello);
    std::vector<resp::Value> reply;
    absl::Status status = Send(hello, deadline);
    if (status.ok()) status = Receive(1, deadline, &reply);
    if (status.ok()) status = CheckHelloReply(reply.front());
    return status;
  }
  return last;
}

absl::Status DirectConnection::Send(std::string_view data, Deadline deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (absl::Status s = Await(POLLOUT, deadline, "write to"); !s.ok()) return s;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return absl::UnavailableError(
        absl::StrCat("write to ", options_.name, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status DirectConnection::Receive(size_t expected, Deadline deadline,
                                       std::vector<resp::Value>* out) {
  size_t offset = 0;
  while (out->size() < expected) {
    while (offset < in_.size() && out->size() < expected) {
      resp::Value value;
      size_t consumed = 0;
      const resp::ReplyStatus status =
          parser_.Parse(std::string_view(in_).substr(offset), &consumed, &value);
      if (status == resp::ReplyStatus::kIncomplete) break;
      if (status == resp::ReplyStatus::kError) {
        return absl::InternalError(
            absl::StrCat("bad reply from ", options_.name, ": ", parser_.error()));
      }
      offset += consumed;
      // Out-of-band RESP3 data (e.g. from a Redis with client tracking) answers no call.
      if (value.type != resp::Value::Type::kPush) out->push_back(std::move(value));
    }
    if (out->size() == expected) break;
    char chunk[16 * 1024];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      in_.erase(0, offset);
      offset = 0;
      in_.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (absl::Status s = Await(POLLIN, deadline, "read from"); !s.ok()) return s;
      continue;
    }
    return absl::UnavailableError(absl::StrCat(
        "read from ", options_.name, ": ", n == 0 ? "connection closed" : std::strerror(errno)));
  }
  in_.erase(0, offset);
  // A reply nobody asked for would answer the next call: the connection is out of step.
  if (!in_.empty()) {
    return absl::InternalError(absl::StrCat(options_.name, " sent a reply nobody asked for"));
  }
  return absl::OkStatus();
}

absl::Status DirectConnection::Await(short events, Deadline deadline, const char* doing) {
  for (;;) {
    const absl::Duration left = Left(deadline);
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(options_.name, " did not answer in time"));
    }
    pollfd pfd{fd_, events, 0};
    const timespec timeout = absl::ToTimespec(left);
    const int rc = ::ppoll(&pfd, 1, &timeout, nullptr);
    if (rc > 0) return absl::OkStatus();  // ready, or an error the next call reports
    if (rc < 0 && errno != EINTR) {
      return absl::UnavailableError(
          absl::StrCat(doing, " ", options_.name, ": ", std::strerror(errno)));
    }
  }
}

void DirectConnection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  in_.clear();
  parser_.Reset();
}

}  // namespace rl::client_internal

// Pipelined RESP connection: see connection.h for the threading and failure rules.
#include "connection.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/write.hpp"
#include "protocol.h"

namespace rl::client_internal {

namespace asio = boost::asio;
using asio::ip::tcp;

bool Call::AddReply(resp::Value value) {
  {
    SteadyLock lock(&mu_);
    if (done_) return true;
    replies_.push_back(std::move(value));
    if (replies_.size() < expected_) return false;
    done_ = true;
  }
  Completed();
  return true;
}

void Call::Fail(const absl::Status& status) {
  {
    SteadyLock lock(&mu_);
    if (done_) return;
    status_ = status;
    done_ = true;
  }
  Completed();
}

void Call::Completed() {
  if (on_done_) std::exchange(on_done_, nullptr)();
}

bool Call::done() const {
  SteadyLock lock(&mu_);
  return done_;
}

bool Call::WaitUntil(Deadline deadline) {
  SteadyLock lock(&mu_);
  return mu_.AwaitUntil([this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return done_; }, deadline);
}

absl::StatusOr<std::vector<resp::Value>> Call::Take() {
  SteadyLock lock(&mu_);
  if (!status_.ok()) return status_;
  return std::move(replies_);
}

Connection::Connection(asio::io_context& io, const ConnectionOptions& options,
                       ConnectionCounters* counters)
    : io_(io), options_(options), counters_(counters), socket_(io), read_chunk_(16 * 1024) {}

void Connection::Submit(std::shared_ptr<Call> call, std::string command) {
  asio::post(io_, [this, call = std::move(call), command = std::move(command)]() mutable {
    DoSubmit(std::move(call), std::move(command));
  });
}

void Connection::SubmitHere(std::shared_ptr<Call> call, std::string_view command) {
  DoSubmit(std::move(call), command);
}

void Connection::Abandon(std::shared_ptr<Call> call, absl::Duration waited) {
  asio::post(io_, [this, call = std::move(call), waited] { AbandonHere(call, waited); });
}

void Connection::AbandonHere(const std::shared_ptr<Call>& call, absl::Duration waited) {
  if (call->done()) return;
  const absl::Status status = absl::DeadlineExceededError(
      absl::StrCat(options_.name, " did not answer within ", absl::FormatDuration(waited)));
  Fail(status);
  call->Fail(status);  // in case it was not this connection's any more
}

void Connection::DoSubmit(std::shared_ptr<Call> call, std::string_view command) {
  if (state_ == State::kDisconnected) {
    if (InBackoff()) {
      call->Fail(
          absl::UnavailableError(absl::StrCat(options_.name, " unreachable (reconnect back-off)")));
      return;
    }
    StartConnect();
  }
  pending_.push_back(Pending{std::move(call)});
  out_ += command;
  StartWrite();
}

void Connection::StartConnect() {
  state_ = State::kConnecting;
  const uint64_t generation = generation_;
  asio::async_connect(
      socket_, options_.endpoints,
      [this, generation](const boost::system::error_code& ec, const tcp::endpoint&) {
        if (generation != generation_) return;
        if (ec) {
          Fail(absl::UnavailableError(
              absl::StrCat("connect to ", options_.name, ": ", ec.message())));
          return;
        }
        OnConnected();
      });
}

void Connection::OnConnected() {
  state_ = State::kConnected;
  counters_->connects.fetch_add(1, std::memory_order_relaxed);
  boost::system::error_code ignored;
  // Commands are tiny and latency is the point: do not let Nagle hold them back.
  socket_.set_option(tcp::no_delay(true), ignored);
  // The handshake goes first, alone; the calls queued while connecting follow once it is
  // answered (OnData), so only a server that runs ever receives them.
  hello_.clear();
  AppendHello(options_.password, &hello_);
  pending_.push_front(Pending{nullptr});
  handshaking_ = true;
  write_in_flight_ = true;
  StartRead();
  Write(hello_);
}

void Connection::StartWrite() {
  if (state_ != State::kConnected || handshaking_ || write_in_flight_ || out_.empty()) return;
  // Everything queued while the previous write was in flight leaves in this one: concurrent
  // callers share a round trip.
  writing_.swap(out_);
  out_.clear();
  write_in_flight_ = true;
  Write(writing_);
}

void Connection::Write(const std::string& bytes) {
  const uint64_t generation = generation_;
  asio::async_write(socket_, asio::buffer(bytes),
                    [this, generation](const boost::system::error_code& ec, size_t) {
                      if (generation != generation_) return;
                      write_in_flight_ = false;
                      if (ec) {
                        Fail(absl::UnavailableError(
                            absl::StrCat("write to ", options_.name, ": ", ec.message())));
                        return;
                      }
                      StartWrite();  // what was queued meanwhile
                    });
}

void Connection::StartRead() {
  const uint64_t generation = generation_;
  socket_.async_read_some(asio::buffer(read_chunk_),
                          [this, generation](const boost::system::error_code& ec, size_t n) {
                            if (generation != generation_) return;
                            if (ec) {
                              Fail(absl::UnavailableError(
                                  absl::StrCat("read from ", options_.name, ": ", ec.message())));
                              return;
                            }
                            OnData(n);
                          });
}

void Connection::OnData(size_t bytes) {
  in_.append(read_chunk_.data(), bytes);
  size_t offset = 0;
  while (offset < in_.size()) {
    resp::Value value;
    size_t consumed = 0;
    const resp::ReplyStatus status =
        parser_.Parse(std::string_view(in_).substr(offset), &consumed, &value);
    if (status == resp::ReplyStatus::kIncomplete) break;
    if (status == resp::ReplyStatus::kError) {
      Fail(absl::InternalError(
          absl::StrCat("bad reply from ", options_.name, ": ", parser_.error())));
      return;
    }
    offset += consumed;
    // Out-of-band RESP3 data (e.g. from a Redis with client tracking) answers no call.
    if (value.type == resp::Value::Type::kPush) continue;
    if (pending_.empty()) {
      Fail(absl::InternalError(absl::StrCat(options_.name, " sent a reply nobody asked for")));
      return;
    }
    Pending& front = pending_.front();
    if (front.call == nullptr) {  // our HELLO
      pending_.pop_front();
      if (absl::Status status = CheckHelloReply(value); !status.ok()) {
        Fail(status);
        return;
      }
      handshaking_ = false;
      StartWrite();
      continue;
    }
    if (front.call->AddReply(std::move(value))) pending_.pop_front();
  }
  // The parser keeps its place in a pending reply; moving the unconsumed bytes is allowed.
  in_.erase(0, offset);
  StartRead();
}

void Connection::Fail(const absl::Status& status) {
  counters_->connection_failures.fetch_add(1, std::memory_order_relaxed);
  backoff_until_ms_.store(options_.clock->NowMs() + options_.reconnect_backoff_ms,
                          std::memory_order_relaxed);
  Close(status);
}

void Connection::Close(const absl::Status& status) {
  ++generation_;
  boost::system::error_code ignored;
  socket_.close(ignored);
  state_ = State::kDisconnected;
  write_in_flight_ = false;
  handshaking_ = false;
  out_.clear();
  in_.clear();
  parser_.Reset();
  for (Pending& pending : pending_) {
    if (pending.call != nullptr) pending.call->Fail(status);
  }
  pending_.clear();
}

}  // namespace rl::client_internal

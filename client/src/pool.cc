// EndpointPool: see pool.h.
#include "pool.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rl::client_internal {

EndpointPool::EndpointPool(boost::asio::io_context& io, ConnectionOptions options,
                           size_t connections)
    : options_(std::move(options)) {
  connections_.reserve(connections);
  for (size_t i = 0; i < connections; ++i) {
    connections_.push_back(std::make_unique<Connection>(io, options_, &counters_));
  }
}

EndpointPool::Ticket EndpointPool::Submit(std::string commands, size_t expected) {
  Ticket ticket{&Pick(), std::make_shared<Call>(expected)};
  ticket.connection->Submit(ticket.call, std::move(commands));
  return ticket;
}

EndpointPool::Ticket EndpointPool::SubmitHere(std::string_view commands, size_t expected,
                                              std::function<void()> on_done) {
  Ticket ticket{&Pick(), std::make_shared<Call>(expected, std::move(on_done))};
  ticket.connection->SubmitHere(ticket.call, commands);
  return ticket;
}

void EndpointPool::AbandonHere(const Ticket& ticket, absl::Duration waited) {
  if (ticket.call->done()) return;
  timeouts_.fetch_add(1, std::memory_order_relaxed);
  ticket.connection->AbandonHere(ticket.call, waited);
}

absl::StatusOr<std::vector<resp::Value>> EndpointPool::Wait(const Ticket& ticket,
                                                            Deadline deadline) {
  const absl::Duration left = Left(deadline);
  if (!ticket.call->WaitUntil(deadline)) {
    ticket.connection->Abandon(ticket.call, left);
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    return absl::DeadlineExceededError(absl::StrCat(options_.name, " did not answer in time"));
  }
  return ticket.call->Take();
}

std::optional<absl::StatusOr<std::vector<resp::Value>>> EndpointPool::ExecuteDirect(
    std::string_view commands, size_t expected, Deadline deadline) {
  if (options_.clock->NowMs() < direct_backoff_until_ms_.load(std::memory_order_relaxed)) {
    return absl::StatusOr<std::vector<resp::Value>>(
        absl::UnavailableError(absl::StrCat(options_.name, " unreachable (reconnect back-off)")));
  }
  std::unique_ptr<DirectConnection> connection;
  {
    absl::MutexLock lock(&direct_mu_);
    if (!idle_.empty()) {
      connection = std::move(idle_.back());
      idle_.pop_back();
    } else if (direct_count_ < connections_.size()) {
      ++direct_count_;
    } else {
      return std::nullopt;
    }
  }
  if (connection == nullptr) connection = std::make_unique<DirectConnection>(options_, &counters_);
  absl::StatusOr<std::vector<resp::Value>> replies =
      connection->Execute(commands, expected, deadline);
  if (!replies.ok()) {
    if (absl::IsDeadlineExceeded(replies.status())) {
      timeouts_.fetch_add(1, std::memory_order_relaxed);
    }
    direct_backoff_until_ms_.store(options_.clock->NowMs() + options_.reconnect_backoff_ms,
                                   std::memory_order_relaxed);
  }
  absl::MutexLock lock(&direct_mu_);
  idle_.push_back(std::move(connection));
  return replies;
}

absl::StatusOr<std::vector<resp::Value>> EndpointPool::Execute(std::string commands,
                                                               size_t expected,
                                                               absl::Duration timeout) {
  const Deadline deadline = DeadlineAfter(timeout);
  return Wait(Submit(std::move(commands), expected), deadline);
}

bool EndpointPool::Unusable() const {
  for (const auto& connection : connections_) {
    if (!connection->InBackoff()) return false;
  }
  return true;
}

void EndpointPool::CloseAll(const absl::Status& status) {
  for (auto& connection : connections_) connection->Close(status);
}

Connection& EndpointPool::Pick() {
  const size_t start = next_.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < connections_.size(); ++i) {
    Connection& connection = *connections_[(start + i) % connections_.size()];
    if (!connection.InBackoff()) return connection;
  }
  return *connections_[start % connections_.size()];
}

}  // namespace rl::client_internal

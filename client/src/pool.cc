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

absl::StatusOr<std::vector<resp::Value>> EndpointPool::Wait(const Ticket& ticket,
                                                            absl::Time deadline) {
  const absl::Duration left = std::max(deadline - absl::Now(), absl::ZeroDuration());
  if (!ticket.call->WaitFor(left)) {
    ticket.connection->Abandon(ticket.call, left);
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    return absl::DeadlineExceededError(absl::StrCat(options_.name, " did not answer in time"));
  }
  return ticket.call->Take();
}

absl::StatusOr<std::vector<resp::Value>> EndpointPool::Execute(std::string commands,
                                                               size_t expected,
                                                               absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
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

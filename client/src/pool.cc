// EndpointPool: see pool.h.
#include "pool.h"

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

absl::StatusOr<std::vector<resp::Value>> EndpointPool::Execute(std::string commands,
                                                               size_t expected,
                                                               absl::Duration timeout) {
  Connection& connection = Pick();
  auto call = std::make_shared<Call>(expected);
  connection.Submit(call, std::move(commands));
  if (!call->WaitFor(timeout)) {
    connection.Abandon(call, timeout);
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    return absl::DeadlineExceededError(
        absl::StrCat("rl-server did not answer within ", absl::FormatDuration(timeout)));
  }
  return call->Take();
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

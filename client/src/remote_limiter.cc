// rl::RemoteLimiter: encodes checks (protocol.h), runs them on the pool of one endpoint
// (pool.h, connection.h) from a single I/O thread, and turns replies, timeouts and outages into
// decisions.
#include "rl/remote_limiter.h"

#include <atomic>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "pool.h"
#include "protocol.h"
#include "resp/writer.h"

namespace rl {

namespace asio = boost::asio;
using client_internal::AppendPolicyCommand;
using client_internal::ConnectionOptions;
using client_internal::EndpointPool;
using client_internal::PolicyMode;

class RemoteLimiter::Impl {
 public:
  explicit Impl(RemoteLimiterOptions options)
      : options_(std::move(options)),
        clock_(options_.clock != nullptr ? options_.clock : SteadyClock::Default()) {}

  ~Impl() {
    if (thread_.joinable()) {
      asio::post(io_, [this] { pool_->CloseAll(absl::CancelledError("RemoteLimiter destroyed")); });
      work_.reset();
      thread_.join();
    }
    pool_.reset();
  }

  absl::Status Start() {
    if (options_.connections == 0) return absl::InvalidArgumentError("connections must be > 0");
    if (options_.timeout.count() <= 0) return absl::InvalidArgumentError("timeout must be > 0");
    boost::system::error_code ec;
    asio::ip::tcp::resolver resolver(io_);
    auto results = resolver.resolve(options_.host, std::to_string(options_.port), ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot resolve ", options_.host, ": ", ec.message()));
    }
    ConnectionOptions connection;
    for (const auto& entry : results) connection.endpoints.push_back(entry.endpoint());
    connection.reconnect_backoff_ms = options_.reconnect_backoff.count();
    connection.password = options_.password;
    connection.clock = clock_;
    pool_ = std::make_unique<EndpointPool>(io_, std::move(connection), options_.connections);
    thread_ = std::thread([this] { io_.run(); });
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<resp::Value>> Execute(std::string commands, size_t expected) {
    return pool_->Execute(std::move(commands), expected, absl::FromChrono(options_.timeout));
  }

  absl::Status Encode(std::string_view verb, const Policy& policy, std::string_view key,
                      const int64_t* cost, std::string* out) const {
    return AppendPolicyCommand(verb, options_.policy_mode, policy, key, cost, out);
  }

  // A reply -> the caller's Decision. In inline mode the server checked bare limits, so the
  // caller's shadow flag is applied here; in server-policy mode the server already did.
  absl::StatusOr<Decision> ToDecision(const resp::Value& reply, const Policy& policy) {
    absl::StatusOr<Decision> decision = client_internal::ToDecision(reply, policy);
    if (decision.ok()) {
      answered_.fetch_add(1, std::memory_order_relaxed);
      if (options_.policy_mode == PolicyMode::kInline && policy.shadow) ApplyShadow(*decision);
    } else if (reply.type == resp::Value::Type::kError) {
      server_errors_.fetch_add(1, std::memory_order_relaxed);
    }
    return decision;
  }

  absl::Status ServerError(const resp::Value& reply) {
    server_errors_.fetch_add(1, std::memory_order_relaxed);
    return client_internal::ErrorStatus(reply);
  }

  // The policy's FailureMode decides, and the failure is counted and reported.
  Decision Degrade(const Policy& policy, const absl::Status& why) {
    Decision decision = FailureDecision(policy);
    (decision.decided_by == DecidedBy::kFailOpen ? failed_open_ : failed_closed_)
        .fetch_add(1, std::memory_order_relaxed);
    if (options_.on_failure) options_.on_failure(policy, why);
    return decision;
  }

  Decision FailureDecision(const Policy& policy) const {
    Decision decision;
    const bool open = policy.failure_mode == FailureMode::kFailOpen;
    decision.decided_by = open ? DecidedBy::kFailOpen : DecidedBy::kFailClosed;
    decision.allowed = open;
    decision.retry_after_ms = open ? 0 : options_.fail_closed_retry_after_ms;
    // Nothing about the limits or their state is known: count 0, the numbers stay 0.
    if (policy.shadow) ApplyShadow(decision);
    return decision;
  }

  // Transport-level failures (down, slow, garbled, refusing our credentials) are decided by the
  // failure mode; a request the server rejects as invalid stays an error.
  static bool IsUnavailability(const absl::Status& status) {
    return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
           absl::IsInternal(status) || absl::IsCancelled(status) ||
           absl::IsPermissionDenied(status);
  }

  int64_t WallNowMs() const { return clock_->WallMs(); }

  RemoteLimiterStats Stats() const {
    RemoteLimiterStats stats;
    stats.checks = checks_.load(std::memory_order_relaxed);
    stats.answered = answered_.load(std::memory_order_relaxed);
    stats.failed_open = failed_open_.load(std::memory_order_relaxed);
    stats.failed_closed = failed_closed_.load(std::memory_order_relaxed);
    stats.timeouts = pool_->timeouts();
    stats.server_errors = server_errors_.load(std::memory_order_relaxed);
    stats.connects = pool_->counters().connects.load(std::memory_order_relaxed);
    stats.connection_failures =
        pool_->counters().connection_failures.load(std::memory_order_relaxed);
    return stats;
  }

  std::atomic<uint64_t> checks_{0};

 private:
  const RemoteLimiterOptions options_;
  const Clock* const clock_;
  std::atomic<uint64_t> answered_{0};
  std::atomic<uint64_t> failed_open_{0};
  std::atomic<uint64_t> failed_closed_{0};
  std::atomic<uint64_t> server_errors_{0};
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  // One endpoint today; a cluster client would hold one pool per node and route by key slot.
  std::unique_ptr<EndpointPool> pool_;
  std::thread thread_;
};

absl::StatusOr<std::unique_ptr<RemoteLimiter>> RemoteLimiter::Create(RemoteLimiterOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  if (absl::Status status = impl->Start(); !status.ok()) return status;
  return std::unique_ptr<RemoteLimiter>(new RemoteLimiter(std::move(impl)));
}

RemoteLimiter::RemoteLimiter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RemoteLimiter::~RemoteLimiter() = default;

absl::StatusOr<Decision> RemoteLimiter::Check(const Policy& policy, std::string_view key,
                                              int64_t cost) {
  const Request request{&policy, key, cost};
  std::vector<absl::StatusOr<Decision>> results = CheckMany(absl::MakeConstSpan(&request, 1));
  return std::move(results.front());
}

std::vector<absl::StatusOr<Decision>> RemoteLimiter::CheckMany(absl::Span<const Request> requests) {
  std::vector<absl::StatusOr<Decision>> results(requests.size(), absl::UnknownError("unset"));
  impl_->checks_.fetch_add(requests.size(), std::memory_order_relaxed);
  std::string commands;
  std::vector<size_t> sent;  // indexes of the requests that were encoded
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& request = requests[i];
    absl::Status status =
        impl_->Encode("RL.CHECK", *request.policy, request.key, &request.cost, &commands);
    if (status.ok()) {
      sent.push_back(i);
    } else {
      results[i] = status;
    }
  }
  if (sent.empty()) return results;
  absl::StatusOr<std::vector<resp::Value>> replies =
      impl_->Execute(std::move(commands), sent.size());
  for (size_t j = 0; j < sent.size(); ++j) {
    const Policy& policy = *requests[sent[j]].policy;
    absl::StatusOr<Decision>& result = results[sent[j]];
    if (!replies.ok()) {
      result = Impl::IsUnavailability(replies.status())
                   ? absl::StatusOr<Decision>(impl_->Degrade(policy, replies.status()))
                   : absl::StatusOr<Decision>(replies.status());
      continue;
    }
    result = impl_->ToDecision((*replies)[j], policy);
    // A server that refuses us (NOAUTH, WRONGPASS) is as unusable as one that is down.
    if (absl::IsPermissionDenied(result.status())) {
      result = impl_->Degrade(policy, result.status());
    }
  }
  return results;
}

absl::StatusOr<Decision> RemoteLimiter::Peek(const Policy& policy, std::string_view key,
                                             int64_t cost) {
  impl_->checks_.fetch_add(1, std::memory_order_relaxed);
  std::string command;
  if (absl::Status s = impl_->Encode("RL.PEEK", policy, key, &cost, &command); !s.ok()) return s;
  absl::StatusOr<std::vector<resp::Value>> replies = impl_->Execute(std::move(command), 1);
  if (!replies.ok()) return replies.status();
  return impl_->ToDecision(replies->front(), policy);
}

absl::StatusOr<int64_t> RemoteLimiter::Reset(const Policy& policy, std::string_view key) {
  std::string command;
  if (absl::Status s = impl_->Encode("RL.RESET", policy, key, nullptr, &command); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<resp::Value>> replies = impl_->Execute(std::move(command), 1);
  if (!replies.ok()) return replies.status();
  const resp::Value& reply = replies->front();
  if (reply.type == resp::Value::Type::kError) return impl_->ServerError(reply);
  if (reply.type != resp::Value::Type::kInteger) {
    return absl::InternalError("unexpected RL.RESET reply");
  }
  return reply.integer;
}

absl::Status RemoteLimiter::Ping() {
  std::string command;
  resp::Writer(&command).Command({"PING"});
  absl::StatusOr<std::vector<resp::Value>> replies = impl_->Execute(std::move(command), 1);
  if (!replies.ok()) return replies.status();
  if (replies->front().type == resp::Value::Type::kError) {
    return impl_->ServerError(replies->front());
  }
  return absl::OkStatus();
}

int64_t RemoteLimiter::WallNowMs() const { return impl_->WallNowMs(); }

RemoteLimiterStats RemoteLimiter::Stats() const { return impl_->Stats(); }

Decision RemoteLimiter::FailureDecision(const Policy& policy) const {
  return impl_->FailureDecision(policy);
}

}  // namespace rl

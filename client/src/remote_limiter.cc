// rl::RemoteLimiter: encodes checks as RL.CHECK / RL.PEEK / RL.RESET, runs them on a pool of
// pipelined connections (connection.h) and turns replies, timeouts and outages into decisions.
#include "rl/remote_limiter.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "connection.h"
#include "reply_reader.h"

namespace rl {

namespace asio = boost::asio;
using client_internal::AppendCommand;
using client_internal::Call;
using client_internal::Connection;
using client_internal::ConnectionCounters;
using client_internal::ConnectionOptions;
using client_internal::RespValue;

namespace {

// The limit a failure decision reports: the tightest one, as the engine would bind on.
const Limit* TightestLimit(const Policy& policy) {
  const Limit* tightest = nullptr;
  for (const Limit& limit : policy.limits) {
    if (tightest == nullptr || limit.capacity() < tightest->capacity()) tightest = &limit;
  }
  return tightest;
}

}  // namespace

class RemoteLimiter::Impl {
 public:
  explicit Impl(RemoteLimiterOptions options) : options_(std::move(options)) {}

  ~Impl() {
    if (thread_.joinable()) {
      asio::post(io_, [this] {
        for (auto& connection : connections_) {
          connection->Close(absl::CancelledError("RemoteLimiter destroyed"));
        }
      });
      work_.reset();
      thread_.join();
    }
    connections_.clear();
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
    for (const auto& entry : results) connection_options_.endpoints.push_back(entry.endpoint());
    connection_options_.reconnect_backoff = options_.reconnect_backoff;
    connection_options_.password = options_.password;
    for (size_t i = 0; i < options_.connections; ++i) {
      connections_.push_back(std::make_unique<Connection>(io_, connection_options_, &counters_));
    }
    thread_ = std::thread([this] { io_.run(); });
    return absl::OkStatus();
  }

  // Sends `commands` (producing `expected` replies) on one connection and waits for all replies
  // within the call timeout.
  absl::StatusOr<std::vector<RespValue>> Execute(std::string commands, size_t expected) {
    const absl::Duration timeout = absl::FromChrono(options_.timeout);
    Connection& connection = PickConnection();
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

  // Round-robin, skipping connections in their back-off while another one is usable: one
  // connection closed by a single slow reply should not fail a share of the calls.
  Connection& PickConnection() {
    const size_t start = next_.fetch_add(1, std::memory_order_relaxed);
    for (size_t i = 0; i < connections_.size(); ++i) {
      Connection& connection = *connections_[(start + i) % connections_.size()];
      if (!connection.InBackoff()) return connection;
    }
    return *connections_[start % connections_.size()];
  }

  // Appends the RL.CHECK / RL.PEEK / RL.RESET command for (policy, key).
  absl::Status AppendPolicyCommand(std::string_view verb, const Policy& policy,
                                   std::string_view key, const int64_t* cost, std::string* out) {
    if (cost != nullptr && *cost < 0) return absl::InvalidArgumentError("cost must be >= 0");
    std::vector<std::string> args{std::string(verb)};
    if (options_.policy_mode == RemoteLimiterOptions::PolicyMode::kServerPolicy) {
      args.push_back(std::string(key));
      args.push_back("POLICY");
      args.push_back(policy.name);
    } else {
      if (policy.limits.empty()) return absl::InvalidArgumentError("policy has no limits");
      // The policy name scopes the state like the in-process limiter's scope does.
      std::string scoped_key = policy.name;
      scoped_key += ':';
      scoped_key += key;
      args.push_back(std::move(scoped_key));
      for (const Limit& limit : policy.limits) {
        std::vector<std::string> tokens =
            absl::StrSplit(FormatLimit(limit), ' ', absl::SkipEmpty());
        for (std::string& token : tokens) args.push_back(std::move(token));
      }
    }
    if (cost != nullptr) {
      args.push_back("COST");
      args.push_back(std::to_string(*cost));
    }
    AppendCommand(out, args);
    return absl::OkStatus();
  }

  // An error reply -> an absl error; otherwise the 5-integer RL.CHECK reply -> a Decision.
  absl::StatusOr<Decision> ToDecision(const RespValue& reply, const Policy& policy) {
    if (reply.type == RespValue::Type::kError) return ServerError(reply);
    if (reply.type != RespValue::Type::kArray || reply.elements.size() < 5) {
      return absl::InternalError("unexpected RL.CHECK reply shape");
    }
    int64_t v[5];
    for (int i = 0; i < 5; ++i) {
      if (reply.elements[i].type != RespValue::Type::kInteger) {
        return absl::InternalError("unexpected RL.CHECK reply element");
      }
      v[i] = reply.elements[i].integer;
    }
    answered_.fetch_add(1, std::memory_order_relaxed);
    Decision decision;
    decision.allowed = v[0] != 0;
    decision.limit = v[1];
    decision.remaining = v[2];
    decision.retry_after_ms = v[3];
    decision.reset_after_ms = v[4];
    // The reply names only the binding limit; find its window in the policy for header values.
    LimitResult& binding = decision.limits[0];
    binding = LimitResult{decision.allowed, v[1], 0, v[2], v[3], v[4]};
    for (const Limit& limit : policy.limits) {
      if (limit.limit == v[1] || limit.capacity() == v[1]) {
        binding.window_ms = limit.window_ms;
        break;
      }
    }
    if (binding.window_ms == 0 && !policy.limits.empty()) {
      binding.window_ms = policy.limits.front().window_ms;
    }
    decision.count = 1;
    decision.binding = 0;
    return decision;
  }

  absl::Status ServerError(const RespValue& reply) {
    server_errors_.fetch_add(1, std::memory_order_relaxed);
    if (reply.text.starts_with("NOAUTH") || reply.text.starts_with("WRONGPASS")) {
      return absl::PermissionDeniedError(reply.text);
    }
    return absl::InvalidArgumentError(reply.text);
  }

  // The policy's FailureMode decides, and the failure is counted and reported.
  Decision Degrade(const Policy& policy, int64_t cost, const absl::Status& why) {
    Decision decision = FailureDecision(policy, cost);
    (decision.allowed ? failed_open_ : failed_closed_).fetch_add(1, std::memory_order_relaxed);
    if (options_.on_failure) options_.on_failure(policy, why);
    return decision;
  }

  Decision FailureDecision(const Policy& policy, int64_t cost) const {
    Decision decision;
    const Limit* limit = TightestLimit(policy);
    const bool open = policy.failure_mode == FailureMode::kFailOpen;
    decision.allowed = open;
    decision.limit = limit != nullptr ? limit->capacity() : 0;
    decision.remaining = open ? std::max<int64_t>(0, decision.limit - cost) : 0;
    decision.retry_after_ms = open ? 0 : options_.fail_closed_retry_after_ms;
    decision.reset_after_ms = open ? 0 : options_.fail_closed_retry_after_ms;
    decision.limits[0] = LimitResult{
        decision.allowed,   decision.limit,          limit != nullptr ? limit->window_ms : 0,
        decision.remaining, decision.retry_after_ms, decision.reset_after_ms};
    decision.count = 1;
    return decision;
  }

  // Transport-level failures (down, slow, garbled, refusing our credentials) are decided by the
  // failure mode; a request the server rejects as invalid stays an error.
  static bool IsUnavailability(const absl::Status& status) {
    return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
           absl::IsInternal(status) || absl::IsCancelled(status) ||
           absl::IsPermissionDenied(status);
  }

  const RemoteLimiterOptions options_;
  std::atomic<uint64_t> checks_{0};
  std::atomic<uint64_t> answered_{0};
  std::atomic<uint64_t> failed_open_{0};
  std::atomic<uint64_t> failed_closed_{0};
  std::atomic<uint64_t> timeouts_{0};
  std::atomic<uint64_t> server_errors_{0};
  ConnectionCounters counters_;

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  ConnectionOptions connection_options_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::atomic<size_t> next_{0};
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
    absl::Status status = impl_->AppendPolicyCommand("RL.CHECK", *requests[i].policy,
                                                     requests[i].key, &requests[i].cost, &commands);
    if (status.ok()) {
      sent.push_back(i);
    } else {
      results[i] = status;
    }
  }
  if (sent.empty()) return results;
  absl::StatusOr<std::vector<RespValue>> replies = impl_->Execute(std::move(commands), sent.size());
  for (size_t j = 0; j < sent.size(); ++j) {
    const Request& request = requests[sent[j]];
    if (!replies.ok()) {
      results[sent[j]] = Impl::IsUnavailability(replies.status())
                             ? absl::StatusOr<Decision>(
                                   impl_->Degrade(*request.policy, request.cost, replies.status()))
                             : absl::StatusOr<Decision>(replies.status());
    } else {
      results[sent[j]] = impl_->ToDecision((*replies)[j], *request.policy);
      // A server that refuses us (NOAUTH, WRONGPASS) is as unusable as one that is down.
      if (absl::IsPermissionDenied(results[sent[j]].status())) {
        results[sent[j]] = impl_->Degrade(*request.policy, request.cost, results[sent[j]].status());
      }
    }
  }
  return results;
}

absl::StatusOr<Decision> RemoteLimiter::Peek(const Policy& policy, std::string_view key,
                                             int64_t cost) {
  impl_->checks_.fetch_add(1, std::memory_order_relaxed);
  std::string command;
  if (absl::Status s = impl_->AppendPolicyCommand("RL.PEEK", policy, key, &cost, &command);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<RespValue>> replies = impl_->Execute(std::move(command), 1);
  if (!replies.ok()) return replies.status();
  return impl_->ToDecision(replies->front(), policy);
}

absl::StatusOr<int64_t> RemoteLimiter::Reset(const Policy& policy, std::string_view key) {
  std::string command;
  if (absl::Status s = impl_->AppendPolicyCommand("RL.RESET", policy, key, nullptr, &command);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<RespValue>> replies = impl_->Execute(std::move(command), 1);
  if (!replies.ok()) return replies.status();
  const RespValue& reply = replies->front();
  if (reply.type == RespValue::Type::kError) return impl_->ServerError(reply);
  if (reply.type != RespValue::Type::kInteger) {
    return absl::InternalError("unexpected RL.RESET reply");
  }
  return reply.integer;
}

absl::Status RemoteLimiter::Ping() {
  std::string command;
  AppendCommand(&command, {"PING"});
  absl::StatusOr<std::vector<RespValue>> replies = impl_->Execute(std::move(command), 1);
  if (!replies.ok()) return replies.status();
  if (replies->front().type == RespValue::Type::kError) {
    return impl_->ServerError(replies->front());
  }
  return absl::OkStatus();
}

int64_t RemoteLimiter::WallNowMs() const { return absl::ToUnixMillis(absl::Now()); }

RemoteLimiterStats RemoteLimiter::Stats() const {
  RemoteLimiterStats stats;
  stats.checks = impl_->checks_.load(std::memory_order_relaxed);
  stats.answered = impl_->answered_.load(std::memory_order_relaxed);
  stats.failed_open = impl_->failed_open_.load(std::memory_order_relaxed);
  stats.failed_closed = impl_->failed_closed_.load(std::memory_order_relaxed);
  stats.timeouts = impl_->timeouts_.load(std::memory_order_relaxed);
  stats.server_errors = impl_->server_errors_.load(std::memory_order_relaxed);
  stats.connects = impl_->counters_.connects.load(std::memory_order_relaxed);
  stats.connection_failures = impl_->counters_.connection_failures.load(std::memory_order_relaxed);
  return stats;
}

Decision RemoteLimiter::FailureDecision(const Policy& policy, int64_t cost) const {
  return impl_->FailureDecision(policy, cost);
}

}  // namespace rl

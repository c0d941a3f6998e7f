// RemoteLimiter::Impl: start (one endpoint's pool or a cluster's topology, the I/O thread),
// encoding, and turning replies, outages and refusals into decisions and leases (see
// remote_limiter_impl.h).
#include "remote_limiter_impl.h"

namespace rl {

RemoteLimiter::Impl::~Impl() {
  if (topology_ != nullptr) topology_->Stop();
  if (thread_.joinable()) {
    asio::post(io_, [this] {
      stopping_ = true;  // asynchronous calls still in flight end now, not in a next round
      const absl::Status status = absl::CancelledError("RemoteLimiter destroyed");
      if (pool_ != nullptr) pool_->CloseAll(status);
      if (topology_ != nullptr) topology_->CloseAll(status);
    });
    work_.reset();
    thread_.join();
  }
  pool_.reset();
  topology_.reset();
}

absl::Status RemoteLimiter::Impl::Start() {
  if (options_.connections == 0) return absl::InvalidArgumentError("connections must be > 0");
  if (options_.timeout.count() <= 0) return absl::InvalidArgumentError("timeout must be > 0");
  if (options_.wait_for_replicas < 0) {
    return absl::InvalidArgumentError("wait_for_replicas must be >= 0");
  }
  if (options_.fallback.instances < 0) {
    return absl::InvalidArgumentError("fallback.instances must be >= 0");
  }
  if (options_.fallback.instances > 0) {
    if (options_.fallback.max_keys == 0) {
      return absl::InvalidArgumentError("fallback.max_keys must be > 0");
    }
    fallback_ = std::make_unique<client_internal::LocalFallback>(options_.fallback, clock_);
  }
  ConnectionOptions connection;
  connection.reconnect_backoff_ms = options_.reconnect_backoff.count();
  connection.password = options_.password;
  connection.clock = clock_;
  if (!options_.cluster_nodes.empty()) {
    if (options_.cluster_refresh_interval.count() <= 0) {
      return absl::InvalidArgumentError("cluster_refresh_interval must be > 0");
    }
    ClusterTopology::Options cluster;
    for (const std::string& node : options_.cluster_nodes) {
      absl::StatusOr<client_internal::NodeAddress> seed = client_internal::ParseNodeAddress(node);
      if (!seed.ok()) return seed.status();
      cluster.seeds.push_back(*std::move(seed));
    }
    cluster.connection = std::move(connection);
    cluster.connections = options_.connections;
    cluster.refresh_interval = absl::FromChrono(options_.cluster_refresh_interval);
    // Off the request path, so it may take longer than a call; still bounded, so a node that
    // hangs delays the next refresh by this much at most.
    cluster.refresh_timeout =
        std::max(absl::FromChrono(options_.timeout) * 4, absl::Milliseconds(200));
    topology_ = std::make_unique<ClusterTopology>(io_, std::move(cluster));
    if (absl::Status status = topology_->Start(); !status.ok()) {
      topology_->Stop();
      return status;
    }
  } else {
    boost::system::error_code ec;
    asio::ip::tcp::resolver resolver(io_);
    auto results = resolver.resolve(options_.host, std::to_string(options_.port), ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot resolve ", options_.host, ": ", ec.message()));
    }
    for (const auto& entry : results) connection.endpoints.push_back(entry.endpoint());
    connection.host = options_.host;
    pool_ = std::make_unique<EndpointPool>(io_, std::move(connection), options_.connections);
  }
  thread_ = std::thread([this] { io_.run(); });
  return absl::OkStatus();
}

absl::Status RemoteLimiter::Impl::Encode(std::string_view verb, const Policy& policy,
                                         std::string_view key, const int64_t* cost, Job* job,
                                         int64_t max_wait_ms) const {
  absl::Status status = AppendPolicyCommand(verb, options_.policy_mode, policy, key, cost,
                                            &job->command, max_wait_ms);
  if (!status.ok()) return status;
  if (cluster()) job->slot = client_internal::KeySlot(key);
  job->writes = verb != "RL.PEEK";
  return absl::OkStatus();
}

Job RemoteLimiter::Impl::EncodeRelease(std::string_view key, std::string_view lease_id) const {
  Job job;
  client_internal::AppendRelease(key, lease_id, &job.command);
  if (cluster()) job.slot = client_internal::KeySlot(key);
  return job;
}

void RemoteLimiter::Impl::EncodeChecks(absl::Span<const Request> requests,
                                       std::vector<absl::StatusOr<Decision>>* results,
                                       std::vector<Job>* jobs, std::vector<size_t>* sent) {
  results->assign(requests.size(), absl::UnknownError("unset"));
  checks_.fetch_add(requests.size(), std::memory_order_relaxed);
  jobs->reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& request = requests[i];
    Job job;
    absl::Status status = Encode("RL.CHECK", *request.policy, request.key, &request.cost, &job);
    if (status.ok()) {
      jobs->push_back(std::move(job));
      sent->push_back(i);
    } else {
      (*results)[i] = status;
    }
  }
}

absl::StatusOr<Decision> RemoteLimiter::Impl::CheckResult(
    const Policy& policy, std::string_view key, int64_t cost,
    const absl::StatusOr<resp::Value>& reply) {
  if (!reply.ok()) {
    if (!IsUnavailability(reply.status())) return reply.status();
    return Degrade(policy, key, cost, reply.status());
  }
  absl::StatusOr<Decision> result = ToDecision(*reply, policy);
  // A server that refuses us (NOAUTH, WRONGPASS) is as unusable as one that is down.
  if (absl::IsPermissionDenied(result.status())) {
    return Degrade(policy, key, cost, result.status());
  }
  return result;
}

absl::StatusOr<Lease> RemoteLimiter::Impl::AcquireResult(LeaseIssuer* issuer, const Policy& policy,
                                                         std::string_view key, int64_t cost,
                                                         Job& job) {
  if (!job.reply.ok()) {
    if (!IsUnavailability(job.reply.status())) return job.reply.status();
    // The master granted a lease its replicas did not acknowledge in time: the caller is told
    // what the fallback or the FailureMode decides, so that lease is given back.
    if (job.unreplicated_reply.has_value()) {
      absl::StatusOr<client_internal::Acquired> granted =
          client_internal::ToAcquired(*job.unreplicated_reply, policy);
      if (granted.ok() && !granted->lease_id.empty()) {
        SendAndForget(EncodeRelease(key, granted->lease_id));
      }
    }
    return DegradeAcquire(policy, key, cost, job.reply.status());
  }
  absl::StatusOr<client_internal::Acquired> acquired =
      client_internal::ToAcquired(*job.reply, policy);
  if (!acquired.ok()) {
    if (job.reply->type == resp::Value::Type::kError) CountServerError();
    // A server that refuses us (NOAUTH, WRONGPASS) is as unusable as one that is down.
    if (absl::IsPermissionDenied(acquired.status())) {
      return DegradeAcquire(policy, key, cost, acquired.status());
    }
    return acquired.status();
  }
  Answered(policy, &acquired->decision);
  if (acquired->lease_id.empty()) return Lease(nullptr, std::string(key), "", acquired->decision);
  return Lease(issuer, std::string(key), std::move(acquired->lease_id), acquired->decision);
}

RemoteLimiterStats RemoteLimiter::Impl::Stats() const {
  RemoteLimiterStats stats;
  stats.checks = checks_.load(std::memory_order_relaxed);
  stats.acquires = acquires_.load(std::memory_order_relaxed);
  stats.refunds = refunds_.load(std::memory_order_relaxed);
  stats.charges = charges_.load(std::memory_order_relaxed);
  stats.settles_lost = settles_lost_.load(std::memory_order_relaxed);
  stats.releases = releases_.load(std::memory_order_relaxed);
  stats.release_failures = release_failures_.load(std::memory_order_relaxed);
  stats.answered = answered_.load(std::memory_order_relaxed);
  stats.failed_open = failed_open_.load(std::memory_order_relaxed);
  stats.failed_closed = failed_closed_.load(std::memory_order_relaxed);
  stats.server_errors = server_errors_.load(std::memory_order_relaxed);
  stats.redirects = redirects_.load(std::memory_order_relaxed);
  stats.unreplicated = unreplicated_.load(std::memory_order_relaxed);
  stats.fallback_allowed = fallback_allowed_.load(std::memory_order_relaxed);
  stats.fallback_denied = fallback_denied_.load(std::memory_order_relaxed);
  if (fallback_ != nullptr) stats.fallback_keys = fallback_->keys();
  std::vector<const EndpointPool*> pools;
  if (pool_ != nullptr) pools.push_back(pool_.get());
  if (topology_ != nullptr) {
    pools = topology_->Pools();
    stats.slot_map_refreshes = topology_->refreshes();
    stats.nodes = pools.size();
  }
  for (const EndpointPool* pool : pools) {
    stats.timeouts += pool->timeouts();
    stats.connects += pool->counters().connects.load(std::memory_order_relaxed);
    stats.connection_failures +=
        pool->counters().connection_failures.load(std::memory_order_relaxed);
  }
  return stats;
}

absl::StatusOr<Decision> RemoteLimiter::Impl::ToDecision(const resp::Value& reply,
                                                         const Policy& policy) {
  absl::StatusOr<Decision> decision = client_internal::ToDecision(reply, policy);
  if (decision.ok()) {
    Answered(policy, &*decision);
  } else if (reply.type == resp::Value::Type::kError) {
    server_errors_.fetch_add(1, std::memory_order_relaxed);
  }
  return decision;
}

Decision RemoteLimiter::Impl::Degrade(const Policy& policy, std::string_view key, int64_t cost,
                                      const absl::Status& why) {
  std::optional<Decision> decision;
  if (fallback_ != nullptr) decision = fallback_->Decide(policy, key, cost);
  if (!decision.has_value()) decision = FailureDecision(policy);
  CountDegraded(*decision);
  if (options_.on_failure) options_.on_failure(policy, why);
  return *decision;
}

Lease RemoteLimiter::Impl::DegradeAcquire(const Policy& policy, std::string_view key, int64_t cost,
                                          const absl::Status& why) {
  std::optional<Lease> lease;
  if (fallback_ != nullptr) lease = fallback_->Acquire(policy, key, cost);
  if (!lease.has_value()) lease.emplace(nullptr, std::string(key), "", FailureDecision(policy));
  CountDegraded(lease->decision());
  if (options_.on_failure) options_.on_failure(policy, why);
  return *std::move(lease);
}

absl::Status RemoteLimiter::Impl::LostSettle(const Policy& policy, const absl::Status& why) {
  settles_lost_.fetch_add(1, std::memory_order_relaxed);
  if (options_.on_failure) options_.on_failure(policy, why);
  return why;
}

absl::StatusOr<bool> RemoteLimiter::Impl::ReleaseResult(const Job& job) {
  const absl::StatusOr<resp::Value>& reply = job.reply;
  absl::StatusOr<bool> held =
      reply.ok() ? client_internal::ToReleased(*reply) : absl::StatusOr<bool>(reply.status());
  if (!held.ok()) {
    if (IsUnavailability(held.status())) {
      release_failures_.fetch_add(1, std::memory_order_relaxed);
    } else if (reply.ok() && reply->type == resp::Value::Type::kError) {
      CountServerError();
    }
  }
  return held;
}

Decision RemoteLimiter::Impl::FailureDecision(const Policy& policy) const {
  Decision decision;
  const bool open = policy.failure_mode == FailureMode::kFailOpen;
  decision.decided_by = open ? DecidedBy::kFailOpen : DecidedBy::kFailClosed;
  decision.allowed = open;
  decision.retry_after_ms = open ? 0 : options_.fail_closed_retry_after_ms;
  // Nothing about the limits or their state is known: count 0, the numbers stay 0.
  if (policy.shadow) ApplyShadow(decision);
  return decision;
}

bool RemoteLimiter::Impl::IsUnavailability(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsInternal(status) || absl::IsCancelled(status) ||
         absl::IsPermissionDenied(status) || absl::IsResourceExhausted(status);
}

void RemoteLimiter::Impl::CountDegraded(const Decision& decision) {
  std::atomic<uint64_t>* counter = nullptr;
  if (decision.decided_by == DecidedBy::kFallback) {
    counter = decision.allowed ? &fallback_allowed_ : &fallback_denied_;
  } else {
    counter = decision.decided_by == DecidedBy::kFailOpen ? &failed_open_ : &failed_closed_;
  }
  counter->fetch_add(1, std::memory_order_relaxed);
}

}  // namespace rl

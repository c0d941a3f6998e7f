// rl::RemoteLimiter: encodes checks, acquires, releases, refunds and charges (protocol.h), routes
// them to one endpoint's pool (pool.h) or, in cluster mode, to the pool of the master serving each
// key's slot (cluster.h), runs them from a single I/O thread, follows redirections within the
// call's budget, and turns replies, timeouts and outages into decisions and leases (an outage's by
// the local fallback, fallback.h, when there is one).
#include "rl/remote_limiter.h"

#include "remote_limiter_impl.h"

namespace rl {

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
  std::vector<absl::StatusOr<Decision>> results;
  std::vector<Job> jobs;
  std::vector<size_t> sent;
  impl_->EncodeChecks(requests, &results, &jobs, &sent);
  if (jobs.empty()) return results;
  impl_->Run(jobs);
  for (size_t k = 0; k < jobs.size(); ++k) {
    const Request& request = requests[sent[k]];
    results[sent[k]] =
        impl_->CheckResult(*request.policy, request.key, request.cost, jobs[k].reply);
  }
  return results;
}

void RemoteLimiter::AsyncCheck(const Policy& policy, std::string_view key, int64_t cost,
                               CheckCallback done) {
  const Request request{&policy, key, cost};
  AsyncCheckMany(absl::MakeConstSpan(&request, 1),
                 [done = std::move(done)](std::vector<absl::StatusOr<Decision>> results) {
                   done(std::move(results.front()));
                 });
}

void RemoteLimiter::AsyncCheckMany(absl::Span<const Request> requests, CheckManyCallback done) {
  auto results = std::make_shared<std::vector<absl::StatusOr<Decision>>>();
  std::vector<Job> jobs;
  std::vector<size_t> sent;
  impl_->EncodeChecks(requests, results.get(), &jobs, &sent);
  // What the answers need once the caller's requests are gone: the keys are copied (the
  // policies must outlive the call).
  std::vector<Request> kept;
  auto keys = std::make_shared<std::vector<std::string>>();
  for (size_t i : sent) {
    keys->emplace_back(requests[i].key);
    kept.push_back(requests[i]);
  }
  impl_->RunAsync(std::move(jobs), [this, results, keys, kept = std::move(kept), sent,
                                    done = std::move(done)](std::vector<Job>& jobs) {
    for (size_t k = 0; k < jobs.size(); ++k) {
      (*results)[sent[k]] =
          impl_->CheckResult(*kept[k].policy, (*keys)[k], kept[k].cost, jobs[k].reply);
    }
    done(std::move(*results));
  });
}

absl::StatusOr<Decision> RemoteLimiter::ChargeWithin(const Policy& policy, std::string_view key,
                                                     int64_t amount, int64_t max_wait_ms) {
  if (max_wait_ms < 0) return absl::InvalidArgumentError("MAXWAIT must not be negative");
  impl_->checks_.fetch_add(1, std::memory_order_relaxed);
  std::vector<Job> jobs(1);
  if (absl::Status s = impl_->Encode("RL.CHECK", policy, key, &amount, &jobs[0], max_wait_ms);
      !s.ok()) {
    return s;
  }
  impl_->Run(jobs);
  return impl_->CheckResult(policy, key, amount, jobs[0].reply);
}

absl::StatusOr<Decision> RemoteLimiter::Refund(const Policy& policy, std::string_view key,
                                               int64_t amount) {
  impl_->refunds_.fetch_add(1, std::memory_order_relaxed);
  return Settle(true, policy, key, amount);
}

absl::StatusOr<Decision> RemoteLimiter::Charge(const Policy& policy, std::string_view key,
                                               int64_t amount) {
  impl_->charges_.fetch_add(1, std::memory_order_relaxed);
  return Settle(false, policy, key, amount);
}

absl::StatusOr<Decision> RemoteLimiter::Settle(bool refund, const Policy& policy,
                                               std::string_view key, int64_t amount) {
  // A negative or too large amount is refused by Encode, with rl::Limiter's text.
  std::vector<Job> jobs(1);
  if (absl::Status s =
          impl_->Encode(refund ? "RL.REFUND" : "RL.CHARGE", policy, key, &amount, &jobs[0]);
      !s.ok()) {
    return s;
  }
  impl_->Run(jobs);
  const absl::StatusOr<resp::Value>& reply = jobs[0].reply;
  if (!reply.ok()) {
    if (!Impl::IsUnavailability(reply.status())) return reply.status();
    return impl_->LostSettle(policy, reply.status());
  }
  absl::StatusOr<Decision> decision = impl_->ToDecision(*reply, policy);
  // A server that refuses us (NOAUTH, WRONGPASS) did not settle anything either.
  if (absl::IsPermissionDenied(decision.status())) {
    return impl_->LostSettle(policy, decision.status());
  }
  return decision;
}

absl::StatusOr<Lease> RemoteLimiter::Acquire(const Policy& policy, std::string_view key,
                                             int64_t cost) {
  impl_->acquires_.fetch_add(1, std::memory_order_relaxed);
  std::vector<Job> jobs(1);
  if (absl::Status s = impl_->Encode("RL.ACQUIRE", policy, key, &cost, &jobs[0]); !s.ok()) {
    return s;
  }
  impl_->Run(jobs);
  return impl_->AcquireResult(this, policy, key, cost, jobs[0]);
}

void RemoteLimiter::AsyncAcquire(const Policy& policy, std::string_view key, int64_t cost,
                                 AcquireCallback done) {
  impl_->acquires_.fetch_add(1, std::memory_order_relaxed);
  std::vector<Job> jobs(1);
  if (absl::Status s = impl_->Encode("RL.ACQUIRE", policy, key, &cost, &jobs[0]); !s.ok()) {
    impl_->Complete([s, done = std::move(done)] { done(s); });
    return;
  }
  impl_->RunAsync(std::move(jobs), [this, &policy, key = std::string(key), cost,
                                    done = std::move(done)](std::vector<Job>& jobs) {
    done(impl_->AcquireResult(this, policy, key, cost, jobs[0]));
  });
}

void RemoteLimiter::ReleaseWithoutWaiting(std::string_view key, std::string_view lease_id) {
  if (lease_id.empty() || lease_id.size() > client_internal::kMaxLeaseIdBytes) return;
  if (impl_->ReleaseLocally(key, lease_id)) return;
  impl_->releases_.fetch_add(1, std::memory_order_relaxed);
  std::vector<Job> jobs{impl_->EncodeRelease(key, lease_id)};
  impl_->RunAsync(std::move(jobs),
                  [this](std::vector<Job>& jobs) { (void)impl_->ReleaseResult(jobs[0]); });
}

absl::StatusOr<bool> RemoteLimiter::Release(std::string_view key, std::string_view lease_id) {
  // Nothing a server could have issued: refused here, without a round trip.
  if (lease_id.empty() || lease_id.size() > client_internal::kMaxLeaseIdBytes) {
    return absl::InvalidArgumentError("invalid lease id (empty or too long)");
  }
  if (impl_->ReleaseLocally(key, lease_id)) return true;
  impl_->releases_.fetch_add(1, std::memory_order_relaxed);
  std::vector<Job> jobs{impl_->EncodeRelease(key, lease_id)};
  impl_->Run(jobs);
  return impl_->ReleaseResult(jobs[0]);
}

absl::StatusOr<Decision> RemoteLimiter::Peek(const Policy& policy, std::string_view key,
                                             int64_t cost) {
  impl_->checks_.fetch_add(1, std::memory_order_relaxed);
  std::vector<Job> jobs(1);
  if (absl::Status s = impl_->Encode("RL.PEEK", policy, key, &cost, &jobs[0]); !s.ok()) return s;
  impl_->Run(jobs);
  if (!jobs[0].reply.ok()) return jobs[0].reply.status();
  return impl_->ToDecision(*jobs[0].reply, policy);
}

absl::StatusOr<int64_t> RemoteLimiter::Reset(const Policy& policy, std::string_view key) {
  std::vector<Job> jobs(1);
  if (absl::Status s = impl_->Encode("RL.RESET", policy, key, nullptr, &jobs[0]); !s.ok()) {
    return s;
  }
  impl_->Run(jobs);
  if (!jobs[0].reply.ok()) return jobs[0].reply.status();
  const resp::Value& reply = *jobs[0].reply;
  if (reply.type == resp::Value::Type::kError) return impl_->ServerError(reply);
  if (reply.type != resp::Value::Type::kInteger) {
    return absl::InternalError("unexpected RL.RESET reply");
  }
  return reply.integer;
}

absl::Status RemoteLimiter::Ping() {
  std::string ping;
  resp::Writer(&ping).Command({"PING"});
  std::vector<Job> jobs;
  if (impl_->cluster()) {
    ClusterTopology& topology = *impl_->topology();
    if (!topology.WaitForMap(DeadlineAfter(impl_->timeout()))) {
      return absl::UnavailableError("no cluster node answered CLUSTER SLOTS in time");
    }
    for (EndpointPool* master : topology.Masters()) {
      jobs.emplace_back().command = ping;
      jobs.back().target = master;
    }
  } else {
    jobs.emplace_back().command = ping;
  }
  impl_->Run(jobs);
  for (const Job& job : jobs) {
    if (!job.reply.ok()) return job.reply.status();
    if (job.reply->type == resp::Value::Type::kError) return impl_->ServerError(*job.reply);
  }
  return absl::OkStatus();
}

int64_t RemoteLimiter::WallNowMs() const { return impl_->WallNowMs(); }

RemoteLimiterStats RemoteLimiter::Stats() const { return impl_->Stats(); }

Decision RemoteLimiter::FailureDecision(const Policy& policy) const {
  return impl_->FailureDecision(policy);
}

}  // namespace rl

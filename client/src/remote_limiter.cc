// rl::RemoteLimiter: encodes checks, acquires, releases, refunds and charges (protocol.h), routes
// them to one endpoint's pool (pool.h) or, in cluster mode, to the pool of the master serving each
// key's slot (cluster.h), runs them from a single I/O thread, follows redirections within the
// call's budget, and turns replies, timeouts and outages into decisions and leases (an outage's by
// the local fallback, fallback.h, when there is one).
#include "rl/remote_limiter.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <numeric>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "cluster.h"
#include "cluster_protocol.h"
#include "fallback.h"
#include "pool.h"
#include "protocol.h"
#include "resp/writer.h"

namespace rl {

namespace asio = boost::asio;
using client_internal::AppendPolicyCommand;
using client_internal::ClusterTopology;
using client_internal::ConnectionOptions;
using client_internal::EndpointPool;
using client_internal::PolicyMode;

namespace {

// Redirections one command may follow within its call: a slot moving while a failover happens
// takes two; more means the nodes disagree, and the map refresh has to settle it first.
constexpr int kMaxRedirects = 5;

// One command of a call: encoded once, sent again to wherever a redirection points.
struct Job {
  std::string command;
  // The key's slot (cluster mode), or -1 when `target` decides (PING to one node).
  int slot = -1;
  // Where the next attempt goes instead of the slot's owner: a redirection's node.
  EndpointPool* target = nullptr;
  bool asking = false;  // precede it with ASKING (it follows an ASK)
  bool writes = false;  // changes state: covered by WAIT when wait_for_replicas is set
  int redirects = 0;
  // The reply, or why there is none (transport failure, timeout, node unavailable).
  absl::StatusOr<resp::Value> reply = absl::UnknownError("not sent");
  // wait_for_replicas: the master's reply when too few replicas acknowledged it (`reply` is then
  // that error), so an acquire can give back the lease it was granted anyway.
  std::optional<resp::Value> unreplicated_reply;
};

// The commands of one call that go to one node, in one pipelined write.
struct Batch {
  EndpointPool* pool = nullptr;
  std::vector<size_t> jobs;
  std::string commands;
  size_t expected = 0;  // replies: one per command, ASKING and WAIT included
  bool wait = false;    // ends with WAIT
  EndpointPool::Ticket ticket;
};

}  // namespace

class RemoteLimiter::Impl {
 public:
  explicit Impl(RemoteLimiterOptions options)
      : options_(std::move(options)),
        clock_(options_.clock != nullptr ? options_.clock : SteadyClock::Default()) {}

  ~Impl() {
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

  absl::Status Start() {
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

  bool cluster() const { return topology_ != nullptr; }
  absl::Duration timeout() const { return absl::FromChrono(options_.timeout); }
  ClusterTopology* topology() { return topology_.get(); }

  // A keyed command for (policy, key): encoded, and routed by the key's slot in cluster mode.
  absl::Status Encode(std::string_view verb, const Policy& policy, std::string_view key,
                      const int64_t* cost, Job* job, int64_t max_wait_ms = -1) const {
    absl::Status status = AppendPolicyCommand(verb, options_.policy_mode, policy, key, cost,
                                              &job->command, max_wait_ms);
    if (!status.ok()) return status;
    if (cluster()) job->slot = client_internal::KeySlot(key);
    job->writes = verb != "RL.PEEK";
    return absl::OkStatus();
  }

  // RL.RELEASE, routed by the key's slot. Not a write for wait_for_replicas: a release that a
  // crash loses only keeps a slot until the lease's ttl.
  Job EncodeRelease(std::string_view key, std::string_view lease_id) const {
    Job job;
    client_internal::AppendRelease(key, lease_id, &job.command);
    if (cluster()) job.slot = client_internal::KeySlot(key);
    return job;
  }

  // The RL.CHECK jobs of `requests`: results[i] is set now for a request refused without asking
  // (a bad cost or policy), and jobs[k] answers requests[sent[k]].
  void EncodeChecks(absl::Span<const Request> requests,
                    std::vector<absl::StatusOr<Decision>>* results, std::vector<Job>* jobs,
                    std::vector<size_t>* sent) {
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

  // The answer to one check, from its reply or why there is none.
  absl::StatusOr<Decision> CheckResult(const Policy& policy, std::string_view key, int64_t cost,
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

  // The answer to one acquire, from its reply or why there is none; a granted lease is
  // `issuer`'s.
  absl::StatusOr<Lease> AcquireResult(LeaseIssuer* issuer, const Policy& policy,
                                      std::string_view key, int64_t cost, Job& job) {
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

  // Runs `fn` on the I/O thread: an asynchronous call's callback always runs there, even for a
  // call refused without asking.
  void Complete(std::function<void()> fn) { asio::post(io_, std::move(fn)); }

  // Sends `job` without waiting for its reply (which is read and dropped): a best-effort release
  // of a lease the caller will not be told about. Not redirected: a lost one ends by its ttl.
  void SendAndForget(const Job& job) {
    EndpointPool* pool = cluster() ? topology_->Route(job.slot) : pool_.get();
    (void)pool->Submit(job.command, 1);
  }

  // Runs every job within one timeout: one batch per node, all sent before any is waited for;
  // then again for the jobs that were redirected, with what is left of the time.
  void Run(std::vector<Job>& jobs) {
    const absl::Time deadline = absl::Now() + absl::FromChrono(options_.timeout);
    std::vector<size_t> todo(jobs.size());
    std::iota(todo.begin(), todo.end(), 0);
    while (!todo.empty()) {
      if (absl::Now() >= deadline) {
        for (size_t j : todo) {
          jobs[j].reply = absl::DeadlineExceededError("no time left to follow a redirection");
        }
        return;
      }
      std::vector<Batch> batches = Group(jobs, todo, deadline);
      todo.clear();
      // One node to ask (the usual call): on a blocking connection on this thread, when one is
      // free, which spares the two hand-overs to the I/O thread and back.
      if (batches.size() == 1) {
        Batch& batch = batches.front();
        std::optional<absl::StatusOr<std::vector<resp::Value>>> replies =
            batch.pool->ExecuteDirect(batch.commands, batch.expected, deadline);
        if (replies.has_value()) {
          Collect(batch, *std::move(replies), jobs, &todo);
          continue;
        }
      }
      for (Batch& batch : batches) {
        batch.ticket = batch.pool->Submit(std::move(batch.commands), batch.expected);
      }
      for (Batch& batch : batches) {
        Collect(batch, batch.pool->Wait(batch.ticket, deadline), jobs, &todo);
      }
    }
  }

  // Run without blocking: returns at once; `done` gets the jobs on the I/O thread, each with its
  // reply or its error, by the same deadline (the timer closes what has not answered by then).
  void RunAsync(std::vector<Job> jobs, std::function<void(std::vector<Job>&)> done) {
    auto op = std::make_shared<Operation>(io_);
    op->jobs = std::move(jobs);
    op->done = std::move(done);
    op->deadline = absl::Now() + timeout();
    op->timer.expires_after(options_.timeout);
    asio::post(io_, [this, op] {
      op->timer.async_wait([this, op](const boost::system::error_code& ec) {
        if (!ec) Expire(op);
      });
      std::vector<size_t> todo(op->jobs.size());
      std::iota(todo.begin(), todo.end(), 0);
      Round(op, std::move(todo));
    });
  }

  // Stats of every pool, plus the limiter's own counters.
  RemoteLimiterStats Stats() const {
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

  // A reply -> the caller's Decision. In inline mode the server checked bare limits, so the
  // caller's shadow flag is applied here; in server-policy mode the server already did.
  absl::StatusOr<Decision> ToDecision(const resp::Value& reply, const Policy& policy) {
    absl::StatusOr<Decision> decision = client_internal::ToDecision(reply, policy);
    if (decision.ok()) {
      Answered(policy, &*decision);
    } else if (reply.type == resp::Value::Type::kError) {
      server_errors_.fetch_add(1, std::memory_order_relaxed);
    }
    return decision;
  }

  absl::Status ServerError(const resp::Value& reply) {
    server_errors_.fetch_add(1, std::memory_order_relaxed);
    return client_internal::ErrorStatus(reply);
  }

  // A check the server could not answer: the fallback decides when there is one and it can,
  // else the policy's FailureMode; either way it is counted and reported.
  Decision Degrade(const Policy& policy, std::string_view key, int64_t cost,
                   const absl::Status& why) {
    std::optional<Decision> decision;
    if (fallback_ != nullptr) decision = fallback_->Decide(policy, key, cost);
    if (!decision.has_value()) decision = FailureDecision(policy);
    CountDegraded(*decision);
    if (options_.on_failure) options_.on_failure(policy, why);
    return *decision;
  }

  // An acquire the server could not answer: the fallback's local lease, else the FailureMode's
  // answer holding nothing (fail-open proceeds without a lease: there is none to release).
  Lease DegradeAcquire(const Policy& policy, std::string_view key, int64_t cost,
                       const absl::Status& why) {
    std::optional<Lease> lease;
    if (fallback_ != nullptr) lease = fallback_->Acquire(policy, key, cost);
    if (!lease.has_value()) lease.emplace(nullptr, std::string(key), "", FailureDecision(policy));
    CountDegraded(lease->decision());
    if (options_.on_failure) options_.on_failure(policy, why);
    return *std::move(lease);
  }

  // A refund or charge the server did not get: counted, reported, and returned as the error
  // (no fallback or FailureMode decision: the caller must know the amount was not settled).
  absl::Status LostSettle(const Policy& policy, const absl::Status& why) {
    settles_lost_.fetch_add(1, std::memory_order_relaxed);
    if (options_.on_failure) options_.on_failure(policy, why);
    return why;
  }

  // A release the fallback granted: ended locally, never sent (the server never knew of it).
  bool ReleaseLocally(std::string_view key, std::string_view lease_id) {
    return fallback_ != nullptr && fallback_->Release(key, lease_id);
  }

  // An answer as the caller sees it: inline mode applies the caller's shadow flag (the server
  // evaluated bare limits); in server-policy mode the server already did.
  void Answered(const Policy& policy, Decision* decision) {
    answered_.fetch_add(1, std::memory_order_relaxed);
    if (options_.policy_mode == PolicyMode::kInline && policy.shadow) ApplyShadow(*decision);
  }

  void CountServerError() { server_errors_.fetch_add(1, std::memory_order_relaxed); }

  // What a release's reply means (held or not), counting an outage or a server error on the way;
  // the blocking and the fire-and-forget release both settle here.
  absl::StatusOr<bool> ReleaseResult(const Job& job) {
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

  // Transport-level failures (down, slow, garbled, refusing our credentials, a cluster node that
  // cannot serve the key now) are decided by the failure mode; a request the server rejects as
  // invalid stays an error.
  static bool IsUnavailability(const absl::Status& status) {
    return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
           absl::IsInternal(status) || absl::IsCancelled(status) ||
           absl::IsPermissionDenied(status) || absl::IsResourceExhausted(status);
  }

  int64_t WallNowMs() const { return clock_->WallMs(); }

  std::atomic<uint64_t> checks_{0};
  std::atomic<uint64_t> acquires_{0};
  std::atomic<uint64_t> refunds_{0};
  std::atomic<uint64_t> charges_{0};
  std::atomic<uint64_t> releases_{0};
  std::atomic<uint64_t> release_failures_{0};

 private:
  // A decision made without the server, counted by who made it.
  void CountDegraded(const Decision& decision) {
    std::atomic<uint64_t>* counter = nullptr;
    if (decision.decided_by == DecidedBy::kFallback) {
      counter = decision.allowed ? &fallback_allowed_ : &fallback_denied_;
    } else {
      counter = decision.decided_by == DecidedBy::kFailOpen ? &failed_open_ : &failed_closed_;
    }
    counter->fetch_add(1, std::memory_order_relaxed);
  }

  // An asynchronous Run in flight. Touched on the I/O thread only.
  struct Operation {
    explicit Operation(asio::io_context& io) : timer(io) {}
    std::vector<Job> jobs;
    std::function<void(std::vector<Job>&)> done;
    absl::Time deadline;
    asio::steady_timer timer;  // fires at the deadline
    bool expired = false;
    std::vector<Batch> batches;  // the round in flight
    size_t outstanding = 0;      // its batches not complete yet
    std::vector<size_t> todo;    // its redirected jobs, for the next round
  };

  // One round of an asynchronous Run: the jobs of `todo` sent, one batch per node; the next
  // round starts when the last batch is complete (BatchDone).
  void Round(const std::shared_ptr<Operation>& op, std::vector<size_t> todo) {
    if (!todo.empty() && (stopping_ || op->expired || absl::Now() >= op->deadline)) {
      for (size_t j : todo) {
        op->jobs[j].reply =
            stopping_ ? absl::CancelledError("RemoteLimiter destroyed")
                      : absl::DeadlineExceededError("no time left to follow a redirection");
      }
      todo.clear();
    }
    if (todo.empty()) {
      op->timer.cancel();
      std::exchange(op->done, nullptr)(op->jobs);
      return;
    }
    op->batches = Group(op->jobs, todo, op->deadline);
    op->outstanding = op->batches.size();
    for (size_t i = 0; i < op->batches.size(); ++i) {
      Batch& batch = op->batches[i];
      // Continued from the queue, not from inside the connection that completed the call (which
      // may be in the middle of reading or closing).
      batch.ticket = batch.pool->SubmitHere(batch.commands, batch.expected, [this, op, i] {
        asio::post(io_, [this, op, i] { BatchDone(op, i); });
      });
    }
  }

  void BatchDone(const std::shared_ptr<Operation>& op, size_t i) {
    Batch& batch = op->batches[i];
    Collect(batch, batch.ticket.call->Take(), op->jobs, &op->todo);
    if (--op->outstanding == 0) Round(op, std::exchange(op->todo, {}));
  }

  // The deadline passed: every batch still unanswered completes with DeadlineExceeded (and its
  // connection is closed, as for a synchronous call).
  void Expire(const std::shared_ptr<Operation>& op) {
    op->expired = true;
    for (Batch& batch : op->batches) batch.pool->AbandonHere(batch.ticket, timeout());
  }

  // The jobs of `todo` grouped by the node they go to, encoded into one write each.
  std::vector<Batch> Group(std::vector<Job>& jobs, const std::vector<size_t>& todo,
                           absl::Time deadline) {
    std::vector<Batch> batches;
    for (size_t j : todo) {
      Job& job = jobs[j];
      EndpointPool* pool = job.target;
      if (pool == nullptr) pool = cluster() ? topology_->Route(job.slot) : pool_.get();
      auto it = std::find_if(batches.begin(), batches.end(),
                             [pool](const Batch& b) { return b.pool == pool; });
      if (it == batches.end()) {
        it = batches.emplace(batches.end());
        it->pool = pool;
      }
      if (job.asking) {
        resp::Writer(&it->commands).Command({"ASKING"});
        ++it->expected;
      }
      it->commands += job.command;
      ++it->expected;
      it->jobs.push_back(j);
      it->wait = it->wait || (job.writes && options_.wait_for_replicas > 0);
    }
    for (Batch& batch : batches) {
      if (!batch.wait) continue;
      // One WAIT covers every write before it on this connection. It gives up after three
      // quarters of what is left of the call, so its "not enough replicas" arrives before the
      // deadline (a timeout would also cost the connection). Never 0: that blocks for good.
      const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      const int64_t wait_ms = std::max<int64_t>(1, left_ms * 3 / 4);
      const std::string replicas = std::to_string(options_.wait_for_replicas);
      const std::string timeout = std::to_string(wait_ms);
      resp::Writer(&batch.commands).Command({"WAIT", replicas, timeout});
      ++batch.expected;
    }
    return batches;
  }

  // Hands each job of `batch` its reply; redirected jobs go back on `todo`.
  void Collect(Batch& batch, absl::StatusOr<std::vector<resp::Value>> replies,
               std::vector<Job>& jobs, std::vector<size_t>* todo) {
    if (!replies.ok()) {
      for (size_t j : batch.jobs) jobs[j].reply = replies.status();
      // A node that is down or hung may have been replaced: look again (rate-limited).
      if (cluster()) topology_->RequestRefresh();
      return;
    }
    std::optional<absl::Status> unreplicated;
    if (batch.wait) unreplicated = CheckWait(replies->back());
    size_t next = 0;
    for (size_t j : batch.jobs) {
      Job& job = jobs[j];
      if (job.asking) ++next;  // ASKING's +OK
      resp::Value& reply = (*replies)[next++];
      job.asking = false;
      if (cluster() && FollowRedirect(batch, reply, job)) {
        todo->push_back(j);
        continue;
      }
      if (client_internal::IsNodeUnavailableError(reply)) {
        job.reply = absl::UnavailableError(reply.text);
        if (cluster()) topology_->RequestRefresh();
        continue;
      }
      if (job.writes && unreplicated.has_value() && !unreplicated->ok() &&
          reply.type != resp::Value::Type::kError) {
        unreplicated_.fetch_add(1, std::memory_order_relaxed);
        job.reply = *unreplicated;
        job.unreplicated_reply = std::move(reply);
        continue;
      }
      job.reply = std::move(reply);
    }
  }

  // A MOVED or ASK for `job`: points it at the named node (a MOVED also updates the map) and
  // returns true; false when `reply` is no redirection, or one too many (then job.reply says so).
  bool FollowRedirect(const Batch& batch, const resp::Value& reply, Job& job) {
    std::optional<client_internal::Redirect> redirect =
        client_internal::ParseRedirect(reply, batch.pool->options().host);
    if (!redirect.has_value()) return false;
    if (job.redirects >= kMaxRedirects) {
      topology_->RequestRefresh();
      job.reply = absl::UnavailableError(
          absl::StrCat("cluster nodes keep redirecting (last: ", reply.text, ")"));
      return false;
    }
    absl::StatusOr<EndpointPool*> to = topology_->Node(redirect->to);
    if (!to.ok()) {
      job.reply = to.status();
      return false;
    }
    ++job.redirects;
    redirects_.fetch_add(1, std::memory_order_relaxed);
    job.target = *to;
    if (redirect->kind == client_internal::Redirect::Kind::kAsk) {
      job.asking = true;  // this command only; the slot still belongs to the node that said ASK
    } else {
      topology_->Moved(redirect->slot, *to);
    }
    return true;
  }

  // The reply to WAIT: OK when enough replicas acknowledged.
  absl::Status CheckWait(const resp::Value& reply) const {
    if (reply.type == resp::Value::Type::kInteger && reply.integer >= options_.wait_for_replicas) {
      return absl::OkStatus();
    }
    return absl::UnavailableError(reply.type == resp::Value::Type::kInteger
                                      ? absl::StrCat("WAIT: ", reply.integer, " of ",
                                                     options_.wait_for_replicas,
                                                     " replicas acknowledged in time")
                                      : absl::StrCat("WAIT: ", reply.text));
  }

  const RemoteLimiterOptions options_;
  const Clock* const clock_;
  std::atomic<uint64_t> answered_{0};
  std::atomic<uint64_t> failed_open_{0};
  std::atomic<uint64_t> failed_closed_{0};
  std::atomic<uint64_t> server_errors_{0};
  std::atomic<uint64_t> redirects_{0};
  std::atomic<uint64_t> unreplicated_{0};
  std::atomic<uint64_t> fallback_allowed_{0};
  std::atomic<uint64_t> fallback_denied_{0};
  std::atomic<uint64_t> settles_lost_{0};
  std::unique_ptr<client_internal::LocalFallback> fallback_;  // null: no fallback configured
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  // Exactly one of the two: one endpoint, or a cluster's nodes.
  std::unique_ptr<EndpointPool> pool_;
  std::unique_ptr<ClusterTopology> topology_;
  bool stopping_ = false;  // I/O thread: the destructor closed every connection
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
    if (!topology.WaitForMap(absl::Now() + impl_->timeout())) {
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

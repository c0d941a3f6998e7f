// RemoteLimiter's implementation, shared by its source files: remote_limiter.cc (the public
// calls), remote_limiter_impl.cc (start, encoding, replies into decisions and leases, outages
// into fallback or failure-mode answers) and remote_limiter_transport.cc (one batch per node,
// redirections, WAIT, deadlines, synchronous and asynchronous runs).
#pragma once

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
#include "rl/remote_limiter.h"

namespace rl {

namespace asio = boost::asio;
using client_internal::AppendPolicyCommand;
using client_internal::ClusterTopology;
using client_internal::ConnectionOptions;
using client_internal::Deadline;
using client_internal::DeadlineAfter;
using client_internal::EndpointPool;
using client_internal::Left;
using client_internal::PolicyMode;
using client_internal::SteadyNow;

namespace client_internal {
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

}  // namespace client_internal

using client_internal::Batch;
using client_internal::Job;

class RemoteLimiter::Impl {
 public:
  explicit Impl(RemoteLimiterOptions options)
      : options_(std::move(options)),
        clock_(options_.clock != nullptr ? options_.clock : SteadyClock::Default()) {}

  ~Impl();

  absl::Status Start();

  bool cluster() const { return topology_ != nullptr; }
  absl::Duration timeout() const { return absl::FromChrono(options_.timeout); }
  ClusterTopology* topology() { return topology_.get(); }

  // A keyed command for (policy, key): encoded, and routed by the key's slot in cluster mode.
  absl::Status Encode(std::string_view verb, const Policy& policy, std::string_view key,
                      const int64_t* cost, Job* job, int64_t max_wait_ms = -1) const;

  // RL.RELEASE, routed by the key's slot. Not a write for wait_for_replicas: a release that a
  // crash loses only keeps a slot until the lease's ttl.
  Job EncodeRelease(std::string_view key, std::string_view lease_id) const;

  // The RL.CHECK jobs of `requests`: results[i] is set now for a request refused without asking
  // (a bad cost or policy), and jobs[k] answers requests[sent[k]].
  void EncodeChecks(absl::Span<const Request> requests,
                    std::vector<absl::StatusOr<Decision>>* results, std::vector<Job>* jobs,
                    std::vector<size_t>* sent);

  // The answer to one check, from its reply or why there is none.
  absl::StatusOr<Decision> CheckResult(const Policy& policy, std::string_view key, int64_t cost,
                                       const absl::StatusOr<resp::Value>& reply);

  // The answer to one acquire, from its reply or why there is none; a granted lease is
  // `issuer`'s.
  absl::StatusOr<Lease> AcquireResult(LeaseIssuer* issuer, const Policy& policy,
                                      std::string_view key, int64_t cost, Job& job);

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
  void Run(std::vector<Job>& jobs);

  // Run without blocking: returns at once; `done` gets the jobs on the I/O thread, each with its
  // reply or its error, by the same deadline (the timer closes what has not answered by then).
  void RunAsync(std::vector<Job> jobs, std::function<void(std::vector<Job>&)> done);

  // Stats of every pool, plus the limiter's own counters.
  RemoteLimiterStats Stats() const;

  // A reply -> the caller's Decision. In inline mode the server checked bare limits, so the
  // caller's shadow flag is applied here; in server-policy mode the server already did.
  absl::StatusOr<Decision> ToDecision(const resp::Value& reply, const Policy& policy);

  absl::Status ServerError(const resp::Value& reply) {
    server_errors_.fetch_add(1, std::memory_order_relaxed);
    return client_internal::ErrorStatus(reply);
  }

  // A check the server could not answer: the fallback decides when there is one and it can,
  // else the policy's FailureMode; either way it is counted and reported.
  Decision Degrade(const Policy& policy, std::string_view key, int64_t cost,
                   const absl::Status& why);

  // An acquire the server could not answer: the fallback's local lease, else the FailureMode's
  // answer holding nothing (fail-open proceeds without a lease: there is none to release).
  Lease DegradeAcquire(const Policy& policy, std::string_view key, int64_t cost,
                       const absl::Status& why);

  // A refund or charge the server did not get: counted, reported, and returned as the error
  // (no fallback or FailureMode decision: the caller must know the amount was not settled).
  absl::Status LostSettle(const Policy& policy, const absl::Status& why);

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
  absl::StatusOr<bool> ReleaseResult(const Job& job);

  Decision FailureDecision(const Policy& policy) const;

  // Transport-level failures (down, slow, garbled, refusing our credentials, a cluster node that
  // cannot serve the key now) are decided by the failure mode; a request the server rejects as
  // invalid stays an error.
  static bool IsUnavailability(const absl::Status& status);

  int64_t WallNowMs() const { return clock_->WallMs(); }

  std::atomic<uint64_t> checks_{0};
  std::atomic<uint64_t> acquires_{0};
  std::atomic<uint64_t> refunds_{0};
  std::atomic<uint64_t> charges_{0};
  std::atomic<uint64_t> releases_{0};
  std::atomic<uint64_t> release_failures_{0};

 private:
  // A decision made without the server, counted by who made it.
  void CountDegraded(const Decision& decision);

  // An asynchronous Run in flight. Touched on the I/O thread only.
  struct Operation {
    explicit Operation(asio::io_context& io) : timer(io) {}
    std::vector<Job> jobs;
    std::function<void(std::vector<Job>&)> done;
    Deadline deadline;
    asio::steady_timer timer;  // fires at the deadline
    bool expired = false;
    std::vector<Batch> batches;  // the round in flight
    size_t outstanding = 0;      // its batches not complete yet
    std::vector<size_t> todo;    // its redirected jobs, for the next round
  };

  // One round of an asynchronous Run: the jobs of `todo` sent, one batch per node; the next
  // round starts when the last batch is complete (BatchDone).
  void Round(const std::shared_ptr<Operation>& op, std::vector<size_t> todo);

  void BatchDone(const std::shared_ptr<Operation>& op, size_t i);

  // The deadline passed: every batch still unanswered completes with DeadlineExceeded (and its
  // connection is closed, as for a synchronous call).
  void Expire(const std::shared_ptr<Operation>& op) {
    op->expired = true;
    for (Batch& batch : op->batches) batch.pool->AbandonHere(batch.ticket, timeout());
  }

  // The jobs of `todo` grouped by the node they go to, encoded into one write each.
  std::vector<Batch> Group(std::vector<Job>& jobs, const std::vector<size_t>& todo,
                           Deadline deadline);

  // Hands each job of `batch` its reply; redirected jobs go back on `todo`.
  void Collect(Batch& batch, absl::StatusOr<std::vector<resp::Value>> replies,
               std::vector<Job>& jobs, std::vector<size_t>* todo);

  // A MOVED or ASK for `job`: points it at the named node (a MOVED also updates the map) and
  // returns true; false when `reply` is no redirection, or one too many (then job.reply says so).
  bool FollowRedirect(const Batch& batch, const resp::Value& reply, Job& job);

  // The reply to WAIT: OK when enough replicas acknowledged.
  absl::Status CheckWait(const resp::Value& reply) const;

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

}  // namespace rl

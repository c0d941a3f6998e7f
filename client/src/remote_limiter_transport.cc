// RemoteLimiter::Impl's transport: a call's commands grouped into one pipelined write per node,
// MOVED and ASK followed within the call's deadline, WAIT for replicas, run blocking on the
// caller's thread or asynchronously on the I/O thread (see remote_limiter_impl.h).
#include "remote_limiter_impl.h"

namespace rl {
namespace {

// Redirections one command may follow within its call: a slot moving while a failover happens
// takes two; more means the nodes disagree, and the map refresh has to settle it first.
constexpr int kMaxRedirects = 5;

}  // namespace

void RemoteLimiter::Impl::Run(std::vector<Job>& jobs) {
  const Deadline deadline = DeadlineAfter(absl::FromChrono(options_.timeout));
  std::vector<size_t> todo(jobs.size());
  std::iota(todo.begin(), todo.end(), 0);
  while (!todo.empty()) {
    if (SteadyNow() >= deadline) {
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

void RemoteLimiter::Impl::RunAsync(std::vector<Job> jobs,
                                   std::function<void(std::vector<Job>&)> done) {
  auto op = std::make_shared<Operation>(io_);
  op->jobs = std::move(jobs);
  op->done = std::move(done);
  op->deadline = DeadlineAfter(timeout());
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

void RemoteLimiter::Impl::Round(const std::shared_ptr<Operation>& op, std::vector<size_t> todo) {
  if (!todo.empty() && (stopping_ || op->expired || SteadyNow() >= op->deadline)) {
    for (size_t j : todo) {
      op->jobs[j].reply = stopping_
                              ? absl::CancelledError("RemoteLimiter destroyed")
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

void RemoteLimiter::Impl::BatchDone(const std::shared_ptr<Operation>& op, size_t i) {
  Batch& batch = op->batches[i];
  Collect(batch, batch.ticket.call->Take(), op->jobs, &op->todo);
  if (--op->outstanding == 0) Round(op, std::exchange(op->todo, {}));
}

std::vector<Batch> RemoteLimiter::Impl::Group(std::vector<Job>& jobs,
                                              const std::vector<size_t>& todo, Deadline deadline) {
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
    const int64_t left_ms = absl::ToInt64Milliseconds(Left(deadline));
    const int64_t wait_ms = std::max<int64_t>(1, left_ms * 3 / 4);
    const std::string replicas = std::to_string(options_.wait_for_replicas);
    const std::string timeout = std::to_string(wait_ms);
    resp::Writer(&batch.commands).Command({"WAIT", replicas, timeout});
    ++batch.expected;
  }
  return batches;
}

void RemoteLimiter::Impl::Collect(Batch& batch, absl::StatusOr<std::vector<resp::Value>> replies,
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

bool RemoteLimiter::Impl::FollowRedirect(const Batch& batch, const resp::Value& reply, Job& job) {
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

absl::Status RemoteLimiter::Impl::CheckWait(const resp::Value& reply) const {
  if (reply.type == resp::Value::Type::kInteger && reply.integer >= options_.wait_for_replicas) {
    return absl::OkStatus();
  }
  return absl::UnavailableError(reply.type == resp::Value::Type::kInteger
                                    ? absl::StrCat("WAIT: ", reply.integer, " of ",
                                                   options_.wait_for_replicas,
                                                   " replicas acknowledged in time")
                                    : absl::StrCat("WAIT: ", reply.text));
}

}  // namespace rl

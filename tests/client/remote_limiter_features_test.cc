// Issue 16 through rl::RemoteLimiter against the real rl-server: concurrency leases (8 parallel
// acquirers on two client instances, limit 3 -> exactly 3 leases; release on destruction, by
// Release(), by id after Detach(); both policy modes on one lease set), refunds and charges
// (exact round trips on a fixed window, shadow mode, errors that change nothing), penalty blocks
// seen by the remote client, and outages: what Acquire, Refund, Charge and a lease's release do
// when the server is down or stalled (bounded by the timeout, counted), the lease's ttl ending a
// release the server never got, and the local fallback's in-process leases at this instance's
// share.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "remote_limiter_fixture.h"
#include "rl/lease.h"
#include "rl/remote_limiter.h"

namespace rl {
namespace {

using remote_test::ElapsedMs;
using remote_test::kSlackMs;
using remote_test::MakePolicy;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

class RemoteFeaturesTest : public remote_test::RemoteLimiterTest {
 protected:
  // Remaining slots a raw RL.PEEK reports for `key` under policy `name` with `limits` (what one
  // more acquire would leave): another client's view of the server's lease set.
  int64_t PeekRemaining(const std::string& key, const std::string& name,
                        const std::vector<std::string>& limits) {
    std::vector<std::string> args{"RL.PEEK", key, "POLICY", name};
    args.insert(args.end(), limits.begin(), limits.end());
    args.insert(args.end(), {"COST", "0"});
    test::Reply reply = Raw(args);
    EXPECT_EQ(reply.elements.size(), 5u) << reply.str;
    return reply.elements.size() >= 3 ? reply.elements[2].integer : -1;
  }
};

// How a call that could not reach the server fails: refused (Unavailable) or too slow.
bool IsOutage(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

bool IsLeaseId(const std::string& id) {
  return id.size() == 40 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Issue 16's concurrency test, remotely: 8 threads on two instances acquire at once against
// CONCURRENCY 3 -> exactly 3 leases, the 5 others denied with the binding limit's values; the
// lease set is the server's (another client's RL.PEEK sees it); destroying the leases releases
// them (RL.RELEASE from each instance), after which 3 slots are free again.
TEST_F(RemoteFeaturesTest, EightParallelAcquirersOnTwoInstancesGetExactlyThreeLeases) {
  auto a = Connect(milliseconds(2000));
  auto b = Connect(milliseconds(2000));
  const Policy exports = MakePolicy("exports", "CONCURRENCY 3 LEASE 10m FIXED_WINDOW 20 1h");
  std::mutex mu;
  std::vector<Lease> granted;
  std::vector<Decision> denied;
  std::atomic<int> errors{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      absl::StatusOr<Lease> lease = (t % 2 == 0 ? a : b)->Acquire(exports, "tenant:7");
      if (!lease.ok() || lease->decision().decided_by != DecidedBy::kLimiter) {
        ++errors;
        return;
      }
      std::lock_guard<std::mutex> lock(mu);
      if (lease->held()) {
        granted.push_back(*std::move(lease));
      } else {
        denied.push_back(lease->decision());
      }
    });
  }
  go = true;
  for (std::thread& thread : threads) thread.join();
  ASSERT_EQ(errors.load(), 0);
  ASSERT_EQ(granted.size(), 3u);
  ASSERT_EQ(denied.size(), 5u);
  std::set<std::string> ids;
  for (const Lease& lease : granted) {
    EXPECT_TRUE(lease.decision().allowed);
    EXPECT_EQ(lease.decision().limit, 3);
    EXPECT_TRUE(IsLeaseId(lease.id())) << lease.id();
    EXPECT_EQ(lease.key(), "tenant:7");
    ids.insert(lease.id());
  }
  EXPECT_EQ(ids.size(), 3u);
  for (const Decision& d : denied) {
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.limit, 3);
    EXPECT_EQ(d.remaining, 0);
    EXPECT_GT(d.retry_after_ms, 590'000);  // when the soonest lease ends by its 10-minute ttl
  }
  const std::vector<std::string> limits{"CONCURRENCY",  "3",  "LEASE", "10m",
                                        "FIXED_WINDOW", "20", "1h"};
  EXPECT_EQ(PeekRemaining("tenant:7", "exports", limits), 0);
  EXPECT_EQ(a->Stats().acquires + b->Stats().acquires, 8u);

  granted.clear();  // each lease's destructor sends RL.RELEASE on its own instance (no wait)
  // All three free again once the server has the releases.
  int64_t remaining = -1;
  for (const auto until = steady_clock::now() + milliseconds(5000);
       remaining != 2 && steady_clock::now() < until;) {
    remaining = PeekRemaining("tenant:7", "exports", limits);
  }
  EXPECT_EQ(remaining, 2);
  const RemoteLimiterStats sa = a->Stats();
  const RemoteLimiterStats sb = b->Stats();
  EXPECT_EQ(sa.releases + sb.releases, 3u);
  EXPECT_EQ(sa.release_failures + sb.release_failures, 0u);
  absl::StatusOr<Lease> again = b->Acquire(exports, "tenant:7");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->held());
  EXPECT_EQ(again->decision().remaining, 2);
  // 3 + 1 of the 20 per hour are used: denied acquires counted nothing.
  const std::vector<std::string> hourly{"FIXED_WINDOW", "20", "1h"};
  EXPECT_EQ(PeekRemaining("tenant:7", "exports", hourly), 16);
}

// Release(), Detach() + Release by id (from another instance, and of a lease a raw RL.ACQUIRE
// took), moves, bad ids; and a server-policy client shares the inline client's lease set (one
// policy name and key, one set).
TEST_F(RemoteFeaturesTest, ReleaseDetachMoveAndBothPolicyModesShareOneLeaseSet) {
  ASSERT_EQ(Raw({"RL.POLICY", "SET", "jobs", "CONCURRENCY", "2", "LEASE", "1m"}).str, "OK");
  auto inline_client = Connect();
  auto named_client =
      Connect(milliseconds(2000), 2, "", RemoteLimiterOptions::PolicyMode::kServerPolicy);
  const Policy jobs = MakePolicy("jobs", "CONCURRENCY 2 LEASE 1m");
  Policy by_name;
  by_name.name = "jobs";

  absl::StatusOr<Lease> first = inline_client->Acquire(jobs, "k");
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->held());
  absl::StatusOr<Lease> second = named_client->Acquire(by_name, "k");
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(second->held());
  EXPECT_EQ(second->decision().remaining, 0);
  absl::StatusOr<Lease> third = inline_client->Acquire(jobs, "k");
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->held());
  EXPECT_FALSE(third->decision().allowed);
  EXPECT_TRUE(third->id().empty());

  EXPECT_TRUE(first->Release());
  EXPECT_FALSE(first->held());
  EXPECT_FALSE(first->Release());  // holds nothing any more: nothing is sent
  // Detach: the id outlives the object; another instance ends it by id.
  const std::string id = second->Detach();
  EXPECT_FALSE(second->held());
  second = Lease();  // destroying a detached lease sends nothing
  absl::StatusOr<bool> held = inline_client->Release("k", id);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_TRUE(*held);
  held = inline_client->Release("k", id);
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(*held);  // already ended
  EXPECT_EQ(inline_client->Stats().releases, 3u);

  // Moves: the moved-from lease holds nothing; assigning over a held lease releases it first.
  absl::StatusOr<Lease> x = inline_client->Acquire(jobs, "k");
  absl::StatusOr<Lease> y = inline_client->Acquire(jobs, "k");
  ASSERT_TRUE(x.ok() && y.ok() && x->held() && y->held());
  Lease moved = *std::move(x);
  EXPECT_FALSE(x->held());
  EXPECT_TRUE(moved.held());
  moved = *std::move(y);  // x's lease is released here, without waiting for the server
  EXPECT_TRUE(moved.held());
  // The slot x held is free once the server has the release.
  absl::StatusOr<Lease> z;
  for (const auto until = steady_clock::now() + milliseconds(5000); steady_clock::now() < until;) {
    z = named_client->Acquire(by_name, "k");
    if (!z.ok() || z->held()) break;
  }
  ASSERT_TRUE(z.ok());
  EXPECT_TRUE(z->held());
  z->Release();
  moved.Release();

  // A lease a raw RL.ACQUIRE took (a PHP worker), ended by this client by id.
  test::Reply raw = Raw({"RL.ACQUIRE", "k", "POLICY", "jobs"});
  ASSERT_EQ(raw.elements.size(), 6u) << raw.str;
  held = named_client->Release("k", raw.elements[5].str);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_TRUE(*held);
  // Bad ids are the server's errors, not outages, and change nothing.
  absl::StatusOr<Lease> kept = inline_client->Acquire(jobs, "k");
  ASSERT_TRUE(kept.ok() && kept->held());
  held = inline_client->Release("other-key", kept->id());
  EXPECT_TRUE(absl::IsInvalidArgument(held.status())) << held.status();
  held = inline_client->Release("k", "not-a-lease-id");
  EXPECT_TRUE(absl::IsInvalidArgument(held.status())) << held.status();
  EXPECT_EQ(inline_client->Stats().release_failures, 0u);
  EXPECT_TRUE(kept->Release());  // still held: the bad releases changed nothing

  // A check of a CONCURRENCY limit is the request's error (a check takes no lease).
  absl::StatusOr<Decision> check = inline_client->Check(jobs, "k");
  EXPECT_TRUE(absl::IsInvalidArgument(check.status())) << check.status();
}

// Refund and charge round trips, exact on a fixed window, in both modes and on one state with
// Check; shadow mode; errors that change nothing.
TEST_F(RemoteFeaturesTest, RefundAndChargeRoundTrips) {
  ASSERT_EQ(Raw({"RL.POLICY", "SET", "tokens", "FIXED_WINDOW", "100", "1h"}).str, "OK");
  auto limiter = Connect();
  auto named = Connect(milliseconds(2000), 2, "", RemoteLimiterOptions::PolicyMode::kServerPolicy);
  const Policy tokens = MakePolicy("tokens", "FIXED_WINDOW 100 1h");
  Policy by_name;
  by_name.name = "tokens";

  absl::StatusOr<Decision> d = limiter->Check(tokens, "tenant", 30);  // the estimate
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->remaining, 70);
  d = limiter->Refund(tokens, "tenant", 10);  // used 20: give back 10
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->remaining, 80);
  EXPECT_EQ(d->decided_by, DecidedBy::kLimiter);
  d = named->Charge(by_name, "tenant", 50);  // the server's definition, the same state
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->remaining, 30);
  d = limiter->Charge(tokens, "tenant", 40);  // past the limit: into debt
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->remaining, 0);
  EXPECT_GT(d->retry_after_ms, 0);
  d = limiter->Check(tokens, "tenant", 0);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);                    // in debt: even a peek-sized check waits
  d = named->Refund(by_name, "tenant", 1000);  // never above a fresh window
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->remaining, 100);
  EXPECT_EQ(limiter->Stats().refunds, 1u);
  EXPECT_EQ(limiter->Stats().charges, 1u);
  EXPECT_EQ(limiter->Stats().settles_lost, 0u);
  // The raw client sees what the remote limiter left.
  test::Reply peek = Raw({"RL.PEEK", "tenant", "POLICY", "tokens", "COST", "0"});
  ASSERT_EQ(peek.elements.size(), 5u) << peek.str;
  EXPECT_EQ(peek.elements[2].integer, 100);

  // Shadow (inline: the caller's flag): a charge into debt is applied but answered allowed.
  const Policy trial = MakePolicy("trial", "FIXED_WINDOW 10 1h SHADOW");
  d = limiter->Charge(trial, "tenant", 25);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  EXPECT_TRUE(d->shadow_denied);
  d = limiter->Refund(trial, "tenant", 10);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->shadow_denied);  // still 15 of 10: in debt

  // Errors: what the server would refuse (a leaky bucket cannot refund, a lease is released, not
  // refunded, too much, negative) is refused before sending, with the server's (and the local
  // Limiter's) text. None is an outage; none changes state.
  const uint64_t server_errors = limiter->Stats().server_errors;
  d = limiter->Refund(MakePolicy("queue", "LEAKY_BUCKET 10 1m"), "tenant", 1);
  EXPECT_TRUE(absl::IsInvalidArgument(d.status())) << d.status();
  EXPECT_EQ(d.status().message().substr(0, 28), "LEAKY_BUCKET cannot refund: ");
  d = limiter->Charge(MakePolicy("jobs", "CONCURRENCY 3"), "tenant", 1);
  EXPECT_TRUE(absl::IsInvalidArgument(d.status())) << d.status();
  d = limiter->Charge(tokens, "tenant", (int64_t{1} << 40) + 1);
  EXPECT_TRUE(absl::IsInvalidArgument(d.status())) << d.status();
  EXPECT_EQ(d.status().message(), "COST must be at most 1099511627776");
  d = limiter->Refund(tokens, "tenant", -1);
  EXPECT_TRUE(absl::IsInvalidArgument(d.status())) << d.status();
  EXPECT_EQ(limiter->Stats().server_errors, server_errors);  // never sent
  EXPECT_EQ(limiter->Stats().failed_open + limiter->Stats().failed_closed, 0u);
  d = limiter->Check(tokens, "tenant", 0);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->remaining, 100);
}

// "5 logins per 15 minutes, then blocked for an hour", checked remotely: the 6th check starts the
// block and every check after it is denied for the hour, in both modes; a peek shows it; a
// reset lifts it. A rate limit with BLOCK beside a CONCURRENCY limit blocks acquires too.
TEST_F(RemoteFeaturesTest, PenaltyBlockSeenByTheRemoteClient) {
  ASSERT_EQ(Raw({"RL.POLICY", "SET", "login", "FIXED_WINDOW", "5", "15m", "BLOCK", "1h"}).str,
            "OK");
  auto limiter = Connect();
  auto named = Connect(milliseconds(2000), 2, "", RemoteLimiterOptions::PolicyMode::kServerPolicy);
  const Policy login = MakePolicy("login", "FIXED_WINDOW 5 15m BLOCK 1h");
  Policy by_name;
  by_name.name = "login";
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<Decision> d = limiter->Check(login, "alice");
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->allowed) << i;
  }
  for (RemoteLimiter* client : {limiter.get(), named.get(), limiter.get()}) {
    absl::StatusOr<Decision> d =
        client == named.get() ? client->Check(by_name, "alice") : client->Check(login, "alice");
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_FALSE(d->allowed);
    EXPECT_EQ(d->remaining, 0);
    EXPECT_GT(d->retry_after_ms, 3'590'000);  // the hour's block, not the 15-minute window
    EXPECT_LE(d->retry_after_ms, 3'600'000);
  }
  absl::StatusOr<Decision> peek = named->Peek(by_name, "alice");
  ASSERT_TRUE(peek.ok()) << peek.status();
  EXPECT_GT(peek->retry_after_ms, 3'590'000);
  absl::StatusOr<int64_t> reset = limiter->Reset(login, "alice");
  ASSERT_TRUE(reset.ok()) << reset.status();
  absl::StatusOr<Decision> d = named->Check(by_name, "alice");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);

  // Acquire: the hourly limit's denial starts its block; the lease slots are free but the block
  // denies every acquire for the hour.
  const Policy exports = MakePolicy("exp", "CONCURRENCY 3 FIXED_WINDOW 1 1h BLOCK 1h");
  absl::StatusOr<Lease> lease = limiter->Acquire(exports, "bob");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_TRUE(lease->held());
  lease->Release();
  for (int i = 0; i < 2; ++i) {
    lease = limiter->Acquire(exports, "bob");
    ASSERT_TRUE(lease.ok()) << lease.status();
    EXPECT_FALSE(lease->held());
    EXPECT_GT(lease->decision().retry_after_ms, 3'590'000);
  }
}

// The server killed: Acquire is decided by each policy's FailureMode (no fallback configured):
// fail-closed denies, fail-open allows without a lease; refunds and charges never reach the
// server and return that error (no invented decision). A lease held when the
// server died fails to release at once (refused), counted; the restarted server (from its
// snapshot) still holds it, and the lease's ttl ends it. Everything counted and reported.
TEST_F(RemoteFeaturesTest, KilledServerAcquireRefundChargeAndReleaseByFailureMode) {
  const std::string snapshot = (std::filesystem::path(::testing::TempDir()) /
                                ("rl-lease-outage-" + std::to_string(::getpid()) + ".rlsnap"))
                                   .string();
  std::filesystem::remove(snapshot);
  ASSERT_TRUE(StartServer({"--snapshot", snapshot}));
  constexpr milliseconds kTimeout(100);
  auto limiter = Connect(kTimeout);
  const Policy closed = MakePolicy("exports", "CONCURRENCY 3 LEASE 4s FAIL_CLOSED");
  const Policy open = MakePolicy("uploads", "CONCURRENCY 3 LEASE 4s FAIL_OPEN");
  const Policy tokens = MakePolicy("tokens", "FIXED_WINDOW 100 1h FAIL_CLOSED");
  const auto acquired_at = steady_clock::now();
  absl::StatusOr<Lease> held = limiter->Acquire(closed, "k");
  ASSERT_TRUE(held.ok() && held->held()) << held.status();
  ASSERT_TRUE(server_.Terminate(milliseconds(10000)).has_value());  // saves the snapshot

  const auto start = steady_clock::now();
  EXPECT_FALSE(held->Release());  // refused: the server never hears of it
  absl::StatusOr<Lease> denied = limiter->Acquire(closed, "k");
  absl::StatusOr<Lease> allowed = limiter->Acquire(open, "k");
  absl::StatusOr<Decision> refund = limiter->Refund(tokens, "k", 5);
  absl::StatusOr<Decision> charge = limiter->Charge(tokens, "k", 5);
  EXPECT_LE(ElapsedMs(start), 5 * kTimeout.count() + kSlackMs);
  ASSERT_TRUE(denied.ok() && allowed.ok());
  EXPECT_FALSE(denied->decision().allowed);
  EXPECT_EQ(denied->decision().decided_by, DecidedBy::kFailClosed);
  EXPECT_FALSE(denied->held());
  EXPECT_TRUE(allowed->decision().allowed);  // proceed, with nothing to release
  EXPECT_EQ(allowed->decision().decided_by, DecidedBy::kFailOpen);
  EXPECT_FALSE(allowed->held());
  for (const absl::StatusOr<Decision>* d : {&refund, &charge}) {
    EXPECT_TRUE(IsOutage(d->status())) << d->status();
  }
  RemoteLimiterStats stats = limiter->Stats();
  EXPECT_EQ(stats.releases, 1u);
  EXPECT_EQ(stats.release_failures, 1u);
  EXPECT_EQ(stats.failed_closed, 1u);
  EXPECT_EQ(stats.failed_open, 1u);
  EXPECT_EQ(stats.settles_lost, 2u);
  EXPECT_EQ(failures_reported_.load(), 4);  // acquires, refund, charge (not the release)

  // Back from its snapshot: the lease it never heard released is still held, until its ttl.
  ASSERT_TRUE(StartServer({"--snapshot", snapshot}));
  const std::vector<std::string> limits{"CONCURRENCY", "3", "LEASE", "4s"};
  const int64_t right_after = PeekRemaining("k", "exports", limits);
  // (Unless the machine was so slow that the 4 s had passed already.)
  if (ElapsedMs(acquired_at) < 3000) {
    EXPECT_EQ(right_after, 1) << "the lease did not survive the restart";
  }
  const auto deadline = steady_clock::now() + milliseconds(10000);
  while (PeekRemaining("k", "exports", limits) != 2 && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(PeekRemaining("k", "exports", limits), 2) << "the ttl did not end the lease";
  ASSERT_TRUE(WaitForRecovery(*limiter, milliseconds(5000)));
  absl::StatusOr<Lease> back = limiter->Acquire(closed, "k");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->decision().decided_by, DecidedBy::kLimiter);
  EXPECT_TRUE(back->held());
  std::filesystem::remove(snapshot);
}

// A stalled server (SIGSTOP): destroying a lease does not wait for it (the release is sent and
// counted as failed once the timeout passes), and an acquire waits at most the timeout.
TEST_F(RemoteFeaturesTest, StalledServerDoesNotHoldUpReleaseOnDestruction) {
  constexpr milliseconds kTimeout(60);
  auto limiter = Connect(kTimeout, 1);
  const Policy jobs = MakePolicy("jobs", "CONCURRENCY 3 LEASE 1m FAIL_CLOSED");
  absl::StatusOr<Lease> lease = limiter->Acquire(jobs, "k");
  ASSERT_TRUE(lease.ok() && lease->held()) << lease.status();
  ASSERT_TRUE(server_.Stop());
  auto start = steady_clock::now();
  lease = absl::StatusOr<Lease>(Lease());  // the held lease is destroyed: RL.RELEASE, unanswered
  const int64_t release_ms = ElapsedMs(start);  // sent, not waited for
  clock_.Advance(kBackoffMs);  // past the back-off: the acquire tries the server again
  start = steady_clock::now();
  absl::StatusOr<Lease> denied = limiter->Acquire(jobs, "k");
  const int64_t acquire_ms = ElapsedMs(start);
  std::printf(
      "stalled rl-server, %lld ms timeout: release on destruction %lld ms, acquire %lld ms\n",
      static_cast<long long>(kTimeout.count()), static_cast<long long>(release_ms),
      static_cast<long long>(acquire_ms));
  EXPECT_LT(release_ms, kTimeout.count());
  EXPECT_LE(acquire_ms, kTimeout.count() + kSlackMs);
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->decision().decided_by, DecidedBy::kFailClosed);
  // The unanswered release is counted once its timeout has passed, on the I/O thread.
  for (const auto until = steady_clock::now() + milliseconds(5000);
       limiter->Stats().release_failures == 0 && steady_clock::now() < until;) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(limiter->Stats().release_failures, 1u);
  server_.Signal(SIGCONT);
  ASSERT_TRUE(WaitForRecovery(*limiter, milliseconds(5000)));
}

// With a fallback for 2 instances and the server down: Acquire takes an in-process lease of this
// instance's share (CONCURRENCY 3 / 2 = 1 slot; FIXED_WINDOW 20 / 2 = 10), denies past it with
// real values, and releases locally (nothing is sent); a detached fallback lease is released by
// id. Refunds and charges are errors, and leave the share's local state alone. Once the server
// answers, it decides again.
TEST_F(RemoteFeaturesTest, FallbackAcquiresInProcessLeasesAtTheShare) {
  fallback_instances_ = 2;
  auto limiter = Connect();
  const Policy exports =
      MakePolicy("exports", "CONCURRENCY 3 LEASE 1m FIXED_WINDOW 20 1h FAIL_CLOSED");
  const Policy tokens = MakePolicy("tokens", "FIXED_WINDOW 100 1h FAIL_CLOSED");
  server_.Kill();

  absl::StatusOr<Lease> first = limiter->Acquire(exports, "k");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->held());
  EXPECT_EQ(first->decision().decided_by, DecidedBy::kFallback);
  EXPECT_EQ(first->decision().limit, 1);  // this instance's one slot
  EXPECT_EQ(first->decision().remaining, 0);
  absl::StatusOr<Lease> second = limiter->Acquire(exports, "k");
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->held());
  EXPECT_FALSE(second->decision().allowed);
  EXPECT_EQ(second->decision().decided_by, DecidedBy::kFallback);
  EXPECT_GT(second->decision().retry_after_ms, 0);
  EXPECT_TRUE(first->Release());  // the local limiter's lease: released in-process
  absl::StatusOr<Lease> third = limiter->Acquire(exports, "k");
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->held());
  const std::string id = third->Detach();
  absl::StatusOr<bool> released = limiter->Release("k", id);
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_TRUE(*released);
  RemoteLimiterStats stats = limiter->Stats();
  EXPECT_EQ(stats.fallback_allowed, 2u);
  EXPECT_EQ(stats.fallback_denied, 1u);
  EXPECT_EQ(stats.failed_open + stats.failed_closed, 0u);
  EXPECT_EQ(stats.releases, 0u);  // never sent: the server never knew of these leases
  EXPECT_EQ(stats.release_failures, 0u);

  absl::StatusOr<Decision> d = limiter->Check(tokens, "k", 30);  // share: 50 per hour
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->decided_by, DecidedBy::kFallback);
  EXPECT_EQ(d->remaining, 20);
  d = limiter->Charge(tokens, "k", 25);
  EXPECT_TRUE(IsOutage(d.status())) << d.status();
  d = limiter->Refund(tokens, "k", 20);
  EXPECT_TRUE(IsOutage(d.status())) << d.status();
  EXPECT_EQ(limiter->Stats().settles_lost, 2u);
  d = limiter->Check(tokens, "k", 0);  // neither touched the fallback's count
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->decided_by, DecidedBy::kFallback);
  EXPECT_EQ(d->remaining, 20);

  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(WaitForRecovery(*limiter, milliseconds(5000)));
  absl::StatusOr<Lease> back = limiter->Acquire(exports, "k");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->decision().decided_by, DecidedBy::kLimiter);
  EXPECT_EQ(back->decision().limit, 3);
  EXPECT_TRUE(back->held());
  EXPECT_TRUE(back->Release());
}

// Issue 16's expiry of abandoned leases, remotely: a holder that detaches its lease (a crashed
// worker) keeps the slot until the LEASE ttl, then the server frees it by itself; releasing the
// expired id afterwards answers false (it had ended), not an error.
TEST_F(RemoteFeaturesTest, AbandonedLeaseEndsByItsTtl) {
  auto limiter = Connect(milliseconds(2000));
  const Policy jobs = MakePolicy("jobs", "CONCURRENCY 1 LEASE 1s");
  absl::StatusOr<Lease> lease = limiter->Acquire(jobs, "k");
  ASSERT_TRUE(lease.ok() && lease->held()) << lease.status();
  const auto acquired_at = steady_clock::now();
  const std::string id = lease->Detach();  // abandoned: nothing will release it
  lease = absl::StatusOr<Lease>(Lease());
  absl::StatusOr<Lease> busy = limiter->Acquire(jobs, "k");
  ASSERT_TRUE(busy.ok());
  if (ElapsedMs(acquired_at) < 900) {  // (unless the machine was too slow to tell)
    EXPECT_FALSE(busy->decision().allowed) << "the abandoned lease did not hold its slot";
    EXPECT_GT(busy->decision().retry_after_ms, 0);
    EXPECT_LE(busy->decision().retry_after_ms, 1000);
  }
  // Real time: the server's clock. Bounded polling, generous for a loaded machine.
  const auto deadline = steady_clock::now() + milliseconds(10000);
  absl::StatusOr<Lease> next = limiter->Acquire(jobs, "k");
  while (next.ok() && !next->held() && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
    next = limiter->Acquire(jobs, "k");
  }
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_TRUE(next->held()) << "the ttl did not free the abandoned slot";
  EXPECT_GE(ElapsedMs(acquired_at), 900);
  absl::StatusOr<bool> held = limiter->Release("k", id);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_FALSE(*held);  // it had ended by its ttl
  EXPECT_TRUE(next->Release());
}

// Bad input is the request's clear error, never an outage and never a change: negative and huge
// amounts, a negative cost, ids no server issued (empty, too long, garbage, 40 hex digits of no
// lease, another key's), an acquire without a CONCURRENCY limit. (A huge acquire cost is what a
// check of it is: a denial that can never be allowed, retry_after_ms = -1, and no lease.)
TEST_F(RemoteFeaturesTest, BadInputIsAClearErrorAndChangesNothing) {
  auto limiter = Connect();
  const Policy jobs = MakePolicy("jobs", "CONCURRENCY 2 LEASE 1m FIXED_WINDOW 100 1h");
  const Policy tokens = MakePolicy("tokens", "FIXED_WINDOW 100 1h");
  const int64_t huge = (int64_t{1} << 40) + 1;
  for (int64_t amount : {int64_t{-1}, int64_t{-5'000'000'000}, huge, INT64_MAX}) {
    absl::StatusOr<Decision> d = limiter->Refund(tokens, "k", amount);
    EXPECT_TRUE(absl::IsInvalidArgument(d.status())) << amount << " " << d.status();
    d = limiter->Charge(tokens, "k", amount);
    EXPECT_TRUE(absl::IsInvalidArgument(d.status())) << amount << " " << d.status();
    absl::StatusOr<Lease> lease = limiter->Acquire(jobs, "k", amount);
    if (amount < 0) {
      EXPECT_TRUE(absl::IsInvalidArgument(lease.status())) << amount << " " << lease.status();
    } else {
      ASSERT_TRUE(lease.ok()) << lease.status();
      EXPECT_FALSE(lease->decision().allowed);
      EXPECT_EQ(lease->decision().retry_after_ms, -1);
      EXPECT_FALSE(lease->held());
    }
  }
  absl::StatusOr<Lease> no_slots = limiter->Acquire(tokens, "k");
  EXPECT_TRUE(absl::IsInvalidArgument(no_slots.status())) << no_slots.status();

  absl::StatusOr<Lease> kept = limiter->Acquire(jobs, "k");
  ASSERT_TRUE(kept.ok() && kept->held()) << kept.status();
  for (const std::string& id :
       {std::string(), std::string(129, 'a'), std::string("not-a-lease-id"), std::string(40, '0'),
        std::string("0123456789abcdef0123456789abcdef01234567"), std::string("bad\r\nid"),
        kept->id().substr(0, 39)}) {
    absl::StatusOr<bool> held = limiter->Release("k", id);
    EXPECT_TRUE(absl::IsInvalidArgument(held.status())) << "'" << id << "' " << held.status();
  }
  absl::StatusOr<bool> other = limiter->Release("other-key", kept->id());
  EXPECT_TRUE(absl::IsInvalidArgument(other.status())) << other.status();

  const RemoteLimiterStats stats = limiter->Stats();
  EXPECT_EQ(stats.failed_open + stats.failed_closed + stats.settles_lost + stats.release_failures,
            0u);
  EXPECT_EQ(failures_reported_.load(), 0);
  // Nothing changed: the held lease is still held (one slot left), the windows are untouched
  // (the one acquire that was granted took 1 of the 100 per hour).
  absl::StatusOr<Decision> d = limiter->Check(tokens, "k", 0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->remaining, 100);
  absl::StatusOr<Lease> second = limiter->Acquire(jobs, "k");
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->held());
  EXPECT_EQ(second->decision().remaining, 0);  // the slots bind: 0 of 2 left
  d = limiter->Peek(MakePolicy("jobs", "FIXED_WINDOW 100 1h"), "k", 0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->remaining, 98);
  EXPECT_TRUE(kept->Release());
}

// The shared interface: code written against rl::RateLimiter takes a lease and settles a cost the
// same way on the in-process engine and on the remote limiter.
TEST_F(RemoteFeaturesTest, RateLimiterInterfaceIsTheSameForBothBackEnds) {
  Limiter engine(LimiterOptions{.sweep_interval_ms = 0});
  LocalRateLimiter local(&engine);
  auto remote = Connect();
  const Policy exports = MakePolicy("exports", "CONCURRENCY 1 FIXED_WINDOW 10 1h");
  for (RateLimiter* limiter :
       {static_cast<RateLimiter*>(&local), static_cast<RateLimiter*>(remote.get())}) {
    {
      absl::StatusOr<Lease> lease = limiter->Acquire(exports, "t");
      ASSERT_TRUE(lease.ok()) << lease.status();
      EXPECT_TRUE(lease->decision().allowed);
      absl::StatusOr<Lease> busy = limiter->Acquire(exports, "t");
      ASSERT_TRUE(busy.ok());
      EXPECT_FALSE(busy->decision().allowed);
      const std::string id = lease->Detach();
      absl::StatusOr<bool> held = limiter->Release("t", id);
      ASSERT_TRUE(held.ok()) << held.status();
      EXPECT_TRUE(*held);
    }
    const Policy tokens = MakePolicy("tokens", "FIXED_WINDOW 10 1h");
    absl::StatusOr<Decision> d = limiter->Check(tokens, "t", 4);
    ASSERT_TRUE(d.ok());
    d = limiter->Charge(tokens, "t", 2);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->remaining, 4);
    d = limiter->Refund(tokens, "t", 3);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->remaining, 7);
  }
}

}  // namespace
}  // namespace rl

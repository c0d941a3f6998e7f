// rl::RemoteLimiter's asynchronous calls against the real rl-server: AsyncCheck, AsyncCheckMany
// and AsyncAcquire answer as their synchronous forms do; with the server stopped they return at
// once and call back exactly once, at the deadline, with the failure mode's decision; and a
// lease's destructor does not wait for the server.
#include <signal.h>

#include <atomic>
#include <future>
#include <string>
#include <vector>

#include "remote_limiter_fixture.h"

namespace rl::remote_test {
namespace {

absl::StatusOr<Decision> CheckAndWait(RemoteLimiter& limiter, const Policy& policy,
                                      const std::string& key) {
  std::promise<absl::StatusOr<Decision>> answered;
  limiter.AsyncCheck(policy, key, 1,
                     [&answered](absl::StatusOr<Decision> d) { answered.set_value(std::move(d)); });
  return answered.get_future().get();
}

absl::StatusOr<Lease> AcquireAndWait(RemoteLimiter& limiter, const Policy& policy,
                                     const std::string& key) {
  std::promise<absl::StatusOr<Lease>> answered;
  limiter.AsyncAcquire(policy, key, 1,
                       [&answered](absl::StatusOr<Lease> l) { answered.set_value(std::move(l)); });
  return answered.get_future().get();
}

TEST_F(RemoteLimiterTest, AsyncCallsAnswerAsTheSynchronousOnesDo) {
  auto limiter = Connect(milliseconds(1000));
  const Policy reads = MakePolicy("reads", "SLIDING_LOG 3 1m");
  for (int i = 1; i <= 3; ++i) {
    absl::StatusOr<Decision> d = CheckAndWait(*limiter, reads, "k");
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->allowed);
    EXPECT_EQ(d->decided_by, DecidedBy::kLimiter);
    EXPECT_EQ(d->remaining, 3 - i);
  }
  // The same state as the synchronous call's.
  absl::StatusOr<Decision> sync = limiter->Check(reads, "k");
  ASSERT_TRUE(sync.ok());
  EXPECT_FALSE(sync->allowed);

  std::promise<std::vector<absl::StatusOr<Decision>>> many;
  const std::string other = "other";  // the key is copied: this one may go before the answer
  const RemoteLimiter::Request requests[] = {{&reads, "k"}, {&reads, other}, {&reads, "x", -1}};
  limiter->AsyncCheckMany(requests, [&many](std::vector<absl::StatusOr<Decision>> results) {
    many.set_value(std::move(results));
  });
  std::vector<absl::StatusOr<Decision>> results = many.get_future().get();
  ASSERT_EQ(results.size(), 3u);
  ASSERT_TRUE(results[0].ok() && results[1].ok());
  EXPECT_FALSE(results[0]->allowed);
  EXPECT_TRUE(results[1]->allowed);
  EXPECT_FALSE(results[2].ok());  // a negative cost is refused without asking

  const Policy reports = MakePolicy("reports", "CONCURRENCY 1 LEASE 1m");
  absl::StatusOr<Lease> first = AcquireAndWait(*limiter, reports, "c");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->held());
  absl::StatusOr<Lease> second = AcquireAndWait(*limiter, reports, "c");
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->decision().allowed);
  *first = Lease();  // released without waiting; the server frees the slot soon after
  const auto deadline = steady_clock::now() + milliseconds(5000);
  bool reacquired = false;
  while (!reacquired && steady_clock::now() < deadline) {
    absl::StatusOr<Lease> again = AcquireAndWait(*limiter, reports, "c");
    reacquired = again.ok() && again->held();
  }
  EXPECT_TRUE(reacquired);
  EXPECT_GE(limiter->Stats().releases, 1u);
}

TEST_F(RemoteLimiterTest, StoppedServerAsyncCallsReturnAtOnceAndAnswerAtTheDeadline) {
  constexpr milliseconds kTimeout(100);
  auto limiter = Connect(kTimeout, 2);
  const Policy open = MakePolicy("reads", "SLIDING_LOG 100 1m FAIL_OPEN");
  const Policy closed = MakePolicy("exports", "SLIDING_LOG 100 1m FAIL_CLOSED");
  const Policy reports = MakePolicy("reports", "CONCURRENCY 3 LEASE 1m");
  ASSERT_TRUE(limiter->Check(open, "k").ok());
  absl::StatusOr<Lease> lease = limiter->Acquire(reports, "r");
  ASSERT_TRUE(lease.ok() && lease->held());

  ASSERT_TRUE(server_.Stop());  // accepts in the kernel, never answers
  constexpr int kCalls = 40;
  std::atomic<int> answered{0};
  std::atomic<int> wrong{0};
  std::atomic<int64_t> slowest_ms{0};
  std::promise<void> all;
  const auto start = steady_clock::now();
  for (int i = 0; i < kCalls; ++i) {
    const Policy& policy = i % 2 == 0 ? open : closed;
    limiter->AsyncCheck(policy, "k" + std::to_string(i), 1, [&, i](absl::StatusOr<Decision> d) {
      const DecidedBy want = i % 2 == 0 ? DecidedBy::kFailOpen : DecidedBy::kFailClosed;
      if (!d.ok() || d->decided_by != want) ++wrong;
      const int64_t took = ElapsedMs(start);
      int64_t seen = slowest_ms.load();
      while (took > seen && !slowest_ms.compare_exchange_weak(seen, took)) {
      }
      if (answered.fetch_add(1) + 1 == kCalls) all.set_value();
    });
  }
  // Issuing waited for nothing: far less than one timeout for all forty.
  const int64_t issued_ms = ElapsedMs(start);
  // A lease's destructor does not wait for the stopped server either.
  const auto destroy = steady_clock::now();
  *lease = Lease();
  const int64_t destroyed_ms = ElapsedMs(destroy);
  ASSERT_EQ(all.get_future().wait_for(milliseconds(kTimeout.count() + 5000)),
            std::future_status::ready);
  EXPECT_EQ(answered.load(), kCalls);  // exactly once each (a second would overshoot)
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LT(issued_ms, kTimeout.count() / 2);
  EXPECT_LT(destroyed_ms, kTimeout.count() / 2);
  EXPECT_LE(slowest_ms.load(), kTimeout.count() + kSlackMs);
  std::printf(
      "stopped rl-server: 40 async checks issued in %lld ms, all answered by %lld ms, "
      "lease destroyed in %lld ms\n",
      static_cast<long long>(issued_ms), static_cast<long long>(slowest_ms.load()),
      static_cast<long long>(destroyed_ms));
  server_.Signal(SIGCONT);
  ASSERT_TRUE(WaitForRecovery(*limiter, milliseconds(3000)));
  absl::StatusOr<Decision> d = CheckAndWait(*limiter, closed, "k");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->decided_by, DecidedBy::kLimiter);
}

}  // namespace
}  // namespace rl::remote_test

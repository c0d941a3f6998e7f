// Stress test of the shard lock (ShardMutex): many threads on two mutexes, each critical section
// checking that it is alone (an owner word claimed and released under the lock) and bumping a
// plain counter that only the lock protects. A lock that lets two threads in fails the owner
// check or loses counts; one that loses a wake-up leaves a waiter parked for good, which the
// watchdog turns into a failure (the test ends by itself: it aborts with the counts so far).
// Critical sections that sometimes yield the CPU make waiters park, not only spin, so the
// futex path and its wake-ups are exercised on every run, also on an idle machine.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "store.h"

namespace rl::internal {
namespace {

constexpr int kThreads = 8;
constexpr int kMutexes = 2;
constexpr int kRounds = 20000;  // per thread
// A lost wake-up hangs forever; a correct run takes about a second (ASan included) on a loaded
// 2-core machine. The watchdog waits for the workers' completion, this long at most.
constexpr auto kDeadline = std::chrono::seconds(60);

struct alignas(64) Guarded {
  ShardMutex mu;
  std::atomic<int> owner{-1};  // the thread inside, -1 when none
  int64_t count ABSL_GUARDED_BY(mu) = 0;
};

// Counts finished workers; the watchdog waits for all of them.
class Done {
 public:
  void Add() {
    std::lock_guard<std::mutex> lock(mu_);
    ++n_;
    cv_.notify_all();
  }
  bool WaitFor(int n, std::chrono::steady_clock::duration limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return n_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_ = 0;
};

TEST(ShardMutexTest, ManyThreadsFewLocksExcludeAndNeverHang) {
  Guarded locks[kMutexes];
  std::atomic<int64_t> overlaps{0};
  std::atomic<int64_t> progress{0};
  Done done;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t x = 0x9E3779B97F4A7C15ull * (t + 1);
      for (int i = 0; i < kRounds; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Guarded& g = locks[x % kMutexes];
        g.mu.lock();
        if (g.owner.exchange(t, std::memory_order_relaxed) != -1) overlaps.fetch_add(1);
        ++g.count;
        // Now and then hold the lock across a reschedule, so the others run out of spins and
        // park: that is where a lost wake-up would show.
        if ((x & 63) == 0) sched_yield();
        if (g.owner.exchange(-1, std::memory_order_relaxed) != t) overlaps.fetch_add(1);
        g.mu.unlock();
        progress.fetch_add(1, std::memory_order_relaxed);
      }
      done.Add();
    });
  }
  if (!done.WaitFor(kThreads, kDeadline)) {
    // Threads parked for good cannot be joined: report and end the process.
    std::fprintf(stderr,
                 "ShardMutex stress: %lld of %d lock rounds done after the deadline "
                 "(a lost wake-up leaves waiters parked)\n",
                 static_cast<long long>(progress.load()), kThreads * kRounds);
    std::abort();
  }
  for (auto& th : threads) th.join();
  int64_t total = 0;
  for (Guarded& g : locks) {
    g.mu.lock();
    total += g.count;
    g.mu.unlock();
  }
  EXPECT_EQ(overlaps.load(), 0) << "two threads were inside one lock at once";
  EXPECT_EQ(total, int64_t{kThreads} * kRounds) << "increments made under the lock were lost";
}

// Ownership passes between threads through the lock alone: what one thread wrote before
// unlock, the next one to lock sees (the acquire/release pairing, also on the parking path).
TEST(ShardMutexTest, HandoffPublishesWrites) {
  Guarded g;
  constexpr int kHandoffs = 20000;
  int64_t seen_by[2] = {0, 0};
  Done done;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      // Each thread bumps the count only on its parity, so they alternate through the lock.
      while (true) {
        g.mu.lock();
        const int64_t c = g.count;
        if (c >= kHandoffs) {
          g.mu.unlock();
          break;
        }
        if (c % 2 == t) {
          g.count = c + 1;
          ++seen_by[t];
        }
        g.mu.unlock();
        if (c % 2 != t) sched_yield();
      }
      done.Add();
    });
  }
  if (!done.WaitFor(2, kDeadline)) {
    std::fprintf(stderr, "ShardMutex handoff: stuck after the deadline\n");
    std::abort();
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(seen_by[0] + seen_by[1], kHandoffs);
  EXPECT_EQ(seen_by[0], kHandoffs / 2);
}

}  // namespace
}  // namespace rl::internal

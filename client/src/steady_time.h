// Deadlines and timed waits of the client on the steady clock. This Debian abseil times
// absl::Mutex::AwaitWithTimeout / AwaitWithDeadline on the wall clock (CLOCK_REALTIME, an
// absolute futex deadline), and absl::Now() is the wall clock: a step of the wall clock back while
// a caller waits (an NTP step, a VM resumed from a snapshot) would stretch the wait by the step,
// so a check behind a server that does not answer would hang for an hour instead of timing out,
// and a step forward would time calls out at once. Every deadline of a call, a connect or a
// topology refresh is a Deadline, and every timed wait goes through SteadyMutex.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace rl::client_internal {

using Deadline = std::chrono::steady_clock::time_point;

inline Deadline SteadyNow() { return std::chrono::steady_clock::now(); }

// `d` from now; a duration too long to add (absl::InfiniteDuration()) is a year.
inline Deadline DeadlineAfter(absl::Duration d) {
  return SteadyNow() +
         absl::ToChronoNanoseconds(std::clamp(d, absl::ZeroDuration(), absl::Hours(24 * 365)));
}

// What is left until `deadline`, never negative.
inline absl::Duration Left(Deadline deadline) {
  return std::max(absl::FromChrono(deadline - SteadyNow()), absl::ZeroDuration());
}

// A mutex whose waits run on the steady clock, annotated as absl::Mutex is so the analysis keeps
// checking what it guards. Every unlock wakes the waiters, which test their predicate again:
// absl::Mutex's Conditions, without naming them at the unlock.
class ABSL_LOCKABLE SteadyMutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    mu_.unlock();
    cv_.notify_all();
  }
  // With the lock held: until `ready()` holds.
  template <class Ready>
  void Await(Ready ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    cv_.wait(lock, std::move(ready));
    lock.release();
  }
  // With the lock held: until `ready()` holds or `deadline` passes; returns `ready()`.
  template <class Ready>
  bool AwaitUntil(Ready ready, Deadline deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    const bool met = cv_.wait_until(lock, deadline, std::move(ready));
    lock.release();
    return met;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

class ABSL_SCOPED_LOCKABLE SteadyLock {
 public:
  explicit SteadyLock(SteadyMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~SteadyLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  SteadyLock(const SteadyLock&) = delete;
  SteadyLock& operator=(const SteadyLock&) = delete;

 private:
  SteadyMutex* const mu_;
};

}  // namespace rl::client_internal

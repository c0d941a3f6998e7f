// The canary of tools/check-thread-safety --self-test (ctest thread_safety_live): compiled with
// the pass's own flags, the RL_CANARY_WRONG=1 build must be rejected on every line marked
// "flagged" and the RL_CANARY_WRONG=0 build must pass, so the pass cannot quietly check nothing
// (a flag dropped, a clang without the analysis, annotations that expand to nothing). It covers
// the lock types rl uses: absl::Mutex and the engine's ShardMutex behind ShardLock. Never linked.
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "store.h"

namespace rl_canary {

class Counter {
 public:
  void Add() {
#if RL_CANARY_WRONG
    ++n_;  // flagged: written without mu_
#else
    absl::MutexLock lock(&mu_);
    ++n_;
#endif
  }
  int AddLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ++n_; }
  int Twice() {
#if RL_CANARY_WRONG
    return AddLocked();  // flagged: needs mu_
#else
    absl::MutexLock lock(&mu_);
    return AddLocked();
#endif
  }

 private:
  absl::Mutex mu_;
  int n_ ABSL_GUARDED_BY(mu_) = 0;
};

size_t ShardSize(rl::internal::Shard& shard) {
#if RL_CANARY_WRONG
  return shard.two.size();  // flagged: read without the shard's lock
#else
  rl::internal::ShardLock lock(shard.mu);
  return shard.two.size();
#endif
}

}  // namespace rl_canary

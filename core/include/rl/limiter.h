// The in-process rate limiter: a lock-sharded store of per-key algorithm state. Thread-safe;
// every check is one atomic read-modify-write over all the limits it names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rl/clock.h"
#include "rl/decision.h"
#include "rl/lease.h"
#include "rl/limit.h"

namespace rl {

struct LimiterOptions {
  // 0 = automatic (from max_keys: one shard per 4096 keys, 256 at most; a service with many
  // threads wants more, see ShardsForThreads); rounded up to a power of two.
  size_t shards = 0;
  size_t max_keys = 0;          // 0 = default (large enough for at least 10 M keys)
  size_t max_memory_bytes = 0;  // 0 = no byte bound beyond max_keys
  // What a check does with a new state (a key seen for the first time under a limit) when the
  // store is at max_keys or max_memory_bytes and nothing can be evicted safely. Eviction takes
  // expired states first, then states that had used at most a quarter of their allowance when
  // last written (least used first, then soonest to expire); a state that has used more, one at
  // its limit included, is never evicted, since dropping it would hand its key a fresh allowance
  // (see docs/operations.md). The new state is then not stored, Decision::overflow is set and
  // LimiterStats::overflows counts the check.
  //  - kFailOpen: decided as for a fresh key (allowed unless the cost exceeds the limit, with the
  //    remaining and reset a first call reports), but nothing is counted for the unstored states;
  //    states the check found are updated as usual. Nothing that was limited before is freed:
  //    only keys that are new while the store is full go uncounted.
  //  - kFailClosed: denied, consuming nothing (all or nothing); each limit whose state could not
  //    be stored reports remaining 0 and retry_after_ms = reset_after_ms = the time until the
  //    soonest protected state of its shard expires (at least 1 ms): a hint, not a promise.
  FailureMode overflow = FailureMode::kFailOpen;
  int64_t sweep_interval_ms = 1000;  // background removal of expired state; 0 = no thread
  Clock* clock = nullptr;            // not owned; null = SteadyClock::Default()
  // An existing key checked often under one GCRA or token-bucket limit (no BLOCK) is checked
  // without its shard's lock, by a compare-and-swap (on one word for GCRA, on a 16-byte pair for
  // the token bucket, x86-64 only): the same decisions as the locked path, and two threads on one
  // key do not queue on a lock. Off: every check takes the lock (tests compare the two).
  bool hot_keys = true;
};

struct LimiterStats {
  uint64_t keys = 0;          // live states
  uint64_t memory_bytes = 0;  // estimated bytes held by states and tables
  uint64_t evictions = 0;     // states dropped because a bound was reached
  uint64_t expired = 0;       // states dropped because they became equivalent to fresh
  uint64_t overflows = 0;     // checks whose new state was not stored (LimiterOptions::overflow)
  uint64_t blocks = 0;        // running penalty blocks (counted in `keys` too)
  uint64_t lease_sets = 0;    // CONCURRENCY limits holding leases (counted in `keys` too)
  // The bound on `keys` in force: LimiterOptions::max_keys, or its default when that is 0, or
  // less when max_memory_bytes allows less (the shards' bounds added up).
  uint64_t max_keys = 0;
  uint64_t shards = 0;  // the shard count in force
};

// A shard count for a store checked by `threads` threads at once: 64 shards per thread, 256 at
// least, so a check finds its shard held by another thread rarely (about (threads - 1) / shards
// of the time a lock is held), but at most one per 256 keys of `max_keys`, so each shard's share
// of the bound stays large enough to evict within (0 = LimiterOptions' default bound).
size_t ShardsForThreads(size_t threads, size_t max_keys);

class Limiter final : public LeaseIssuer {
 public:
  explicit Limiter(LimiterOptions options = {});
  ~Limiter() override;
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;

  // Checks every limit for (scope, key) and, only when all allow, consumes `cost` from each: all
  // or nothing. `scope` separates namespaces (a policy name; "" for inline limits), and each limit
  // has its own state under (scope, key, algorithm, window). cost 0 peeks; cost < 0 is an error;
  // cost above a limit's capacity is denied with retry_after_ms = kRetryNever and changes nothing.
  absl::StatusOr<Decision> Check(std::string_view scope, std::string_view key,
                                 absl::Span<const Limit> limits, int64_t cost = 1);
  // A policy's limits under the policy's name. A shadow policy never denies: a check its limits
  // deny is allowed with Decision::shadow_denied set and consumes nothing.
  absl::StatusOr<Decision> Check(const Policy& policy, std::string_view key, int64_t cost = 1);
  // A hint, never a change: starts loading the table lines a check of (scope, key, limits) will
  // read (at most its first two limits), so a caller holding several checks at once (rl-server
  // with a pipeline in its read buffer) overlaps their cache misses instead of taking them one
  // after another. Takes each shard's lock for a moment (another thread may be growing the table)
  // and does nothing for limits it cannot place (CONCURRENCY) or that are not valid.
  void Prefetch(std::string_view scope, std::string_view key, absl::Span<const Limit> limits);
  // A limit with BLOCK (Limit::block_ms) that denies a check starts a penalty block: every check
  // of it is then denied for block_ms, with retry_after_ms = what is left (see step.h). A
  // CONCURRENCY limit is refused here: it takes leases (Acquire).

  // What Check would answer, changing nothing. A CONCURRENCY limit may be among the limits: its
  // result is what Acquire would answer for it (remaining = slots left after one more lease).
  absl::StatusOr<Decision> Peek(std::string_view scope, std::string_view key,
                                absl::Span<const Limit> limits, int64_t cost = 1);
  absl::StatusOr<Decision> Peek(const Policy& policy, std::string_view key, int64_t cost = 1);
  // Moves the key's states under the old windows of a changed policy (Policy::carried_from) to
  // its new ones, keeping the share of the allowance used: a key at its limit stays at it. The
  // policy overloads of Check, Acquire, Refund and Charge do this first; a caller that checks a
  // policy's limits under its name by hand calls it before. Peek does not (it changes nothing),
  // so a peek between a window change and the key's next check shows the new window fresh.
  void CarryOver(const Policy& policy, std::string_view key);
  // Removes the states of these limits for (scope, key), their penalty blocks and, for a
  // CONCURRENCY limit, every lease; returns how many limits had something to remove.
  size_t Reset(std::string_view scope, std::string_view key, absl::Span<const Limit> limits);
  size_t Reset(const Policy& policy, std::string_view key);

  // Settle-later costs. Refund gives back up to `amount` units to every limit (never above what
  // a fresh state holds: a full bucket, an empty window; a sliding log drops its newest
  // requests); Charge takes `amount` from every limit even when that overdraws it: the state
  // goes into debt, and later checks (cost 0 included) are denied until the refill has repaid it,
  // with retry_after_ms counting the repayment. Both always apply, to all limits; the answer is
  // what a check of cost 0 would get right after (allowed = false: in debt or blocked). Errors:
  // amount < 0 or > kMaxLimit, a CONCURRENCY limit, a refund to a LEAKY_BUCKET (its callers
  // were already told when to proceed); nothing changes then. A shadow policy's answer is
  // allowed (with shadow_denied), but the refund or charge applies.
  absl::StatusOr<Decision> Refund(std::string_view scope, std::string_view key,
                                  absl::Span<const Limit> limits, int64_t amount);
  absl::StatusOr<Decision> Refund(const Policy& policy, std::string_view key, int64_t amount);
  absl::StatusOr<Decision> Charge(std::string_view scope, std::string_view key,
                                  absl::Span<const Limit> limits, int64_t amount);
  absl::StatusOr<Decision> Charge(const Policy& policy, std::string_view key, int64_t amount);
  // A check that may queue (RL.CHECK ... MAXWAIT): when a check of `amount` would pass now or
  // within `max_wait_ms` (>= 0) — a wait only on bucket limits (TOKEN_BUCKET, GCRA,
  // LEAKY_BUCKET), whose debt counts the caller when it proceeds; a window limit must allow now —
  // `amount` is charged (into debt when it must wait) and the answer
  // is allowed, with retry_after_ms = how long the caller waits before it proceeds (0: at once),
  // limit, remaining and reset_after_ms as right after the charge. Otherwise nothing changes and
  // the answer is that check's denial (retry_after_ms > max_wait_ms, or -1). Decided in one
  // atomic step; a denial starts no penalty block. The limits are those a charge takes.
  absl::StatusOr<Decision> ChargeWithin(std::string_view scope, std::string_view key,
                                        absl::Span<const Limit> limits, int64_t amount,
                                        int64_t max_wait_ms);

  // Concurrency leases. `limits` holds exactly one CONCURRENCY limit (at most LIMIT leases held at
  // once, each ending after its ttl unless released sooner) and any rate limits, checked all or
  // nothing: a lease is granted, and `cost` consumed from the rate limits, only when every limit
  // allows ("at most 3 exports at once and 20 per hour"). A denied acquire holds nothing and
  // changes nothing. The Lease releases itself when destroyed; this Limiter must outlive it.
  absl::StatusOr<Lease> Acquire(std::string_view scope, std::string_view key,
                                absl::Span<const Limit> limits, int64_t cost = 1);
  // A shadow policy's denial comes back allowed (shadow_denied) without a lease.
  absl::StatusOr<Lease> Acquire(const Policy& policy, std::string_view key, int64_t cost = 1);
  // Ends lease `lease_id` of `key` (an id from Lease::id() or Lease::Detach()): true when it was
  // held, false when it had already ended (released, or its ttl ran out). An id that is not a
  // lease id, or was issued for another key, is an InvalidArgument error and changes nothing.
  absl::StatusOr<bool> Release(std::string_view key, std::string_view lease_id) override;

  // Removes up to `budget` expired states (those equivalent to fresh); returns how many.
  size_t Sweep(size_t budget = SIZE_MAX);
  LimiterStats Stats() const;
  size_t KeyCount() const;
  Clock& clock() const;

  // Snapshots, so a restart does not hand every client a fresh burst. ExportState serializes all
  // live states and the key-hash seed, with times converted to wall-clock (Clock::WallMs) so they
  // mean the same after a restart; versioned and checksummed. ImportState loads one into a limiter
  // that holds no state yet, whatever its shard count (states are placed by their keys),
  // dropping states that are fresh by now. Errors: corrupt or foreign data, a non-empty limiter.
  absl::Status ExportState(std::string* out) const;
  absl::Status ImportState(std::string_view data);
  // The same, also counting the states as they are written (*states: exactly the records in
  // *out, however many checks ran meanwhile) or read (*states: records in the snapshot; the
  // limiter keeps those not fresh by now, KeyCount()).
  absl::Status ExportState(std::string* out, uint64_t* states) const;
  absl::Status ImportState(std::string_view data, uint64_t* states);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rl

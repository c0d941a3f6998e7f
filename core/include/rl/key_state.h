// rl::KeyState: every limit state of one key, held by the caller rather than by rl::Limiter's
// sharded store. It is the value of rl.so's native Redis type (one Redis key per user key, so a
// check touches one hash slot), and it runs the very algorithms, validation and binding rules
// the Limiter runs, so both front ends answer a check identically.
//
// States are told apart by (scope, algorithm, window), as in the Limiter: the scope is "" for
// inline limits or a policy name, so a renamed policy starts clean. Times are whatever clock
// the caller passes in `now_ms`; rl.so passes absolute milliseconds (its monotonic clock
// anchored to wall-clock time) so that RDB files, the AOF and replicas read them the same.
//
// Not thread-safe (Redis runs commands one at a time). Move-only; one heap block per key plus
// one per sliding log and one per lease set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rl/decision.h"
#include "rl/limit.h"

namespace rl {

// The stable identity of a scope inside a key: 0 for "" (inline limits), otherwise a fixed,
// unseeded 64-bit hash of the name, so every node and every restart agrees on it.
uint64_t ScopeId(std::string_view scope);

// Where KeyState blocks and sliding-log buffers get their memory. rl.so routes them to Redis's
// allocator so INFO memory and maxmemory count them. Set once, before any state exists.
struct StateAllocator {
  void* (*alloc)(size_t bytes);
  void* (*realloc)(void* p, size_t bytes);
  void (*free)(void* p);
};
void SetStateAllocator(const StateAllocator& allocator);

class KeyState {
 public:
  // The most states one key may hold (all scopes together, penalty blocks and lease sets
  // included). A check that would add more is refused with an error and changes nothing.
  static constexpr size_t kMaxStates = 1024;

  KeyState() = default;
  ~KeyState();
  KeyState(KeyState&& other) noexcept;
  KeyState& operator=(KeyState&& other) noexcept;
  KeyState(const KeyState&) = delete;
  KeyState& operator=(const KeyState&) = delete;

  // Limiter::Check over this key's states, all or nothing. `*changed` is set when the stored
  // state differs afterwards (the caller then persists and replicates it), also when the answer
  // is an error or a denial: a denied check or a peek (cost 0) leaves it false unless a changed
  // limit moved a state's expiry or runs that left a log's window were dropped; a check refused
  // for too many states may have dropped states equivalent to fresh. The result is a function of
  // the state and the arguments alone, so replaying the call on an equal state (same `now_ms`)
  // gives equal bytes: rl.so replicates calls this way.
  absl::StatusOr<Decision> Check(std::string_view scope, absl::Span<const Limit> limits,
                                 int64_t cost, int64_t now_ms, bool* changed);
  // What Check would answer, changing nothing (not even pruning). A CONCURRENCY limit may be
  // among the limits (as Limiter::Peek).
  absl::StatusOr<Decision> Peek(std::string_view scope, absl::Span<const Limit> limits,
                                int64_t cost, int64_t now_ms) const;
  // Limiter::Refund / Limiter::Charge over this key's states; `*changed` as for Check.
  absl::StatusOr<Decision> Refund(std::string_view scope, absl::Span<const Limit> limits,
                                  int64_t amount, int64_t now_ms, bool* changed);
  absl::StatusOr<Decision> Charge(std::string_view scope, absl::Span<const Limit> limits,
                                  int64_t amount, int64_t now_ms, bool* changed);
  // Limiter::ChargeWithin over this key's states; `*changed` as for Check.
  absl::StatusOr<Decision> ChargeWithin(std::string_view scope, absl::Span<const Limit> limits,
                                        int64_t amount, int64_t max_wait_ms, int64_t now_ms,
                                        bool* changed);
  // Limiter::Acquire over this key's states. `key` is the user's key (a lease id is tied to it);
  // `*lease_id` receives the id of the lease taken, or is cleared when none was.
  absl::StatusOr<Decision> Acquire(std::string_view scope, std::string_view key,
                                   absl::Span<const Limit> limits, int64_t cost, int64_t now_ms,
                                   std::string* lease_id, bool* changed);
  // Acquire replayed with the id another copy of this state handed out (rl.so's replicas and AOF
  // replay reproduce the primary's acquire, lease id included): `lease_id` must have been issued
  // for `key` under `scope`; empty when that acquire took no lease, and then this one takes none
  // either (an error if it would).
  absl::StatusOr<Decision> AcquireAs(std::string_view scope, std::string_view key,
                                     absl::Span<const Limit> limits, int64_t cost, int64_t now_ms,
                                     std::string_view lease_id, bool* changed);
  // Limiter::Release: ends the lease `lease_id` of `key`; true when it was held. An id that is not
  // a lease id or was issued for another key is an error and changes nothing.
  absl::StatusOr<bool> Release(std::string_view key, std::string_view lease_id, int64_t now_ms,
                               bool* changed);
  // Limiter::CarryOver over this key's states (scope: the policy's name); true when a state moved
  // (the caller then persists and replicates the key).
  bool CarryOver(const Policy& policy, int64_t now_ms);
  // Removes the states of these limits under `scope`, their penalty blocks and (CONCURRENCY) their
  // leases; returns how many limits had something to remove.
  size_t Reset(std::string_view scope, absl::Span<const Limit> limits);
  // Removes the states that are equivalent to fresh at `now_ms`; returns how many.
  size_t Prune(int64_t now_ms);

  bool empty() const { return size() == 0; }
  size_t size() const;
  // When every state is equivalent to fresh (the latest expiry); INT64_MIN when empty. rl.so
  // sets the Redis key's expiry to it, so an idle key vanishes by itself.
  int64_t ExpiryMs() const;
  // Heap bytes held (the block and the logs).
  size_t MemoryBytes() const;

  // A versioned, self-contained encoding with the caller's absolute times; canonical (equal
  // states encode equally), so it also serves as a digest. Decode validates every field and
  // refuses anything malformed with an error: it never crashes on hostile bytes.
  void Encode(std::string* out) const;
  static absl::StatusOr<KeyState> Decode(std::string_view data);
  // Decode that moves every stored time (last updates, window starts, log entries, block ends,
  // lease ends, expiries) by `shift_ms`, saturating: a state written by a clock that was ahead of
  // ours by d loads with shift -d, so each time keeps its distance from the writer's "now" and no
  // wait grows by the clocks' difference.
  static absl::StatusOr<KeyState> Decode(std::string_view data, int64_t shift_ms);

  // The whole state is one pointer (null when empty). A holder that has a pointer-sized slot
  // of its own can keep the state there instead of in a KeyState object: rl.so stores it as
  // the Redis key's value, which saves an allocation and a pointer chase per key. ReleaseBlock()
  // hands the pointer over (this becomes empty); AdoptBlock() takes one back (from ReleaseBlock()
  // only); block() shows it, e.g. to see whether a change moved it.
  void* ReleaseBlock() {
    void* p = block_;
    block_ = nullptr;
    return p;
  }
  static KeyState AdoptBlock(void* block) {
    KeyState s;
    s.block_ = block;
    return s;
  }
  const void* block() const { return block_; }

 private:
  // A refund or charge; a charge with `max_wait_ms` >= 0 is ChargeWithin.
  absl::StatusOr<Decision> Adjust(std::string_view scope, absl::Span<const Limit> limits,
                                  int64_t amount, int64_t now_ms, bool refund, int64_t max_wait_ms,
                                  bool* changed);

  void* block_ = nullptr;  // see key_state_block.h
};

}  // namespace rl

// rl.so's native Redis type "ratelimit": the value of one Redis key is the block of an
// rl::KeyState (KeyState::ReleaseBlock) holding every limit state under that user key. This file
// registers the type (RDB, AOF rewrite, DUMP/RESTORE/MIGRATE, COPY, MEMORY USAGE, DEBUG DIGEST)
// and opens keys for the commands.
//
// Replication never carries RL.CHECK as sent (a replica's clock would decide differently): a
// command that changes a state replicates the state itself when it is small (RL.PUT, put.h),
// else RL.APPLY, the call with the primary's time and everything else a replay cannot recompute
// (apply.h), or DEL when nothing is left, so replicas and the AOF reach exactly the master's
// state at a cost bounded by the call, not by the key;
// when nothing downstream could receive it (propagation.h), the write skips building it. The
// key's expiry is always the moment its states become equivalent to fresh. RL.SETSTATE (the
// whole state) is what an AOF rewrite without an RDB preamble writes, and what older versions
// replicated: it still loads.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "apply.h"
#include "redis_module_api.h"
#include "rl/key_state.h"
#include "rl/key_state_single.h"

namespace rl::module {

// Registers the type (and the policies' aux data, see policies.h). Call once from OnLoad.
bool RegisterStateType(RedisModuleCtx* ctx);

// One Redis key opened for a command. The key's value is the state's block itself (see
// KeyState::ReleaseBlock): state() adopts it, and the value follows whenever a change moves the
// block (Commit, or the destructor after any other change).
class StateKey {
 public:
  // `mode` is REDISMODULE_READ or REDISMODULE_READ | REDISMODULE_WRITE.
  StateKey(RedisModuleCtx* ctx, RedisModuleString* name, int mode);
  ~StateKey();
  StateKey(const StateKey&) = delete;
  StateKey& operator=(const StateKey&) = delete;

  // FailedPrecondition("WRONGTYPE ...") when the key holds another type.
  const absl::Status& status() const { return status_; }
  // The key's state; an empty one (not yet stored) when the key does not exist. Taking it to
  // change it means the key's value must follow it again.
  KeyState& state() {
    synced_ = false;
    return state_;
  }
  const KeyState& state() const { return state_; }
  // True when the Redis key exists and holds this type (false: a new key, stored by Commit).
  bool stored() const { return stored_; }

  // After a change to state() by `effect` at `now_ms`: stores it (a new key), sets the expiry
  // and, when `replicate` (MustPropagate: something downstream), replicates the state as RL.PUT
  // (small, or a window carried over) or the effect as RL.APPLY; when no state is left (or all are
  // fresh at `now_ms`), deletes the key and replicates DEL. Either way the change counts as a write
  // (server.dirty).
  void Commit(int64_t now_ms, bool replicate, const Effect& effect);
  // After replaying a change (RL.APPLY) that the primary made at `op_now_ms`. From upstream (the
  // replication link or an AOF being loaded, per `ctx_flags`) the key stays exactly when the
  // primary kept it, even if this node's clock says its states have ended, since the next replay
  // must find them (the primary's DEL follows when it ends; an AOF's keys past their end expire
  // once loaded); from a client, the key also goes when it has ended by this node's clock. The
  // change replicates as sent, or as DEL when the key goes.
  void CommitReplayed(int64_t op_now_ms, int ctx_flags, const Effect& effect);

 private:
  // The state read once as one two-word state, when it is exactly that (most keys): a write
  // needs it for the expiry, the small form and RL.PUT's form, each of which would read it again.
  struct Single {
    bool is = false;
    SingleState s;
  };
  Single ReadSingle() const;
  // The value for the state as it is now (`single`: ReadSingle's): its packed word when it has
  // one (compact_value.h; the call's `limits` under `scope` give the numbers), else its block or
  // the empty marker.
  void* ValueFor(std::string_view scope, absl::Span<const Limit> limits,
                 const Single& single) const;
  // Points the key's value at ValueFor if a change moved the block or the packed word.
  void Sync(std::string_view scope, absl::Span<const Limit> limits, const Single& single);
  void Sync() { Sync({}, {}, ReadSingle()); }
  // Deletes the key when stored; true when it was.
  bool Drop();
  // Stores the state (a new key, a moved block, a new packed word) with a TTL of `ttl_ms`; false
  // when Redis refused the value.
  bool Store(int64_t ttl_ms, std::string_view scope, absl::Span<const Limit> limits,
             const Single& single);
  // Runs `effect` (which replicates the change) when `replicate`; otherwise only counts the
  // change as a write.
  template <class Replicate>
  void Propagate(bool replicate, Replicate&& effect);

  RedisModuleCtx* ctx_;
  RedisModuleString* name_;
  RedisModuleKey* key_ = nullptr;
  absl::Status status_;
  bool writable_;
  bool stored_ = false;          // the key holds our type; its value is `value_`
  bool synced_ = true;           // `value_` holds the state as it is (nothing took state() since)
  const void* value_ = nullptr;  // the key's value: a block, a packed word or the empty marker
  // Adopts the stored block (never frees it), or a fresh state, or (a packed value) a block of
  // its own holding the unpacked state.
  KeyState state_;
};

// For the whole-state writers (RL.PUT, RL.SETSTATE: put.h), which store a state as sent rather
// than through a StateKey.
//
// The value of a key holding `state` (which it takes), in a small form when it has one
// (compact_value.h): `capacity` and `rate`, when not 0, are the numbers the writer packed it
// under.
void* ValueOf(KeyState&& state, int64_t capacity = 0, int64_t rate = 0);
// The same for a state of exactly one two-word state, with no KeyState built for it.
void* ValueOf(const SingleState& s, int64_t capacity, int64_t rate);
// Whether the opened `key` exists and holds anything but this type.
bool HoldsOtherType(RedisModuleKey* key);
// Makes `value` the value of the opened `key` (empty, or of this type): an existing key keeps
// its entry and expiry, and its old value is freed.
void PutValue(RedisModuleKey* key, void* value);
// The TTL on this node of a state from upstream fresh at `expiry_ms`: see CommitReplayed.
int64_t ReplayTtlMs(int64_t expiry_ms, int64_t now_ms);

// How far a load moves the times of a state its writer wrote at `written_ms` (its node clock):
// back by how far that was ahead of this node's clock, when more than a second, so no wait grows
// by the clocks' difference; 0 on a replica (it keeps its primary's times) or for a writer not
// ahead. Every load path applies it: RDB, RESTORE, RL.SETSTATE (the AOF). With `ctx_flags`
// (RedisModule_GetContextFlags of the command) when the caller has them.
int64_t LoadShiftMs(int64_t written_ms);
int64_t LoadShiftMs(int64_t written_ms, int ctx_flags);

// Count of values that failed to load (corrupt RDB or RESTORE payload), for INFO.
uint64_t RejectedLoads();

// Forward steps of the wall clock seen while rl.so runs (and their total in ms), for INFO: Redis
// expires keys by its wall clock, so such a step ends every key whose TTL was shorter, which
// rl.so cannot prevent; it counts and logs each one it sees when it next sets a key's expiry.
uint64_t WallClockSteps();
int64_t WallClockStepMs();

}  // namespace rl::module

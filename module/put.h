// RL.PUT: how rl.so replicates a change to a small state, as the state itself in one argument.
//
// RL.APPLY (apply.h) replicates the call (nine text arguments, ~160 B) so that what a change
// costs downstream is bounded by the call, not by the key. For a key whose whole state is small
// (one or a few limits: most keys) the state itself is shorter than the call, and one argument
// costs Redis far less to propagate than nine (an object per argument on the primary, and its
// RESP framing in both the AOF and the replication buffer). Such a change replicates
//
//   RL.PUT key <form>
//
// where <form> is one binary string, versioned by its first byte. Form 1 (little-endian):
//
//   u8 1 | i64 now-ms | i64 expiry-ms | varint capacity | varint rate | the state
//
// now-ms is the primary's time at the change (its anchored node clock), expiry-ms when the state
// it sends is fresh again (the state's own latest expiry, sent once more so that a damaged or
// forged form is refused rather than stored), capacity and rate (LEB128) the numbers of the
// token bucket the primary keeps the state's small form under (compact_value.h), so that the
// replica keeps it as small (0 0: none), and the state is KeyState::Encode's bytes (an
// encoding with its own version). The replica (or an AOF replay) stores the state
// as sent: it ends in the primary's state byte for byte whatever it held before, so there is no
// replay that can miss (RL.APPLY's apply_mismatches concerns RL.APPLY only). As RL.SETSTATE and
// RL.APPLY: a client needs the permission to RESTORE the key (permissions.h), the state is
// validated before anything is stored (hostile bytes are refused, never a crash), a key the
// primary kept stays until the primary's DEL even when this node's clock says it has ended, and
// an AOF written by a clock ahead of this node's has its times moved back (LoadShiftMs, with
// now-ms as the writer's time). A form version this rl.so does not know is refused with an error
// that names it (a newer primary: upgrade replicas first).
//
// Form 2 carries a state of exactly one two-word state (one token bucket, GCRA,
// fixed window or leaky bucket: bench/run's keys, most keys) in about a third of form 1's bytes,
// every number a LEB128 varint, times as differences from now-ms (zigzag: signed):
//
//   u8 2 | now-ms | zz(expiry-ms - now-ms) | capacity | rate | scope-id | u8 algorithm |
//   window-ms | zz(time - now-ms) | zz(word)
//
// the fields of rl::SingleState (key_state_single.h). A 40-byte key's token bucket replicates
// 94 B per check (form 1: 133 B), and the form, ~25 B, fits in one allocation with its Redis
// object (<= 44 B). The replica refuses fields that a one-state block does not read back as
// sent (an unknown or non-two-word algorithm, a window out of range) and stores the fields
// themselves (in the key's small form, or a one-state block), replacing the value of a key it
// holds in place: a replica applies one RL.PUT per check on the primary, on whichever core it
// shares. Only a form whose writer's clock was ahead (LoadShiftMs) goes through the encoding, as
// form 1 does, to have its times moved. Every other small state keeps form 1, which every rl.so
// that knows RL.PUT reads; a replica must be upgraded before its primary, or it answers form 2
// with the error above.
//
// A state larger than kMaxPutBytes (many limits, a long SLIDING_LOG, many leases) keeps
// replicating RL.APPLY; a window carried over (Effect::whole) replicates RL.PUT whatever its
// size, as it replicated RL.SETSTATE before.
#pragma once

#include <cstddef>
#include <cstdint>

#include "redis_module_api.h"
#include "rl/key_state.h"
#include "rl/key_state_single.h"

namespace rl::module {

// The largest state (KeyState::MemoryBytes: its block and logs) a change replicates as RL.PUT.
// A block of three two-word states is 112 B; its form is 143 B (one state's: 61 B), against
// RL.APPLY's ~160-200 B for the same call.
inline constexpr size_t kMaxPutBytes = 128;

// Whether a change to `state` replicates as RL.PUT rather than RL.APPLY.
inline bool FitsPut(const KeyState& state) { return state.MemoryBytes() <= kMaxPutBytes; }

// Replicates `state` of key `name`, as it is at `now_ms` (fresh at `expiry_ms`), as RL.PUT.
// `value` is the key's value (its small form's numbers go with it), or null.
void ReplicatePut(RedisModuleCtx* ctx, RedisModuleString* name, int64_t now_ms,
                  const KeyState& state, int64_t expiry_ms, const void* value);
// The same for a state of exactly one two-word state, read already (GetSingleState).
void ReplicatePut(RedisModuleCtx* ctx, RedisModuleString* name, int64_t now_ms,
                  const SingleState& single, const void* value);

// RL.PUT's handler, after the permission check (permissions.h) that RegisterPut puts in front;
// `ctx_flags`: RedisModule_GetContextFlags(ctx).
int PutCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc, int ctx_flags);

// RL.SETSTATE key encoded-state [writer-ms]: a whole state, as AOF rewrites without an RDB
// preamble and older versions write it; after the same check.
int SetStateCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc, int ctx_flags);

// Registers RL.PUT. Call once from OnLoad.
bool RegisterPut(RedisModuleCtx* ctx);

}  // namespace rl::module

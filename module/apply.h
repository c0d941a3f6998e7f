// RL.APPLY: how rl.so replicates a state change, bounded by the call rather than by the key.
//
// A call that changes a key's state larger than put.h's kMaxPutBytes (a small one replicates
// itself, RL.PUT) replicates (to replicas and the AOF) the call itself with
// everything a replay cannot recompute made explicit: the primary's time, the limits it ran
// (a named policy's as the primary had them, in canonical text), the lease id it handed out, and
// what the primary's state came to (its count of states and its expiry) as a check:
//
//   RL.APPLY key <now-ms> CHECK   <scope> <limits> <cost>            <states> <expiry-ms>
//   RL.APPLY key <now-ms> ACQUIRE <scope> <limits> <cost> <lease-id> <states> <expiry-ms>
//   RL.APPLY key <now-ms> REFUND  <scope> <limits> <amount>          <states> <expiry-ms>
//   RL.APPLY key <now-ms> CHARGE  <scope> <limits> <amount>          <states> <expiry-ms>
//   RL.APPLY key <now-ms> RESET   <scope> <limits>                   <states> <expiry-ms>
//   RL.APPLY key <now-ms> RELEASE <lease-id>                         <states> <expiry-ms>
//
// <scope> is "" for inline limits, the policy name, or CL.THROTTLE's scope; <limits> is the list
// as RL.CHECK takes it ("SLIDING_LOG 100 1m GCRA 5 1s BURST 9"); <lease-id> is "" for an acquire
// that took none. rl::KeyState's calls are functions of the state and their arguments, so a
// replica (or an AOF replay) that holds the primary's state and runs the call at the primary's
// time reaches the primary's state byte for byte; it never reads its own clock for the state
// (only for the Redis key's TTL, which Redis counts on each node's own wall clock). When the
// result differs from what the primary reported, the replica counts it (INFO rl
// apply_mismatches) and logs it. RL.SETSTATE (the whole state) remains for AOF rewrites
// without an RDB preamble and for AOFs written by earlier versions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/types/span.h"
#include "redis_module_api.h"
#include "rl/limit.h"

namespace rl::module {

// One state-changing call as the primary ran it on one key's state.
struct Effect {
  enum class Op : uint8_t { kCheck, kAcquire, kRefund, kCharge, kReset, kRelease };
  Op op = Op::kCheck;
  std::string_view scope;
  absl::Span<const Limit> limits;
  int64_t cost = 0;           // cost, or the amount of a refund or charge
  std::string_view lease_id;  // kAcquire: the id taken (empty: none); kRelease: the id released
  // The call also moved the key's states to a policy's new window (KeyState::CarryOver), which a
  // replay of the call cannot do (the links to the old windows live in this node's policy): the
  // whole state is replicated instead (RL.PUT), once per key and window change.
  bool whole = false;
};

// Replicates `effect`, run at `now_ms` on key `name`, whose state then held `states` states
// ending at `expiry_ms`, as RL.APPLY.
void ReplicateEffect(RedisModuleCtx* ctx, RedisModuleString* name, int64_t now_ms,
                     const Effect& effect, size_t states, int64_t expiry_ms);

// Registers RL.APPLY. Call once from OnLoad.
// RL.APPLY's handler, after the permission check (permissions.h) that RegisterApply puts in front.
int ApplyCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);

bool RegisterApply(RedisModuleCtx* ctx);

// Replays that did not reach the primary's state, for INFO rl.
uint64_t ApplyMismatches();

}  // namespace rl::module

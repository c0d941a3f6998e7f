// redis-cell's keys taken over by CL.THROTTLE, so that replacing redis-cell with rl.so inside the
// same Redis neither answers WRONGTYPE nor hands out a fresh burst.
//
// redis-cell keeps one GCRA state per key as a plain Redis string: the theoretical arrival time
// (TAT) in nanoseconds since the Unix epoch, as decimal text (what its store writes with
// `key.write(new_tat.to_string())`), with the key's expiry at the TAT (milliseconds in current
// versions; whole seconds through SETEX in old ones). rl keeps the same GCRA (capacity
// max_burst + 1, one token per period/count) in its own type, so the TAT carries over: rl.so's
// CL.THROTTLE, and no other command, reads such a string as redis-cell's state, replaces it with
// an rl state holding the same TAT (rounded up to rl's resolution, under a millisecond) and then
// decides the call on it, as redis-cell would have. Any string that is a decimal 64-bit integer
// qualifies (redis-cell's own test), so an application's integer counter under the same name is
// taken over too (as a TAT long past: a fresh state): docs/features.md says so, and that RL.*
// keys want a prefix of their own.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "redis_module_api.h"
#include "rl/key_state.h"
#include "rl/limit.h"

namespace rl::module {

// When key `name` holds a string that reads as redis-cell's state (a decimal integer fitting in
// 64 bits, no later than ten years from `now_ms`), deletes it, replicates DEL when `replicate`
// (MustPropagate: the RL.SETSTATE that follows must not meet a string on a replica), and returns
// the TAT in nanoseconds. nullopt otherwise: the key is untouched (absent, rl's own type, or a
// string that is not redis-cell's, which the caller answers WRONGTYPE as before).
std::optional<int64_t> TakeCellState(RedisModuleCtx* ctx, RedisModuleString* name, int64_t now_ms,
                                     bool replicate);

// Puts redis-cell's TAT `tat_ns` into `state` as the GCRA state of `limit` under `scope`, rounded
// up to the next tick of rl's clock (1/limit.limit ms). A TAT not after `now_ms` is a fresh
// state: nothing is stored and the answer is false; true when the state now holds it.
bool SeedCellState(KeyState& state, std::string_view scope, const Limit& limit, int64_t tat_ns,
                   int64_t now_ms);

}  // namespace rl::module

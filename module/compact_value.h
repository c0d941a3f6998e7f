// rl.so's small form of a one-limit key: a key whose state is one token bucket keeps it inside
// the Redis key's value pointer (the void* the type's callbacks receive) instead of in a 48-byte
// KeyState block, which saves that allocation: ~48 B of the ~220 B a key costs in Redis.
//
// The word is exact, never an approximation: it is used only when unpacking gives back the very
// bytes of the block (what RDB, DUMP, AOF rewrites, digests and replication see is unchanged),
// and otherwise the key keeps its block. What lets 63 bits carry the state:
//   - the state's identity and its limit's numbers (scope, window, capacity, rate) are the same
//     for many keys, so they are interned in a small table and the word holds the entry's index;
//   - the token bucket's expiry is a function of its two words and the limit (the moment the
//     bucket is full again), so it is recomputed rather than stored;
//   - the bucket's fill is held as its deficit below full in units of gcd(window, limit) (every
//     bucket this limit ever built is a multiple of it), and its time relative to a base set when
//     rl.so loads (2^36 ms, 2.2 years, either side of it).
// A bucket that is far from full, a state outside those ranges, a table that is full (255
// limits), two or more states, or any other algorithm keep the block.
//
// Layout (bit 0 set; blocks and the empty marker are aligned, so their bit 0 is clear):
//   bit 0: 1 | bits 1-8: table index | bits 9-45: time - base | bits 46-63: deficit / gcd
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/types/span.h"
#include "rl/key_state_single.h"
#include "rl/limit.h"

namespace rl::module {

inline bool IsPacked(const void* value) { return (reinterpret_cast<uintptr_t>(value) & 1) != 0; }

// Sets the time base; call once from OnLoad, before any value exists.
void InitPacking(int64_t now_ms);

// The packed word of `s` (as a value pointer), or null when it has none. Among `limits` (those
// of the call that left the state, under `scope`), the one the state belongs to gives the
// limit's numbers; else those of `previous` (the key's value before the call) when it was packed;
// else the last numbers interned for the state's scope and window (a loaded or copied state).
void* Pack(const SingleState& s, std::string_view scope, absl::Span<const Limit> limits,
           const void* previous);
void* Pack(const SingleState& s);
// The state a packed word holds.
SingleState Unpack(const void* value);

// How many limits are interned (for INFO).
uint64_t PackedLimits();

}  // namespace rl::module

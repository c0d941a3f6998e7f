// rl.so's small forms of a one-limit key: a key whose state is one token bucket keeps it in the
// Redis key's value pointer itself (the void* the type's callbacks receive) or in an 8-byte
// allocation that pointer points to, instead of a 48-byte KeyState block: ~48 or ~40 B of the
// ~220 B a key costs in Redis.
//
// Both forms are exact, never an approximation: a state takes one only when unpacking gives back
// the very bytes of its block (what RDB, DUMP, AOF rewrites, digests and replication see is
// unchanged), and otherwise the key keeps its block. What lets 63 or 64 bits carry the state:
//   - the state's identity and its limit's numbers (scope, window, capacity, rate) are the same
//     for many keys, so they are interned in a small table and the value holds the entry's index;
//   - the token bucket's expiry is a function of its two words and the limit (the moment the
//     bucket is full again), so it is recomputed rather than stored;
//   - the bucket's fill is held as its deficit below full in grains of gcd(window, limit) (every
//     bucket this limit ever built is a multiple of it), and its time relative to a base set when
//     rl.so loads (2^36 ms, 2.2 years, either side of it).
// Inline (bit 0 set): the deficit takes 18 bits, so a bucket less than 2^18 grains (at most
// 262 s, since a grain refills in at most a millisecond) from full. Boxed (bits 1-0 = 10): an
// 8-byte allocation holds time and a 27-bit deficit (at most 37 h from full), the pointer's
// top 16 bits the index. A state outside those ranges, a full table (255 limits), two or more
// states, or any other algorithm keep the block.
//
//   inline: bit 0: 1 | bits 1-8: index | bits 9-45: time - base | bits 46-63: deficit / grain
//   boxed:  bits 0-2: 010 | bits 3-47: address | bits 48-63: index;
//           its 8 bytes: bits 0-36: time - base | bits 37-63: deficit / grain
// Blocks and the empty marker are 8-aligned, so their three low bits are clear.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/types/span.h"
#include "rl/key_state_single.h"
#include "rl/limit.h"

namespace rl::module {

inline bool IsInline(const void* value) { return (reinterpret_cast<uintptr_t>(value) & 1) != 0; }
inline bool IsBoxed(const void* value) { return (reinterpret_cast<uintptr_t>(value) & 7) == 2; }
// Either small form: the value holds a state but is no block.
inline bool IsPacked(const void* value) { return IsInline(value) || IsBoxed(value); }

// Sets the time base; call once from OnLoad, before any value exists.
void InitPacking(int64_t now_ms);

// The small form of `s` as a value, or null when it has none. Among `limits` (those of the call
// that left the state, under `scope`), the one the state belongs to gives the limit's numbers;
// else those of `previous` (the key's value before the call) when it was packed; else the last
// numbers interned for the state's scope and window (a loaded or copied state). A boxed result
// reuses `previous`'s box when it had one (written in place), else allocates one: the caller
// stores it as the key's value, and frees `previous`'s box when the result does not reuse it.
void* Pack(const SingleState& s, std::string_view scope, absl::Span<const Limit> limits,
           const void* previous);
void* Pack(const SingleState& s);
// The numbers of a token bucket (capacity, and rate: units per window) that a packed value was
// packed under: what a replica, which runs no call, needs to pack the same state (put.h).
bool PackedNumbers(const void* value, int64_t* capacity, int64_t* rate);
// `s` packed under a token bucket of `capacity` and `rate` per `s.window_ms` (interned, if the
// numbers fit), or null. Any numbers give an exact value or none: PackWith checks that the
// state's expiry is the one these numbers give.
void* PackAs(const SingleState& s, int64_t capacity, int64_t rate);
// The state a packed value holds.
SingleState Unpack(const void* value);
// A block (from Redis's allocator, as KeyState's) holding the state of packed `value`, for a
// command to run it in; KeepsBlock takes it back afterwards, so commands on packed keys allocate
// nothing: true when `block` is kept (the caller lets go of it), false when the caller frees it.
void* UnpackToBlock(const void* value);
bool KeepsBlock(const void* block);
// Frees a boxed value's allocation (nothing for other values).
void FreeBox(const void* value);
// Whether two values share a box.
bool SameBox(const void* a, const void* b);
// Heap bytes of a packed value (0 inline, the box's 8 boxed).
size_t PackedBytes(const void* value);

}  // namespace rl::module

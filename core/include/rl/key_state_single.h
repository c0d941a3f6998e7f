// A KeyState that holds exactly one two-word state (a token bucket, GCRA, leaky bucket or fixed
// window under one scope, with no penalty block), seen as plain fields. A holder that can keep
// such a state in fewer bytes than KeyState's heap block reads it out with GetSingleState and,
// to run a call on it, writes it back into a block with WriteSingleBlock: rl.so keeps a one-limit
// key's whole state inside the key's value pointer this way (module/compact_value.h). The
// round trip is exact: a block written from what GetSingleState read holds the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rl/key_state.h"
#include "rl/limit.h"

namespace rl {

struct SingleState {
  uint64_t scope_id = 0;  // ScopeId of the state's scope
  Algorithm algorithm = Algorithm::kTokenBucket;
  int64_t window_ms = 0;
  int64_t expiry_ms = 0;  // when the state becomes equivalent to fresh
  int64_t time = 0;       // the algorithm's two words (see algorithms.h)
  int64_t word = 0;
};

// The size of a block holding one two-word state.
inline constexpr size_t kSingleBlockBytes = 48;

// True when `state` holds exactly one state and it is a two-word one; fills `*out`.
bool GetSingleState(const KeyState& state, SingleState* out);

// Writes the block of a KeyState holding exactly `s` into `buffer` (kSingleBlockBytes bytes).
// KeyState::AdoptBlock(buffer) then sees it; a KeyState that may change or free the block needs
// a buffer from the state allocator (SetStateAllocator), a const one may borrow any memory.
void WriteSingleBlock(void* buffer, const SingleState& s);

}  // namespace rl

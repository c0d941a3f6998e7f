// GetSingleState / WriteSingleBlock: a one-state KeyState block read and written as fields (see
// rl/key_state_single.h); the layout is key_state_block.h's.
#include "rl/key_state_single.h"

#include "key_state_block.h"

namespace rl {

using namespace internal::key_state;  // NOLINT: the block layout's small helpers

static_assert(kSingleBlockBytes == kHeaderBytes + kEntryHead + 16, "one two-word entry");

bool GetSingleState(const KeyState& state, SingleState* out) {
  const Block b{static_cast<char*>(const_cast<void*>(state.block()))};
  if (b.count() != 1 || b.bytes() != kSingleBlockBytes) return false;
  const uint64_t id = b.id(kHeaderBytes);
  if (IdIsBlock(id) || internal::ShapeOf(IdAlgorithm(id)) != internal::StateShape::kTwoWord) {
    return false;
  }
  out->scope_id = b.scope(kHeaderBytes);
  out->algorithm = IdAlgorithm(id);
  out->window_ms = IdWindow(id);
  out->expiry_ms = b.expiry(kHeaderBytes);
  out->time = b.word(kHeaderBytes, 0);
  out->word = b.word(kHeaderBytes, 1);
  return true;
}

void WriteSingleBlock(void* buffer, const SingleState& s) {
  Block b{static_cast<char*>(buffer)};
  Store<uint16_t>(b.p, 1);
  Store<uint16_t>(b.p + 2, 0);
  b.set_bytes(kSingleBlockBytes);
  Store<uint64_t>(b.p + kHeaderBytes, s.scope_id);
  Store<uint64_t>(b.p + kHeaderBytes + 8, LimitId(s.algorithm, s.window_ms));
  b.set_expiry(kHeaderBytes, s.expiry_ms);
  b.set_word(kHeaderBytes, 0, s.time);
  b.set_word(kHeaderBytes, 1, s.word);
}

}  // namespace rl

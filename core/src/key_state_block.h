// rl::KeyState's heap block, shared by its store of the pipeline (key_state_store.h), its other
// operations (key_state.cc, key_state_ops.cc) and its encoding (key_state_codec.cc): the layout,
// and the edits of it.
//
// Block layout (host byte order, accessed through memcpy so nothing needs alignment):
//   header {u16 count, u16 reserved, u32 bytes (the whole block)}
//   entries, each {u64 scope id, u64 id, i64 expiry ms, payload}. The id of a limit's state is
//   its StateTag (registry.h) and its payload two words (token bucket, GCRA, leaky bucket, fixed
//   window), three words (sliding window) or one pointer to a sliding-log buffer. A CONCURRENCY
//   limit's leases have id 6 (window 0: the lease ttl is not part of their identity) and a
//   pointer to a lease buffer. A running penalty block of a limit's state has that state's id
//   with kBlockBit set, no payload, and its end as the expiry.
// A key with one token bucket is 48 bytes; entries are few per key, so lookups scan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "leases.h"
#include "rl/limit.h"
#include "sliding_log.h"
#include "state_alloc.h"
#include "store.h"

namespace rl::internal::key_state {

inline constexpr size_t kHeaderBytes = 8;
inline constexpr size_t kEntryHead = 24;  // scope, id, expiry
inline constexpr uint64_t kBlockBit = uint64_t{1} << 63;

inline uint64_t LimitId(Algorithm algorithm, int64_t window_ms) {
  return StateTag(algorithm, window_ms);
}
// The id a limit's state is stored under (leases: independent of the ttl).
inline uint64_t StateId(const Limit& limit) {
  return limit.algorithm == Algorithm::kConcurrency ? LimitId(Algorithm::kConcurrency, 0)
                                                    : LimitId(limit.algorithm, limit.window_ms);
}
inline Algorithm IdAlgorithm(uint64_t id) { return TagAlgorithm(id); }
inline int64_t IdWindow(uint64_t id) { return TagWindow(id); }
inline bool IdIsBlock(uint64_t id) { return (id & kBlockBit) != 0; }

inline size_t PayloadWords(StateShape kind) {
  switch (kind) {
    case StateShape::kTwoWord:
      return 2;
    case StateShape::kThreeWord:
      return 3;
    case StateShape::kLog:
    case StateShape::kLeases:
      return 1;
  }
  return 2;
}
inline size_t EntryBytes(uint64_t id) {
  if (IdIsBlock(id)) return kEntryHead;
  return kEntryHead + 8 * PayloadWords(ShapeOf(IdAlgorithm(id)));
}

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void Store(char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// A view of the block with typed accessors; null block = no entries.
struct Block {
  char* p;

  size_t count() const { return p == nullptr ? 0 : Load<uint16_t>(p); }
  size_t bytes() const { return p == nullptr ? 0 : Load<uint32_t>(p + 4); }
  void set_count(size_t n) { Store<uint16_t>(p, static_cast<uint16_t>(n)); }
  void set_bytes(size_t n) { Store<uint32_t>(p + 4, static_cast<uint32_t>(n)); }

  // Entry access by byte offset from the block start.
  uint64_t scope(size_t off) const { return Load<uint64_t>(p + off); }
  uint64_t id(size_t off) const { return Load<uint64_t>(p + off + 8); }
  int64_t expiry(size_t off) const { return Load<int64_t>(p + off + 16); }
  void set_expiry(size_t off, int64_t v) { Store<int64_t>(p + off + 16, v); }
  int64_t word(size_t off, size_t k) const { return Load<int64_t>(p + off + kEntryHead + 8 * k); }
  void set_word(size_t off, size_t k, int64_t v) {
    Store<int64_t>(p + off + kEntryHead + 8 * k, v);
  }
  LogBuf* log(size_t off) const { return Load<LogBuf*>(p + off + kEntryHead); }
  void set_log(size_t off, LogBuf* log) { Store<LogBuf*>(p + off + kEntryHead, log); }
  LeaseBuf* leases(size_t off) const { return Load<LeaseBuf*>(p + off + kEntryHead); }
  void set_leases(size_t off, LeaseBuf* l) { Store<LeaseBuf*>(p + off + kEntryHead, l); }
  size_t size_at(size_t off) const { return EntryBytes(id(off)); }
  // The kind of the entry's payload, for entries that are states (not blocks).
  StateShape kind_at(size_t off) const { return ShapeOf(IdAlgorithm(id(off))); }
  bool has_log(size_t off) const { return !IdIsBlock(id(off)) && kind_at(off) == StateShape::kLog; }
  bool has_leases(size_t off) const {
    return !IdIsBlock(id(off)) && kind_at(off) == StateShape::kLeases;
  }

  // Offset of the entry (scope, id), or 0 when absent (0 is the header, never an entry).
  size_t Find(uint64_t scope_id, uint64_t entry_id) const {
    const size_t end = bytes();
    for (size_t off = kHeaderBytes; off < end; off += size_at(off)) {
      if (id(off) == entry_id && scope(off) == scope_id) return off;
    }
    return 0;
  }
  // Frees what the entry at `off` points to (a log or a lease set).
  void FreePayload(size_t off) const {
    if (has_log(off)) LogFree(log(off));
    if (has_leases(off)) LeaseFree(leases(off));
  }
};

// Writes a pending state (internal::Pending, pipeline.h) into the entry at `off` (which has the
// right size).
template <class Q>
void WriteState(Block& b, size_t off, const Q& q) {
  b.set_expiry(off, q.expiry_ms);
  switch (q.kind) {
    case StateShape::kTwoWord:
      b.set_word(off, 0, q.two.time);
      b.set_word(off, 1, q.two.word);
      break;
    case StateShape::kThreeWord:
      b.set_word(off, 0, q.three.time);
      b.set_word(off, 1, q.three.previous);
      b.set_word(off, 2, q.three.current);
      break;
    case StateShape::kLog:
      b.set_log(off, q.log);
      break;
    case StateShape::kLeases:
      b.set_leases(off, q.leases);
      break;
  }
}

// Removes the entry at `off` (freeing its log or leases) without shrinking the allocation.
inline void EraseAt(Block& b, size_t off) {
  const size_t size = b.size_at(off);
  b.FreePayload(off);
  const size_t end = b.bytes();
  std::memmove(b.p + off, b.p + off + size, end - off - size);
  b.set_bytes(end - size);
  b.set_count(b.count() - 1);
}

// Makes room for `extra` more bytes of entries; the block may move (offsets stay valid).
inline void Reserve(void*& block, Block& b, size_t extra) {
  if (extra == 0) return;
  const size_t old_bytes = b.p == nullptr ? kHeaderBytes : b.bytes();
  char* p = static_cast<char*>(internal::StateRealloc(b.p, old_bytes + extra));
  if (b.p == nullptr) {
    Store<uint16_t>(p, 0);
    Store<uint16_t>(p + 2, 0);
    Store<uint32_t>(p + 4, static_cast<uint32_t>(kHeaderBytes));
  }
  b.p = p;
  block = p;
}

// Appends an entry header (room reserved); returns its offset. The caller writes the payload.
inline size_t Append(Block& b, uint64_t scope, uint64_t id, int64_t expiry) {
  const size_t off = Load<uint32_t>(b.p + 4);  // b.bytes() without its null test: room is reserved
  Store<uint64_t>(b.p + off, scope);
  Store<uint64_t>(b.p + off + 8, id);
  b.set_expiry(off, expiry);
  b.set_bytes(off + EntryBytes(id));
  b.set_count(b.count() + 1);
  return off;
}

// When the running block of state (scope, id) ends; `now` when none runs.
inline int64_t BlockedUntil(const Block& b, uint64_t sid, uint64_t id, int64_t now) {
  const size_t off = b.Find(sid, id | kBlockBit);
  return off != 0 && b.expiry(off) > now ? b.expiry(off) : now;
}

}  // namespace rl::internal::key_state

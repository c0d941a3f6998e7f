// rl::KeyState's heap block, shared by its operations (key_state.cc) and its encoding
// (key_state_codec.cc).
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

}  // namespace rl::internal::key_state

// The sharded state store under the Limiter: a power-of-two number of shards, each with its own
// mutex and flat hash tables, padded to a cache line so a hot key's lock never shares a line with
// another shard's.
//
// States are keyed by a seeded 64-bit hash of (scope, key, algorithm, window) (see KeyHasher in
// limiter.cc) whose top bits also pick the shard; the user's key is never stored. A token-bucket
// slot (Slot2) is 26 bytes (key, coarse expiry with the usage level, a 48-bit time and a 64-bit
// state word), 27 with absl's control byte: 62 bytes per key at the lowest load factor a table
// reaches (7/16, just after growing), 31 at the highest (7/8). The shards' unequal shares of the
// keys (see SharesFor in limiter_store.cc) keep the whole store near the mean of that cycle, 1.65
// slots per key (~45 B), at every key count. Penalty blocks and lease sets live in tables of their
// own, so only the keys that use them pay for them.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/base/optimization.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "algorithms.h"
#include "leases.h"
#include "registry.h"
#include "sliding_log.h"

namespace rl::internal {

// Packed to 2-byte alignment: 26 and 32 bytes. The first state word is always a time (last
// update, TAT, window start), kept as 48 bits relative to the limiter's start (+-4462 years,
// saturating) so a two-word slot with its control byte stays at 27 bytes: ~45 bytes per key over
// the store (see the top of this file), 62 in a table that has just grown.
#pragma pack(push, 2)
struct Slot2 {
  uint64_t key;
  mutable uint32_t expiry;  // coarse expiry (see ExpiryCodec); 0 = already expired
  mutable uint16_t time_hi;
  mutable uint32_t time_lo;
  mutable int64_t word;

  int64_t rel_time() const { return Unpack48(time_hi, time_lo); }
  // Assigns the members directly: a pointer to a packed member would be misaligned (UB).
  void set_rel_time(int64_t rel) const {
    time_hi = Hi48(rel);
    time_lo = Lo48(rel);
  }
  static int64_t Unpack48(uint16_t hi, uint32_t lo) {
    // Shift up then arithmetic-shift down to sign-extend the 48-bit value.
    return static_cast<int64_t>(((uint64_t{hi} << 32) | lo) << 16) >> 16;
  }
  static uint16_t Hi48(int64_t rel) {
    return static_cast<uint16_t>(static_cast<uint64_t>(rel) >> 32);
  }
  static uint32_t Lo48(int64_t rel) { return static_cast<uint32_t>(rel); }
};
// The sliding window's two counts (previous and current window) take 56 bits each, so the slot is
// 32 bytes: 33 with its control byte, ~54 B per key over the store where three whole words took
// 35 and ~58 B. The algorithm keeps both counts in 0..kMaxWindowCount (it reads counts from a
// slot, and adds only what fits a limit or saturates), so writes only mask them; a count from
// elsewhere (a snapshot) goes through ClampCount first, which decides the same.
struct Slot3 {
  uint64_t key;
  mutable uint32_t expiry;
  mutable uint16_t time_hi;
  mutable uint32_t time_lo;
  mutable uint8_t counts[14];  // previous in bytes 0-6, current in bytes 7-13, little-endian

  Slot3(uint64_t k, uint32_t e, int64_t rel, int64_t previous, int64_t current)
      : key(k), expiry(e) {
    set_rel_time(rel);
    set_counts(previous, current);
  }
  int64_t rel_time() const { return Slot2::Unpack48(time_hi, time_lo); }
  void set_rel_time(int64_t rel) const {
    time_hi = Slot2::Hi48(rel);
    time_lo = Slot2::Lo48(rel);
  }
  // Each reads 8 bytes that stay inside the slot and drops the neighbour's byte.
  int64_t previous() const { return static_cast<int64_t>(Load64(counts) & kCountMask); }
  int64_t current() const { return static_cast<int64_t>(Load64(counts + 6) >> 8); }
  void set_counts(int64_t previous, int64_t current) const {
    const uint64_t lo = static_cast<uint64_t>(previous) & kCountMask;
    const uint64_t hi = static_cast<uint64_t>(current);
    const uint64_t first = lo | hi << 56;  // previous and current's low byte
    const uint64_t rest = hi >> 8;         // current's other six bytes
    std::memcpy(counts, &first, 8);
    std::memcpy(counts + 8, &rest, 6);
  }
  static int64_t ClampCount(int64_t v) { return std::clamp<int64_t>(v, 0, kMaxWindowCount); }

 private:
  static constexpr uint64_t kCountMask = (uint64_t{1} << 56) - 1;
  static uint64_t Load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
};
#pragma pack(pop)
#pragma pack(push, 4)
struct SlotLog {
  uint64_t key;
  mutable uint32_t expiry;
  mutable LogBuf* log;
};
#pragma pack(pop)
// A running penalty block of the state with the same key: until when (exact, monotonic ms).
struct SlotBlock {
  uint64_t key;
  mutable int64_t until;
};
// The live leases of one CONCURRENCY limit; the key is its own (see LeaseKey in limiter.cc).
#pragma pack(push, 4)
struct SlotLease {
  uint64_t key;
  mutable uint32_t expiry;  // coarse, when every lease has ended (always protected level)
  mutable LeaseBuf* leases;
};
#pragma pack(pop)
static_assert(sizeof(Slot2) == 26);
static_assert(sizeof(Slot3) == 32);
static_assert(kMaxWindowCount == (int64_t{1} << 56) - 1, "Slot3 stores counts in 56 bits");
static_assert(sizeof(SlotLog) == 20);
static_assert(sizeof(SlotLease) == 20);

// The tables' memory. A block of a page or more is mapped from the kernel and unmapped when freed:
// a table that grows frees a block half the size of its new one, and from the heap such blocks
// stayed resident as fragments (glibc raises its mmap threshold to the size of the largest block
// freed, so after the first growths every table lived on the heap): 4-5 B per key of RSS above
// the tables' own bytes at 1 M keys. (From 1024 slots on, a table's block is a whole number of
// pages.) Smaller blocks come from operator new, as every block does under AddressSanitizer.
// Failure throws std::bad_alloc, as operator new does.
inline constexpr size_t kMappedTableBytes = size_t{4} << 10;
void* TableAlloc(size_t bytes);
void TableFree(void* p, size_t bytes);
// For tests only: called with each table block mapped (`mapped`) or about to be unmapped, so a
// test can write-protect a store's tables and show that an operation writes nothing to them.
// Called on table growth only, never per check. nullptr (the default) = none.
using TableMapHook = void (*)(void* block, size_t bytes, bool mapped);
void SetTableMapHookForTesting(TableMapHook hook);
template <typename T>
struct TableAllocator {
  using value_type = T;
  TableAllocator() = default;
  template <typename U>
  TableAllocator(const TableAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator does
  T* allocate(size_t n) { return static_cast<T*>(TableAlloc(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { TableFree(p, n * sizeof(T)); }
  friend bool operator==(const TableAllocator&, const TableAllocator&) { return true; }
};

// The key is already a uniformly random 64-bit hash, so it hashes to itself.
struct SlotHash {
  using is_transparent = void;
  size_t operator()(uint64_t key) const { return key; }
  size_t operator()(const Slot2& s) const { return s.key; }
  size_t operator()(const Slot3& s) const { return s.key; }
  size_t operator()(const SlotLog& s) const { return s.key; }
  size_t operator()(const SlotBlock& s) const { return s.key; }
  size_t operator()(const SlotLease& s) const { return s.key; }
};
struct SlotEq {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return KeyOf(a) == KeyOf(b);
  }
  static uint64_t KeyOf(uint64_t k) { return k; }
  static uint64_t KeyOf(const Slot2& s) { return s.key; }
  static uint64_t KeyOf(const Slot3& s) { return s.key; }
  static uint64_t KeyOf(const SlotLog& s) { return s.key; }
  static uint64_t KeyOf(const SlotBlock& s) { return s.key; }
  static uint64_t KeyOf(const SlotLease& s) { return s.key; }
};

using Table2 = absl::flat_hash_set<Slot2, SlotHash, SlotEq, TableAllocator<Slot2>>;
using Table3 = absl::flat_hash_set<Slot3, SlotHash, SlotEq, TableAllocator<Slot3>>;
using TableLog = absl::flat_hash_set<SlotLog, SlotHash, SlotEq, TableAllocator<SlotLog>>;
using TableBlock = absl::flat_hash_set<SlotBlock, SlotHash, SlotEq, TableAllocator<SlotBlock>>;
using TableLease = absl::flat_hash_set<SlotLease, SlotHash, SlotEq, TableAllocator<SlotLease>>;

inline constexpr int kExpiryShift = 10;  // 1024 ms per expiry unit

// Every slot's 32-bit expiry word also carries, in its low two bits, how much of its allowance the
// state had used when it was last written (checked, denied or peeked): what evicting it would
// give away. The levels are fractions of the limit (its capacity for buckets), used = limit -
// remaining of that write's result. Between writes a state only gets fresher, so the stored level
// is an upper bound. Eviction takes the lowest levels first and never a protected one (see
// Shard::FreeSafely and LimiterOptions::overflow).
inline constexpr int kLevelBits = 2;
inline constexpr uint32_t kLevelMask = (1u << kLevelBits) - 1;
inline constexpr uint32_t kLevelFresh = 0;  // used <= 1/8
inline constexpr uint32_t kLevelLight = 1;  // used <= 1/4
inline constexpr uint32_t kLevelHeavy = 2;  // used > 1/4, at the limit included: protected
inline constexpr uint32_t kLevelProtected = kLevelHeavy;  // this level and above are never evicted

// Inline and branch-free: every write computes it. (A state that denied a large cost with room
// left for smaller ones is rated by what it has used: that is what its eviction gives away.)
inline uint32_t UsageLevel(const LimitResult& r) {
  const int64_t used = r.limit - r.remaining;  // limit <= 2^40: the products cannot overflow
  return static_cast<uint32_t>(used * 8 > r.limit) + static_cast<uint32_t>(used * 4 > r.limit);
}

// Expiry times are stored as 30-bit counts of 1024 ms since the limiter's start, rounded up, above
// the usage level, so the sweep removes a state at most ~1 s after it became fresh-equivalent
// (never before) and the range covers 34 years. Comparing whole words orders by expiry first.
class ExpiryCodec {
 public:
  // The largest unit count; it means "beyond the range" (only dropped lazily or by eviction).
  static constexpr uint32_t kMaxUnits = UINT32_MAX >> kLevelBits;

  explicit ExpiryCodec(int64_t base_ms) : base_ms_(base_ms) {}
  ABSL_ATTRIBUTE_ALWAYS_INLINE uint32_t Encode(int64_t expiry_ms, uint32_t level) const {
    int64_t rel;
    uint32_t units;
    if (__builtin_sub_overflow(expiry_ms, base_ms_, &rel)) {
      units = expiry_ms < 0 ? 0 : kMaxUnits;
    } else if (rel <= 0) {
      units = 0;
    } else {
      const uint64_t u = (static_cast<uint64_t>(rel) + (1u << kExpiryShift) - 1) >> kExpiryShift;
      units = u >= kMaxUnits ? kMaxUnits : static_cast<uint32_t>(u);
    }
    return (units << kLevelBits) | level;
  }
  static uint32_t Level(uint32_t expiry) { return expiry & kLevelMask; }
  // The largest encoded value (of any level) that has expired at `now_ms`.
  uint32_t ExpiredAt(int64_t now_ms) const;
  // Upper bound of the time an encoded value stands for.
  int64_t Decode(uint32_t expiry) const;
  // Times in slots: relative to the base, saturated to 48 bits.
  ABSL_ATTRIBUTE_ALWAYS_INLINE int64_t ToRel(int64_t t) const {
    constexpr int64_t kMax = (int64_t{1} << 47) - 1;
    int64_t rel;
    if (__builtin_sub_overflow(t, base_ms_, &rel)) return t < 0 ? -kMax - 1 : kMax;
    return std::clamp<int64_t>(rel, -kMax - 1, kMax);
  }
  int64_t FromRel(int64_t rel) const { return base_ms_ + rel; }

 private:
  int64_t base_ms_;
};

inline constexpr size_t kHotPerShard = 4;  // hot entries per shard; a key's by its low bits

// The shard lock: a futex mutex whose word holds the lock bit (bit 0) and the number of parked
// waiters above it. Uncontended, lock and unlock are one atomic instruction each. A thread that
// finds it held spins briefly (the critical section is ~100 ns) before it registers as a waiter
// and parks in the kernel; unlock issues a wake-up only while a waiter is registered. Drepper's
// three-state mutex ("Futexes Are Tricky", mutex 3), which this replaces, cannot tell that the
// last waiter is gone: a thread that took the lock through the slow path leaves it marked
// contended, so every handoff after one conflict cost a futex wake-up. No wake-up can be lost:
// a waiter sleeps only while the word still shows the lock held with itself counted, and the
// unlock that ends that hold sees the count and wakes one waiter (which takes the lock or parks
// again behind the next holder, whose unlock wakes again). Linux only, like the project.
class ABSL_LOCKABLE ShardMutex {
 public:
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    uint32_t c = 0;
    if (ABSL_PREDICT_FALSE(!word_.compare_exchange_strong(c, kLocked, std::memory_order_acquire,
                                                          std::memory_order_relaxed))) {
      LockSlow();
    }
  }
  void unlock() ABSL_UNLOCK_FUNCTION() {
    if (ABSL_PREDICT_FALSE(word_.fetch_sub(kLocked, std::memory_order_release) != kLocked)) {
      WakeOne();
    }
  }
  // Tells the thread-safety analysis (tools/check-thread-safety) that the caller holds this
  // mutex: for code that locked a set of shards chosen at run time (LockShards, ImportState),
  // which the analysis cannot follow. Generates no code.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

  // How many times a contended lock() polls the word (with a pause instruction) before parking.
  static constexpr int kSpins = 100;

 private:
  static constexpr uint32_t kLocked = 1;
  static constexpr uint32_t kWaiter = 2;  // one parked (or about to park) thread
  void LockSlow();
  void WakeOne();

  std::atomic<uint32_t> word_{0};
};

// Holds a ShardMutex for a scope. Not std::lock_guard: the analysis sees through a lock type only
// when it is annotated, and libstdc++'s are not.
class ABSL_SCOPED_LOCKABLE ShardLock {
 public:
  explicit ShardLock(ShardMutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_.lock(); }
  ~ShardLock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  ShardLock(const ShardLock&) = delete;
  ShardLock& operator=(const ShardLock&) = delete;

 private:
  ShardMutex& mu_;
};

struct alignas(64) Shard {
  // Not absl::Mutex: the distribution's abseil build runs deadlock detection on every Lock,
  // which cost a third of a check. Not std::mutex: see ShardMutex.
  mutable ShardMutex mu;
  // Entry i's: the tag (hot::TagOf, below) of the key whose hot entry i (hot_keys.h) is live, 0
  // when that entry is not live. Written under `mu` only, where it is exact; read without it as a
  // hint, so a check of a key that no entry holds live reads this line, which its lock needs
  // anyway, and not the entries'. In the padding after `mu`: the shard keeps its size.
  mutable std::atomic<uint8_t> hot_tags[kHotPerShard] = {};
  Table2 two ABSL_GUARDED_BY(mu);     // token bucket, GCRA, fixed window, leaky bucket
  Table3 three ABSL_GUARDED_BY(mu);   // sliding window counter
  TableLog logs ABSL_GUARDED_BY(mu);  // sliding log
  // Never evicted (a blocked key stays blocked, a lease stays held); they count towards the
  // bounds, so a store full of them refuses new states instead.
  TableBlock blocks ABSL_GUARDED_BY(mu);  // running penalty blocks
  TableLease leases ABSL_GUARDED_BY(mu);  // concurrency leases
  size_t log_bytes ABSL_GUARDED_BY(mu) = 0;
  size_t lease_bytes ABSL_GUARDED_BY(mu) = 0;
  uint64_t evictions ABSL_GUARDED_BY(mu) = 0;
  uint64_t expired ABSL_GUARDED_BY(mu) = 0;
  uint64_t overflows ABSL_GUARDED_BY(mu) = 0;
  // After a search for room that came up short, the next one waits until the soonest expiry it
  // saw (`blocked_until`, encoded) or until `blocked_left` more new states were refused, so a
  // flood against a shard full of protected states costs an amortized ~16 slots per check, not a
  // scan of the shard. Writes that lower a state's level are seen by the next search.
  uint32_t blocked_until ABSL_GUARDED_BY(mu) = 0;
  uint32_t blocked_left ABSL_GUARDED_BY(mu) = 0;

  size_t Size() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return two.size() + three.size() + logs.size() + blocks.size() + leases.size();
  }
  // Bytes held: table slots (with control bytes) at their current capacity plus log and lease
  // buffers.
  size_t MemoryBytes() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Removes states whose coarse expiry is <= `expired_at` and blocks ended at `now_ms`, at most
  // `budget`; returns how many.
  size_t SweepExpired(uint32_t expired_at, int64_t now_ms, size_t budget)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Frees room for at least `needed` states where that is safe, never touching the keys in
  // `keep`: removes every state expired at `expired_at` (nothing is given away), then evicts states
  // below kLevelProtected, lowest level first and soonest expiry within a level, as many as still
  // needed but at least ~1/64 of the shard (one scan then serves the next inserts). Returns how
  // many were removed; `*soonest` receives the smallest expiry word among the states left that
  // are not kept (UINT32_MAX if none).
  size_t FreeSafely(size_t needed, uint32_t expired_at, const uint64_t* keep, size_t keep_count,
                    uint32_t* soonest) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Removes one state; true if it existed.
  bool Erase(StateShape kind, uint64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // When the running block of state `key` ends; `now_ms` when none runs (an ended block found on
  // the way is removed).
  int64_t BlockedUntil(uint64_t key, int64_t now_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Frees every log and lease buffer (destruction).
  void Clear() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
};
// Four cache lines: per-shard data that is not touched under the lock on every check lives
// elsewhere (Limiter::Impl's ShardBounds), and the array is part of Stats().memory_bytes.
static_assert(sizeof(Shard) <= 4 * 64);

// The shard's tags of its live hot entries (Shard::hot_tags; the entries are hot_keys.h's): one
// byte per entry, the live bit over seven bits of the key (not the low bits, which pick the
// entry, nor the top ones, which pick the shard). Equal tags do not prove the key is the entry's
// (hot::LiveWordFor does); unequal ones prove it is not, exactly under the lock and as a hint
// without it.
namespace hot {
inline uint32_t TagOf(uint64_t key) { return 0x80u | static_cast<uint32_t>((key >> 8) & 0x7f); }
inline uint32_t TagAt(const Shard& sh, uint64_t key) {
  return sh.hot_tags[key & (kHotPerShard - 1)].load(std::memory_order_relaxed);
}
// Under the lock (the only writer): the tag of the entry of `key` becomes `tag` (0: not live).
inline void SetTag(const Shard& sh, uint64_t key, uint32_t tag)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  sh.hot_tags[key & (kHotPerShard - 1)].store(static_cast<uint8_t>(tag), std::memory_order_relaxed);
}
}  // namespace hot

}  // namespace rl::internal

// Shard maintenance: sweeping expired state, evicting when a bound is reached, erasing; the tables'
// memory.
#include "store.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <new>
#include <type_traits>
#include <vector>

#include "absl/base/config.h"
#include "sliding_log.h"

namespace rl::internal {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
              std::atomic<uint32_t>::is_always_lock_free);

namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

void ShardMutex::LockSlow() {
  // Spin first: a holder that is running releases within a critical section's time, far less
  // than a park and wake-up (3-6 us). Polls with plain loads so the line stays shared meanwhile.
  for (int i = 0; i < kSpins; ++i) {
    uint32_t w = word_.load(std::memory_order_relaxed);
    if ((w & kLocked) == 0 && word_.compare_exchange_weak(w, w | kLocked, std::memory_order_acquire,
                                                          std::memory_order_relaxed)) {
      return;
    }
    CpuRelax();
  }
  // Register as a waiter, then take the lock when it is free (leaving the count in the same
  // step) or sleep while the word is exactly what was seen: held, with this thread counted.
  uint32_t w = word_.fetch_add(kWaiter, std::memory_order_relaxed) + kWaiter;
  for (;;) {
    if ((w & kLocked) == 0) {
      if (word_.compare_exchange_weak(w, (w - kWaiter) | kLocked, std::memory_order_acquire,
                                      std::memory_order_relaxed)) {
        return;
      }
      continue;  // w was reloaded by the failed exchange
    }
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAIT_PRIVATE, w, nullptr, nullptr,
            0);
    w = word_.load(std::memory_order_relaxed);
  }
}

void ShardMutex::WakeOne() {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
          0);
}

// Under AddressSanitizer every block comes from operator new, which it instruments (a mapped block
// has no redzones).
#ifdef ABSL_HAVE_ADDRESS_SANITIZER
constexpr size_t kMapFrom = SIZE_MAX;
#else
constexpr size_t kMapFrom = kMappedTableBytes;
#endif

namespace {
std::atomic<TableMapHook> g_table_map_hook{nullptr};
}  // namespace

void SetTableMapHookForTesting(TableMapHook hook) { g_table_map_hook.store(hook); }

void* TableAlloc(size_t bytes) {
  if (bytes < kMapFrom) return ::operator new(bytes);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  if (TableMapHook hook = g_table_map_hook.load(std::memory_order_relaxed)) hook(p, bytes, true);
  return p;
}

void TableFree(void* p, size_t bytes) {
  if (bytes < kMapFrom) {
    ::operator delete(p);
  } else {
    if (TableMapHook hook = g_table_map_hook.load(std::memory_order_relaxed)) hook(p, bytes, false);
    munmap(p, bytes);
  }
}

uint32_t ExpiryCodec::ExpiredAt(int64_t now_ms) const {
  const int128 rel = int128{now_ms} - base_ms_;
  if (rel < 0) return kLevelMask;  // a state encoded at unit 0 (of any level) has expired
  const int128 units = rel >> kExpiryShift;
  // kMaxUnits means "beyond the range": such state is only dropped lazily or by eviction.
  const uint32_t u = units >= kMaxUnits - 1 ? kMaxUnits - 1 : static_cast<uint32_t>(units);
  return (u << kLevelBits) | kLevelMask;
}

int64_t ExpiryCodec::Decode(uint32_t expiry) const {
  return Clamp64(int128{base_ms_} + (int128{expiry >> kLevelBits} << kExpiryShift));
}

size_t Shard::MemoryBytes() const {
  return two.capacity() * (sizeof(Slot2) + 1) + three.capacity() * (sizeof(Slot3) + 1) +
         logs.capacity() * (sizeof(SlotLog) + 1) + blocks.capacity() * (sizeof(SlotBlock) + 1) +
         leases.capacity() * (sizeof(SlotLease) + 1) + log_bytes + lease_bytes;
}

size_t Shard::SweepExpired(uint32_t expired_at, int64_t now_ms, size_t budget) {
  size_t removed = 0;
  for (auto it = blocks.begin(); it != blocks.end() && removed < budget;) {
    if (it->until <= now_ms) {
      blocks.erase(it++);
      ++removed;
    } else {
      ++it;
    }
  }
  for (auto it = leases.begin(); it != leases.end() && removed < budget;) {
    if (it->expiry <= expired_at) {
      lease_bytes -= LeaseBytes(it->leases);
      LeaseFree(it->leases);
      leases.erase(it++);
      ++removed;
    } else {
      ++it;
    }
  }
  for (auto it = two.begin(); it != two.end() && removed < budget;) {
    if (it->expiry <= expired_at) {
      two.erase(it++);
      ++removed;
    } else {
      ++it;
    }
  }
  for (auto it = three.begin(); it != three.end() && removed < budget;) {
    if (it->expiry <= expired_at) {
      three.erase(it++);
      ++removed;
    } else {
      ++it;
    }
  }
  for (auto it = logs.begin(); it != logs.end() && removed < budget;) {
    if (it->expiry <= expired_at) {
      log_bytes -= LogBytes(it->log);
      LogFree(it->log);
      logs.erase(it++);
      ++removed;
    } else {
      ++it;
    }
  }
  expired += removed;
  return removed;
}

size_t Shard::FreeSafely(size_t needed, uint32_t expired_at, const uint64_t* keep,
                         size_t keep_count, uint32_t* soonest) {
  struct Candidate {
    uint64_t order;  // level above expiry: lowest level first, soonest expiry within a level
    StateShape kind;
    uint64_t key;
  };
  std::vector<Candidate> candidates;
  auto kept = [&](uint64_t key) {
    return std::find(keep, keep + keep_count, key) != keep + keep_count;
  };
  size_t removed = 0;
  uint32_t least = UINT32_MAX;
  // Expired states go at once; the others are candidates unless protected or kept. Erasing does
  // not move the other elements of an absl table, so the iteration goes on.
  auto visit = [&](auto& table, StateShape kind) {
    mu.AssertHeld();  // a lambda is a function of its own to the analysis; FreeSafely holds it
    for (auto it = table.begin(); it != table.end();) {
      const uint64_t key = it->key;
      const uint32_t expiry = it->expiry;
      if (kept(key)) {
        ++it;
        continue;
      }
      if (expiry <= expired_at) {
        if constexpr (std::is_same_v<std::decay_t<decltype(table)>, TableLog>) {
          log_bytes -= LogBytes(it->log);
          LogFree(it->log);
        }
        table.erase(it++);
        ++removed;
        continue;
      }
      const uint32_t level = ExpiryCodec::Level(expiry);
      if (level < kLevelProtected) {
        candidates.push_back({(uint64_t{level} << 32) | expiry, kind, key});
      } else {
        least = std::min(least, expiry);
      }
      ++it;
    }
  };
  visit(two, StateShape::kTwoWord);
  visit(three, StateShape::kThreeWord);
  visit(logs, StateShape::kLog);
  expired += removed;
  size_t evicted = 0;
  if (removed < needed && !candidates.empty()) {
    // Evicting a batch amortizes the scan: the next ~size/64 inserts find room without one.
    const size_t n = std::min(candidates.size(), std::max(needed - removed, Size() / 64 + 1));
    std::nth_element(candidates.begin(), candidates.begin() + (n - 1), candidates.end(),
                     [](const Candidate& x, const Candidate& y) { return x.order < y.order; });
    for (size_t i = 0; i < n; ++i) Erase(candidates[i].kind, candidates[i].key);
    for (size_t i = n; i < candidates.size(); ++i) {
      least = std::min(least, static_cast<uint32_t>(candidates[i].order));
    }
    evicted = n;
    evictions += n;
  } else {
    for (const Candidate& c : candidates) least = std::min(least, static_cast<uint32_t>(c.order));
  }
  *soonest = least;
  return removed + evicted;
}

bool Shard::Erase(StateShape kind, uint64_t key) {
  switch (kind) {
    case StateShape::kTwoWord:
      return two.erase(key) > 0;
    case StateShape::kThreeWord:
      return three.erase(key) > 0;
    case StateShape::kLog: {
      auto it = logs.find(key);
      if (it == logs.end()) return false;
      log_bytes -= LogBytes(it->log);
      LogFree(it->log);
      logs.erase(it);
      return true;
    }
    case StateShape::kLeases: {
      auto it = leases.find(key);
      if (it == leases.end()) return false;
      lease_bytes -= LeaseBytes(it->leases);
      LeaseFree(it->leases);
      leases.erase(it);
      return true;
    }
  }
  return false;
}

int64_t Shard::BlockedUntil(uint64_t key, int64_t now_ms) {
  if (blocks.empty()) return now_ms;
  auto it = blocks.find(key);
  if (it == blocks.end()) return now_ms;
  if (it->until > now_ms) return it->until;
  blocks.erase(it);
  ++expired;
  return now_ms;
}

void Shard::Clear() {
  for (const SlotLog& s : logs) LogFree(s.log);
  for (const SlotLease& s : leases) LeaseFree(s.leases);
  leases.clear();
  blocks.clear();
  lease_bytes = 0;
  logs.clear();
  two.clear();
  three.clear();
  log_bytes = 0;
}

}  // namespace rl::internal

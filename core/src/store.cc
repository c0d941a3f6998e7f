// Shard maintenance: sweeping expired state, evicting when a bound is reached, erasing.
#include "store.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "sliding_log.h"

namespace rl::internal {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
              std::atomic<uint32_t>::is_always_lock_free);

void ShardMutex::LockSlow(uint32_t c) {
  // Mark the lock contended (2) so its holder wakes someone on unlock; whoever takes it this way
  // keeps it marked, since other sleepers may remain.
  if (c != 2) c = state_.exchange(2, std::memory_order_acquire);
  while (c != 0) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&state_), FUTEX_WAIT_PRIVATE, 2, nullptr,
            nullptr, 0);
    c = state_.exchange(2, std::memory_order_acquire);
  }
}

void ShardMutex::WakeOne() {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&state_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
          0);
}

uint32_t ExpiryCodec::ExpiredAt(int64_t now_ms) const {
  const int128 rel = int128{now_ms} - base_ms_;
  if (rel < 0) return 0;
  const int128 units = rel >> kExpiryShift;
  // UINT32_MAX means "beyond the range": such state is only dropped lazily or by eviction.
  return units >= UINT32_MAX - 1 ? UINT32_MAX - 1 : static_cast<uint32_t>(units);
}

int64_t ExpiryCodec::Decode(uint32_t expiry) const {
  return Clamp64(int128{base_ms_} + (int128{expiry} << kExpiryShift));
}

size_t Shard::MemoryBytes() const {
  return two.capacity() * (sizeof(Slot2) + 1) + three.capacity() * (sizeof(Slot3) + 1) +
         logs.capacity() * (sizeof(SlotLog) + 1) + log_bytes;
}

size_t Shard::SweepExpired(uint32_t expired_at, size_t budget) {
  size_t removed = 0;
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

size_t Shard::EvictSoonest(size_t at_least, const uint64_t* keep, size_t keep_count) {
  struct Candidate {
    uint32_t expiry;
    TableKind kind;
    uint64_t key;
  };
  std::vector<Candidate> all;
  all.reserve(Size());
  auto kept = [&](uint64_t key) {
    return std::find(keep, keep + keep_count, key) != keep + keep_count;
  };
  for (const Slot2& s : two) {
    if (!kept(s.key)) all.push_back({s.expiry, TableKind::kTwoWord, s.key});
  }
  for (const Slot3& s : three) {
    if (!kept(s.key)) all.push_back({s.expiry, TableKind::kThreeWord, s.key});
  }
  for (const SlotLog& s : logs) {
    if (!kept(s.key)) all.push_back({s.expiry, TableKind::kLog, s.key});
  }
  // Evicting a batch amortizes the scan: the next ~size/64 inserts find room without one.
  const size_t n = std::min(all.size(), std::max(at_least, Size() / 64 + 1));
  if (n == 0) return 0;
  std::nth_element(all.begin(), all.begin() + (n - 1), all.end(),
                   [](const Candidate& x, const Candidate& y) { return x.expiry < y.expiry; });
  for (size_t i = 0; i < n; ++i) Erase(all[i].kind, all[i].key);
  evictions += n;
  return n;
}

bool Shard::Erase(TableKind kind, uint64_t key) {
  switch (kind) {
    case TableKind::kTwoWord:
      return two.erase(key) > 0;
    case TableKind::kThreeWord:
      return three.erase(key) > 0;
    case TableKind::kLog: {
      auto it = logs.find(key);
      if (it == logs.end()) return false;
      log_bytes -= LogBytes(it->log);
      LogFree(it->log);
      logs.erase(it);
      return true;
    }
  }
  return false;
}

void Shard::Clear() {
  for (const SlotLog& s : logs) LogFree(s.log);
  logs.clear();
  two.clear();
  three.clear();
  log_bytes = 0;
}

}  // namespace rl::internal

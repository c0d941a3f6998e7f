// What core_bench and check_icount share, so their figures describe the same workload: the
// 40-byte keys, the order they are visited in, the bare map's value type, and the floors' shapes
// (a map shard under its mutex, found with a hash computed once; a value updated by a
// compare-and-swap).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"

namespace rl::bench {

// n keys shaped like "{tenant}:{route}:{scope}", cut or padded to 40 bytes. The cut drops the
// last digits of the longest keys, so a few of them coincide (BM_ImportState builds its own).
inline std::vector<std::string> MakeKeys(size_t n) {
  std::vector<std::string> keys;
  keys.reserve(n);
  char buf[64];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), "tenant-%06zu:route-/api/v1/orders:%08zu", i % 997, i);
    std::string k(buf);
    k.resize(40, '.');
    keys.push_back(std::move(k));
  }
  return keys;
}

// A visiting order that jumps around the key space (so neither side enjoys sequential locality)
// and gives thread t the indices congruent to t modulo the thread count.
inline size_t Index(size_t i, size_t n) { return (i * 2654435761u) % n; }

// The bare map's value: two words, like a token-bucket state.
struct BareState {
  int64_t a = 0;
  int64_t b = 0;
};

// The locked floor's map shard: its keys' hash is computed once (it also picks the shard) and
// handed to the map's find through a transparent hasher, so the floor costs the lock and nothing
// else beyond the bare map.
struct Hashed {
  std::string_view key;
  size_t hash;
};
struct PreHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return absl::Hash<std::string_view>{}(s); }
  size_t operator()(const Hashed& h) const { return h.hash; }
};
struct PreEq {
  using is_transparent = void;
  static std::string_view View(std::string_view s) { return s; }
  static std::string_view View(const Hashed& h) { return h.key; }
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return View(a) == View(b);
  }
};
struct alignas(64) LockedShard {
  std::mutex mu;
  absl::flat_hash_map<std::string, BareState, PreHash, PreEq> map;
};
inline constexpr size_t kFloorShards = 256;  // picked by the hash's top byte
inline std::unique_ptr<LockedShard[]> MakeLockedFloor(const std::vector<std::string>& keys) {
  auto shards = std::make_unique<LockedShard[]>(kFloorShards);
  for (const std::string& k : keys) shards[PreHash{}(k) >> 56].map[k] = BareState{};
  return shards;
}
// One update of the locked floor: the key hashed once, its shard locked, the bare map's update.
inline const BareState& LockedFloorUpdate(LockedShard* shards, const std::string& k, size_t i) {
  const Hashed h{k, PreHash{}(k)};
  LockedShard& shard = shards[h.hash >> 56];
  std::lock_guard<std::mutex> lock(shard.mu);
  BareState& s = shard.map.find(h)->second;
  s.a += 1;
  s.b = static_cast<int64_t>(i);
  return s;
}
// The CAS floor's value: two words like BareState, the first one atomic (copied only while the
// map is built, single-threaded).
struct CasState {
  std::atomic<int64_t> a{0};
  int64_t b = 0;
  CasState() = default;
  CasState(const CasState& o) : a(o.a.load(std::memory_order_relaxed)), b(o.b) {}
  CasState& operator=(const CasState& o) {
    a.store(o.a.load(std::memory_order_relaxed), std::memory_order_relaxed);
    b = o.b;
    return *this;
  }
};

}  // namespace rl::bench

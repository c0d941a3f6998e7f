// See compact_value.h: one token bucket inside a key's value pointer.
#include "compact_value.h"

#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "redis_module_api.h"
#include "rl/key_state.h"

namespace rl::module {
namespace {

constexpr int kIndexBits = 8;
constexpr int kTimeBits = 37;
constexpr int kDeficitBits = 18;
static_assert(1 + kIndexBits + kTimeBits + kDeficitBits == 64);
constexpr int kTimeShift = 1 + kIndexBits;
constexpr int kDeficitShift = kTimeShift + kTimeBits;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
constexpr uint64_t kTimeMask = (uint64_t{1} << kTimeBits) - 1;
constexpr uint64_t kMaxDeficit = (uint64_t{1} << kDeficitBits) - 1;
// Boxed: the box's word is time | deficit << kTimeBits; the pointer keeps its index on top.
constexpr int kBoxDeficitBits = 64 - kTimeBits;
constexpr uint64_t kMaxBoxDeficit = (uint64_t{1} << kBoxDeficitBits) - 1;
constexpr int kBoxIndexShift = 48;
constexpr uint64_t kAddressMask = ((uint64_t{1} << kBoxIndexShift) - 1) & ~uint64_t{7};
constexpr size_t kBoxBytes = 8;
// Index kIndexMask is never handed out, so no word is all ones.
constexpr size_t kMaxLimits = kIndexMask;

// One interned limit: the state's identity and the numbers its expiry is computed from.
struct Interned {
  uint64_t scope_id;
  int64_t window_ms;
  int64_t capacity;
  int64_t rate;   // units gained per ms (the limit), see TokenBucketExact in algorithms.h
  int64_t full;   // capacity * window: a full bucket's units
  int64_t grain;  // gcd(window, rate): every bucket of this limit is a multiple of it
};

struct LimitKey {
  uint64_t scope_id;
  int64_t window_ms, capacity, rate;
  friend bool operator==(const LimitKey&, const LimitKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const LimitKey& k) {
    return H::combine(std::move(h), k.scope_id, k.window_ms, k.capacity, k.rate);
  }
};
struct IdentityKey {
  uint64_t scope_id;
  int64_t window_ms;
  friend bool operator==(const IdentityKey&, const IdentityKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const IdentityKey& k) {
    return H::combine(std::move(h), k.scope_id, k.window_ms);
  }
};

// Commands and callbacks run on Redis's main thread (an RDB child reads a copy): no lock.
int64_t g_base_ms = 0;
std::vector<Interned> g_table;
absl::flat_hash_map<LimitKey, uint8_t> g_by_limit;
// Every entry of a (scope, window), for a state that comes with no limit (a load, a copy, a
// call under another scope): each is tried, the latest first.
absl::flat_hash_map<IdentityKey, std::vector<uint8_t>> g_by_identity;

int64_t BitLength(int64_t v) { return 64 - __builtin_clzll(static_cast<uint64_t>(v)); }

// The table index for `limit` under `scope_id`, or -1 (an algorithm or numbers this form does not
// hold, or a full table).
int Intern(uint64_t scope_id, const Limit& limit) {
  const LimitKey key{scope_id, limit.window_ms, limit.capacity(), limit.limit};
  // The last limit found: a replica's RL.PUT names its numbers on every write, mostly the same.
  // (Entries are never removed, so the index stays the limit's.)
  static LimitKey last{};
  static int last_index = -1;
  if (last_index >= 0 && key == last) return last_index;
  if (auto it = g_by_limit.find(key); it != g_by_limit.end()) {
    last = key;
    return last_index = it->second;
  }
  // The bucket's exact form (units need no shift): capacity * window < 2^56.
  if (limit.limit <= 0 || limit.window_ms <= 0 || limit.capacity() <= 0 ||
      BitLength(limit.capacity()) + BitLength(limit.window_ms) > 56 ||
      g_table.size() >= kMaxLimits) {
    return -1;
  }
  const int index = static_cast<int>(g_table.size());
  g_table.push_back(Interned{scope_id, limit.window_ms, limit.capacity(), limit.limit,
                             limit.capacity() * limit.window_ms,
                             std::gcd(limit.window_ms, limit.limit)});
  g_by_limit.emplace(key, static_cast<uint8_t>(index));
  g_by_identity[IdentityKey{scope_id, limit.window_ms}].push_back(static_cast<uint8_t>(index));
  return index;
}

size_t IndexOf(const void* packed) {
  return (static_cast<uint64_t>(reinterpret_cast<uintptr_t>(packed)) >> 1) & kIndexMask;
}

bool Matches(const Interned& e, uint64_t scope_id, const Limit& limit) {
  return e.scope_id == scope_id && e.window_ms == limit.window_ms &&
         e.capacity == limit.capacity() && e.rate == limit.limit;
}

int64_t ExpiryOf(const Interned& e, int64_t time, int64_t deficit) {
  return time + (deficit + e.rate - 1) / e.rate;
}

uint64_t Bits(const void* value) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(value));
}
void* AsValue(uint64_t bits) { return reinterpret_cast<void*>(static_cast<uintptr_t>(bits)); }
uint64_t* BoxOf(const void* value) {
  return static_cast<uint64_t*>(AsValue(Bits(value) & kAddressMask));
}

size_t IndexOfValue(const void* value) {
  return IsInline(value) ? IndexOf(value) : static_cast<size_t>(Bits(value) >> kBoxIndexShift);
}

// `s` in entry `index`'s small form, or null. A boxed result reuses `previous`'s box if it has
// one.
void* PackWith(const SingleState& s, int index, const void* previous) {
  if (index < 0) return nullptr;
  const Interned& e = g_table[static_cast<size_t>(index)];
  if (s.algorithm != Algorithm::kTokenBucket || s.scope_id != e.scope_id ||
      s.window_ms != e.window_ms || s.word < 0 || s.word > e.full) {
    return nullptr;
  }
  const int64_t deficit = e.full - s.word;
  if (deficit % e.grain != 0) return nullptr;
  const uint64_t grains = static_cast<uint64_t>(deficit / e.grain);
  int64_t offset;
  if (__builtin_sub_overflow(s.time, g_base_ms, &offset) || offset < 0 ||
      static_cast<uint64_t>(offset) > kTimeMask) {
    return nullptr;
  }
  // A stored expiry that is not the bucket's own (written under other numbers) has no small form.
  if (s.expiry_ms != ExpiryOf(e, s.time, deficit)) return nullptr;
  if (grains <= kMaxDeficit) {
    return AsValue(1 | static_cast<uint64_t>(index) << 1 |
                   static_cast<uint64_t>(offset) << kTimeShift | grains << kDeficitShift);
  }
  if (grains > kMaxBoxDeficit) return nullptr;
  uint64_t* box =
      IsBoxed(previous) ? BoxOf(previous) : static_cast<uint64_t*>(RedisModule_Alloc(kBoxBytes));
  if ((Bits(box) & ~kAddressMask) != 0) {  // beyond the 48-bit user address space: no tags
    RedisModule_Free(box);
    return nullptr;
  }
  *box = static_cast<uint64_t>(offset) | grains << kTimeBits;
  return AsValue(Bits(box) | 2 | static_cast<uint64_t>(index) << kBoxIndexShift);
}

}  // namespace

void InitPacking(int64_t now_ms) { g_base_ms = now_ms - (int64_t{1} << (kTimeBits - 1)); }

void* Pack(const SingleState& s, std::string_view scope, absl::Span<const Limit> limits,
           const void* previous) {
  if (s.algorithm != Algorithm::kTokenBucket) return nullptr;
  const int before = IsPacked(previous) ? static_cast<int>(IndexOfValue(previous)) : -1;
  for (const Limit& limit : limits) {
    if (limit.algorithm != Algorithm::kTokenBucket || limit.window_ms != s.window_ms) continue;
    // The usual case, a key checked again under the same limit: no lookup.
    if (before >= 0 && Matches(g_table[static_cast<size_t>(before)], s.scope_id, limit)) {
      return PackWith(s, before, previous);
    }
    if (ScopeId(scope) != s.scope_id) break;
    return PackWith(s, Intern(s.scope_id, limit), previous);
  }
  if (before >= 0) {
    if (void* packed = PackWith(s, before, previous)) return packed;
  }
  const auto it = g_by_identity.find(IdentityKey{s.scope_id, s.window_ms});
  if (it == g_by_identity.end()) return nullptr;
  for (auto index = it->second.rbegin(); index != it->second.rend(); ++index) {
    if (*index == before) continue;  // tried above
    if (void* packed = PackWith(s, *index, previous)) return packed;
  }
  return nullptr;
}

void* Pack(const SingleState& s) { return Pack(s, {}, {}, nullptr); }

bool PackedNumbers(const void* value, int64_t* capacity, int64_t* rate) {
  if (!IsPacked(value)) return false;
  const Interned& e = g_table[IndexOfValue(value)];
  *capacity = e.capacity;
  *rate = e.rate;
  return true;
}

void* PackAs(const SingleState& s, int64_t capacity, int64_t rate) {
  if (s.algorithm != Algorithm::kTokenBucket || capacity <= 0 || rate <= 0 ||
      capacity > kMaxLimit || rate > kMaxLimit) {
    return nullptr;
  }
  Limit limit;
  limit.algorithm = Algorithm::kTokenBucket;
  limit.limit = rate;
  limit.burst = capacity;
  limit.window_ms = s.window_ms;
  return PackWith(s, Intern(s.scope_id, limit), nullptr);
}

SingleState Unpack(const void* value) {
  const Interned& e = g_table[IndexOfValue(value)];
  uint64_t offset, grains;
  if (IsInline(value)) {
    offset = (Bits(value) >> kTimeShift) & kTimeMask;
    grains = Bits(value) >> kDeficitShift;
  } else {
    const uint64_t word = *BoxOf(value);
    offset = word & kTimeMask;
    grains = word >> kTimeBits;
  }
  const int64_t deficit = static_cast<int64_t>(grains) * e.grain;
  SingleState s;
  s.scope_id = e.scope_id;
  s.algorithm = Algorithm::kTokenBucket;
  s.window_ms = e.window_ms;
  s.time = g_base_ms + static_cast<int64_t>(offset);
  s.word = e.full - deficit;
  s.expiry_ms = ExpiryOf(e, s.time, deficit);
  return s;
}

namespace {
void* g_spare = nullptr;  // one block kept between commands
}  // namespace

void* UnpackToBlock(const void* value) {
  void* block =
      g_spare != nullptr ? std::exchange(g_spare, nullptr) : RedisModule_Alloc(kSingleBlockBytes);
  WriteSingleBlock(block, Unpack(value));
  return block;
}

bool KeepsBlock(const void* block) {
  if (g_spare != nullptr || block == nullptr) return false;
  g_spare = const_cast<void*>(block);
  return true;
}

void FreeBox(const void* value) {
  if (IsBoxed(value)) RedisModule_Free(BoxOf(value));
}

bool SameBox(const void* a, const void* b) {
  return IsBoxed(a) && IsBoxed(b) && BoxOf(a) == BoxOf(b);
}

size_t PackedBytes(const void* value) { return IsBoxed(value) ? kBoxBytes : 0; }

}  // namespace rl::module

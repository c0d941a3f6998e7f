// Lease sets and lease ids (see leases.h).
#include "leases.h"

#include <sys/random.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "algorithms.h"
#include "state_alloc.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rl::internal {

// A header and `cap` (nonce, expiry) pairs, `count` of them in use, in no particular order.
struct LeaseBuf {
  uint32_t count;
  uint32_t cap;

  struct Entry {
    uint64_t nonce;
    int64_t expiry;
  };
  Entry* entries() { return reinterpret_cast<Entry*>(this + 1); }
  const Entry* entries() const { return reinterpret_cast<const Entry*>(this + 1); }
};

namespace {

LeaseBuf* Allocate(uint32_t cap) {
  LeaseBuf* buf =
      static_cast<LeaseBuf*>(StateAlloc(sizeof(LeaseBuf) + size_t{cap} * sizeof(LeaseBuf::Entry)));
  buf->count = 0;
  buf->cap = cap;
  return buf;
}

void Prune(LeaseBuf* buf, int64_t now_ms) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < buf->count; ++i) {
    if (buf->entries()[i].expiry > now_ms) buf->entries()[kept++] = buf->entries()[i];
  }
  buf->count = kept;
}

}  // namespace

LimitResult LeaseEvaluate(const LeaseBuf* buf, const Limit& limit, int64_t now_ms,
                          int64_t* expiry_ms) {
  std::vector<int64_t> live;
  if (buf != nullptr) {
    for (uint32_t i = 0; i < buf->count; ++i) {
      if (buf->entries()[i].expiry > now_ms) live.push_back(buf->entries()[i].expiry);
    }
  }
  const int64_t held = static_cast<int64_t>(live.size());
  const int64_t latest = live.empty() ? now_ms : *std::max_element(live.begin(), live.end());
  LimitResult r;
  r.limit = limit.limit;
  r.window_ms = limit.window_ms;
  *expiry_ms = latest;
  if (held < limit.limit) {
    r.allowed = true;
    r.remaining = limit.limit - held - 1;
    r.reset_after_ms = std::max(latest - now_ms, limit.window_ms);
  } else {
    // Denied until enough leases end that one more fits (a lowered limit may need several);
    // a release may come sooner, which only a retry can tell.
    r.allowed = false;
    r.remaining = 0;
    const size_t need = static_cast<size_t>(held - limit.limit);  // index of the one to wait for
    std::nth_element(live.begin(), live.begin() + need, live.end());
    r.retry_after_ms = live[need] - now_ms;
    r.reset_after_ms = latest - now_ms;
  }
  return r;
}

LeaseBuf* LeaseAdd(LeaseBuf* buf, uint64_t nonce, int64_t expiry_ms, int64_t now_ms) {
  if (buf == nullptr) buf = Allocate(2);
  Prune(buf, now_ms);
  if (buf->count == buf->cap) {
    const uint32_t cap = std::max<uint32_t>(4, buf->cap + buf->cap / 2);
    LeaseBuf* grown = Allocate(cap);
    grown->count = buf->count;
    std::memcpy(grown->entries(), buf->entries(), sizeof(LeaseBuf::Entry) * buf->count);
    StateFree(buf);
    buf = grown;
  }
  buf->entries()[buf->count++] = {nonce, expiry_ms};
  return buf;
}

bool LeaseRemove(LeaseBuf* buf, uint64_t nonce, int64_t now_ms) {
  if (buf == nullptr) return false;
  Prune(buf, now_ms);
  for (uint32_t i = 0; i < buf->count; ++i) {
    if (buf->entries()[i].nonce == nonce) {
      buf->entries()[i] = buf->entries()[--buf->count];
      return true;
    }
  }
  return false;
}

size_t LeaseCount(const LeaseBuf* buf) { return buf == nullptr ? 0 : buf->count; }

int64_t LeaseExpiry(const LeaseBuf* buf, int64_t now_ms) {
  int64_t latest = now_ms;
  if (buf != nullptr) {
    for (uint32_t i = 0; i < buf->count; ++i) latest = std::max(latest, buf->entries()[i].expiry);
  }
  return latest;
}

size_t LeaseBytes(const LeaseBuf* buf) {
  return buf == nullptr ? 0 : sizeof(LeaseBuf) + size_t{buf->cap} * sizeof(LeaseBuf::Entry);
}

void LeaseFree(LeaseBuf* buf) { StateFree(buf); }

LeaseBuf* LeaseClone(const LeaseBuf* buf) {
  if (buf == nullptr) return nullptr;
  LeaseBuf* copy = Allocate(std::max<uint32_t>(buf->count, 1));
  copy->count = buf->count;
  std::memcpy(copy->entries(), buf->entries(), sizeof(LeaseBuf::Entry) * buf->count);
  return copy;
}

void LeaseEntries(const LeaseBuf* buf, std::vector<std::pair<uint64_t, int64_t>>* out) {
  if (buf == nullptr) return;
  for (uint32_t i = 0; i < buf->count; ++i) {
    out->emplace_back(buf->entries()[i].nonce, buf->entries()[i].expiry);
  }
}

LeaseBuf* LeaseFromEntries(const std::vector<std::pair<uint64_t, int64_t>>& entries) {
  if (entries.empty()) return nullptr;
  LeaseBuf* buf = Allocate(static_cast<uint32_t>(entries.size()));
  for (const auto& [nonce, expiry] : entries) buf->entries()[buf->count++] = {nonce, expiry};
  return buf;
}

// ---- Lease ids ----

namespace {

constexpr size_t kIdDigits = 40;  // nonce 16, scope 16, tag 8

uint32_t KeyTag(std::string_view key, uint64_t scope_id, uint64_t nonce) {
  return static_cast<uint32_t>(
      XXH3_64bits_withSeed(key.data(), key.size(), nonce ^ (scope_id * 0x9E3779B97F4A7C15ull)));
}

void PutHex(uint64_t v, int digits, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = digits - 1; i >= 0; --i) out->push_back(kHex[(v >> (4 * i)) & 0xf]);
}

bool GetHex(std::string_view s, uint64_t* v) {
  uint64_t x = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return false;
    }
    x = (x << 4) | static_cast<uint64_t>(d);
  }
  *v = x;
  return true;
}

// Nonces come in batches from getrandom, so an acquire rarely makes a system call.
struct NoncePool {
  uint64_t words[32];
  size_t left = 0;
};

}  // namespace

uint64_t NewLeaseNonce() {
  thread_local NoncePool pool;
  for (;;) {
    if (pool.left == 0) {
      const ssize_t got = getrandom(pool.words, sizeof(pool.words), 0);
      if (got == static_cast<ssize_t>(sizeof(pool.words))) {
        pool.left = std::size(pool.words);
      } else {
        // No kernel CSPRNG (an old kernel or a seccomp filter): the C++ library's device.
        std::random_device rd;
        for (uint64_t& w : pool.words) w = (uint64_t{rd()} << 32) ^ rd();
        pool.left = std::size(pool.words);
      }
    }
    const uint64_t nonce = pool.words[--pool.left];
    if (nonce != 0) return nonce;
  }
}

std::string FormatLeaseId(uint64_t scope_id, std::string_view key, uint64_t nonce) {
  std::string id;
  id.reserve(kIdDigits);
  PutHex(nonce, 16, &id);
  PutHex(scope_id, 16, &id);
  PutHex(KeyTag(key, scope_id, nonce), 8, &id);
  return id;
}

absl::StatusOr<LeaseId> ParseLeaseId(std::string_view id, std::string_view key) {
  LeaseId out{};
  uint64_t tag = 0;
  if (id.size() != kIdDigits || !GetHex(id.substr(0, 16), &out.nonce) ||
      !GetHex(id.substr(16, 16), &out.scope_id) || !GetHex(id.substr(32, 8), &tag) ||
      out.nonce == 0) {
    return absl::InvalidArgumentError(
        "invalid lease id (expected the 40 hex digits RL.ACQUIRE returned)");
  }
  if (tag != KeyTag(key, out.scope_id, out.nonce)) {
    return absl::InvalidArgumentError("lease id was issued for another key");
  }
  return out;
}

}  // namespace rl::internal

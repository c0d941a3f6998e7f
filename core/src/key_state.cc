// rl::KeyState: one key's limit states in one heap block (key_state_block.h), checked by the
// Limiter's own pipeline (pipeline.h) over the block as its store (key_state_store.h). The
// encoding is in key_state_codec.cc.
#include "rl/key_state.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "carry.h"
#include "key_state_block.h"
#include "key_state_store.h"
#include "leases.h"
#include "sliding_log.h"
#include "state_alloc.h"
#include "step.h"
#include "store.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rl {

using internal::AdjustOp;
using internal::LeaseBuf;
using internal::LogBuf;
using internal::StateShape;
using internal::ThreeWordState;
using internal::TwoWordState;
using namespace internal::key_state;  // NOLINT: the block layout's small helpers

namespace internal {
namespace {
StateAllocator g_allocator = {&std::malloc, &std::realloc, &std::free};
}  // namespace

void* StateAlloc(size_t bytes) {
  void* p = g_allocator.alloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* StateRealloc(void* p, size_t bytes) {
  void* q = g_allocator.realloc(p, bytes);
  if (q == nullptr) throw std::bad_alloc();
  return q;
}
void StateFree(void* p) {
  if (p != nullptr) g_allocator.free(p);
}
}  // namespace internal

void SetStateAllocator(const StateAllocator& allocator) { internal::g_allocator = allocator; }

uint64_t ScopeId(std::string_view scope) {
  if (scope.empty()) return 0;
  const uint64_t h = XXH3_64bits(scope.data(), scope.size());
  return h == 0 ? 1 : h;
}

namespace {

using Op = internal::RunOp;
using internal::key_state::BlockStore;

// Limiter::Impl::Run over one key's block (the same pipeline, pipeline.h): a check, or an acquire
// (which adds lease `nonce`; 0 only in a replay of an acquire that took no lease, which then must
// not take one). `*changed` is set whenever the stored bytes differ afterwards, even with an
// error or a denial (runs pruned from a log, entries dropped as fresh): rl.so replicates the
// operation itself, so a replica replaying it must reach the very same bytes.
absl::StatusOr<Decision> Run(void*& block, Op op, std::string_view scope,
                             absl::Span<const Limit> limits, int64_t cost, int64_t now_ms,
                             uint64_t nonce, bool* leased, bool* changed) {
  *changed = false;
  absl::StatusOr<Decision> out(absl::in_place, kUnfilledResults);
  if (op == Op::kAcquire || ABSL_PREDICT_FALSE(!internal::CheckValid(limits, cost))) {
    absl::Status s = op == Op::kCheck ? internal::ValidateCheck(limits, cost)
                                      : internal::ValidateAcquire(limits, cost);
    if (!s.ok()) {
      out = std::move(s);
      return out;
    }
  }
  BlockStore store(block, ScopeId(scope), now_ms, nonce, /*read_only=*/false, changed);
  if (op == Op::kAcquire) {
    internal::RunChecks<Op::kAcquire, 0>(store, limits, cost, nonce, leased, *out);
    internal::MarkLeases(limits, *out);
  } else {
    internal::RunChecks<Op::kCheck, 0>(store, limits, cost, nonce, leased, *out);
  }
  if (!store.status().ok()) out = store.status();
  return out;
}

}  // namespace

KeyState::~KeyState() {
  Block b{static_cast<char*>(block_)};
  if (b.p == nullptr) return;
  for (size_t off = kHeaderBytes; off < b.bytes(); off += b.size_at(off)) b.FreePayload(off);
  internal::StateFree(b.p);
}

KeyState::KeyState(KeyState&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}

KeyState& KeyState::operator=(KeyState&& other) noexcept {
  if (this != &other) {
    KeyState old(std::move(*this));
    block_ = std::exchange(other.block_, nullptr);
  }
  return *this;
}

size_t KeyState::size() const { return Block{static_cast<char*>(block_)}.count(); }

int64_t KeyState::ExpiryMs() const {
  const Block b{static_cast<char*>(block_)};
  int64_t latest = INT64_MIN;
  for (size_t off = kHeaderBytes; off < b.bytes(); off += b.size_at(off)) {
    latest = std::max(latest, b.expiry(off));
  }
  return latest;
}

size_t KeyState::MemoryBytes() const {
  const Block b{static_cast<char*>(block_)};
  size_t bytes = b.bytes();
  for (size_t off = kHeaderBytes; off < b.bytes(); off += b.size_at(off)) {
    if (b.has_log(off)) bytes += internal::LogBytes(b.log(off));
    if (b.has_leases(off)) bytes += internal::LeaseBytes(b.leases(off));
  }
  return bytes;
}

absl::StatusOr<Decision> KeyState::Peek(std::string_view scope, absl::Span<const Limit> limits,
                                        int64_t cost, int64_t now_ms) const {
  absl::StatusOr<Decision> out(absl::in_place, kUnfilledResults);
  if (ABSL_PREDICT_FALSE(!internal::CheckValid(limits, cost))) {
    absl::Status s = internal::ValidatePeek(limits, cost);
    if (!s.ok()) {
      out = std::move(s);
      return out;
    }
  }
  // Read-only: the block is neither written nor pruned (see BlockStore).
  void* block = block_;
  bool changed = false;
  BlockStore store(block, ScopeId(scope), now_ms, 0, /*read_only=*/true, &changed);
  internal::RunChecks<Op::kPeek, 0>(store, limits, cost, 0, nullptr, *out);
  internal::MarkLeases(limits, *out);
  return out;
}

absl::StatusOr<Decision> KeyState::Check(std::string_view scope, absl::Span<const Limit> limits,
                                         int64_t cost, int64_t now_ms, bool* changed) {
  bool leased = false;
  return Run(block_, Op::kCheck, scope, limits, cost, now_ms, 0, &leased, changed);
}

absl::StatusOr<Decision> KeyState::Acquire(std::string_view scope, std::string_view key,
                                           absl::Span<const Limit> limits, int64_t cost,
                                           int64_t now_ms, std::string* lease_id, bool* changed) {
  lease_id->clear();
  const uint64_t nonce = internal::NewLeaseNonce();
  bool leased = false;
  absl::StatusOr<Decision> d =
      Run(block_, Op::kAcquire, scope, limits, cost, now_ms, nonce, &leased, changed);
  if (d.ok() && leased) *lease_id = internal::FormatLeaseId(ScopeId(scope), key, nonce);
  return d;
}

absl::StatusOr<Decision> KeyState::AcquireAs(std::string_view scope, std::string_view key,
                                             absl::Span<const Limit> limits, int64_t cost,
                                             int64_t now_ms, std::string_view lease_id,
                                             bool* changed) {
  *changed = false;
  uint64_t nonce = 0;
  if (!lease_id.empty()) {
    absl::StatusOr<internal::LeaseId> id = internal::ParseLeaseId(lease_id, key);
    if (!id.ok()) return id.status();
    if (id->scope_id != ScopeId(scope)) {
      return absl::InvalidArgumentError("lease id was issued for another policy");
    }
    nonce = id->nonce;
  }
  bool leased = false;
  return Run(block_, Op::kAcquire, scope, limits, cost, now_ms, nonce, &leased, changed);
}

}  // namespace rl

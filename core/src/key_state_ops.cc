// rl::KeyState's operations besides a check, peek or acquire (key_state.cc): releasing a lease,
// refunds and charges, carrying a state over to a new window, resets and pruning.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "carry.h"
#include "key_state_block.h"
#include "key_state_store.h"
#include "leases.h"
#include "rl/key_state.h"
#include "sliding_log.h"
#include "state_alloc.h"
#include "step.h"

namespace rl {

using internal::AdjustOp;
using internal::LeaseBuf;
using internal::LogBuf;
using internal::StateShape;
using internal::ThreeWordState;
using internal::TwoWordState;
using namespace internal::key_state;  // NOLINT: the block layout's small helpers

absl::StatusOr<bool> KeyState::Release(std::string_view key, std::string_view lease_id,
                                       int64_t now_ms, bool* changed) {
  *changed = false;
  absl::StatusOr<internal::LeaseId> id = internal::ParseLeaseId(lease_id, key);
  if (!id.ok()) return id.status();
  internal::key_state::BlockStore store(block_, id->scope_id, now_ms, 0, /*read_only=*/false,
                                        changed);
  internal::key_state::Q q;
  store.LocateLeases(q);
  const bool held = internal::ReleaseLease(store, q, id->nonce, now_ms);
  store.Unlock();
  return held;
}

absl::StatusOr<Decision> KeyState::Adjust(std::string_view scope, absl::Span<const Limit> limits,
                                          int64_t amount, int64_t now_ms, bool refund,
                                          int64_t max_wait_ms, bool* changed) {
  *changed = false;
  const AdjustOp op = refund ? AdjustOp::kRefund : AdjustOp::kCharge;
  absl::StatusOr<Decision> out(absl::in_place);
  if (absl::Status s = internal::ValidateAdjust(limits, amount, op); !s.ok()) {
    out = std::move(s);
    return out;
  }
  internal::key_state::BlockStore store(block_, ScopeId(scope), now_ms, 0, /*read_only=*/false,
                                        changed);
  if (!internal::RunAdjust(store, limits, amount, op, max_wait_ms, *out)) out = store.status();
  return out;
}

absl::StatusOr<Decision> KeyState::Refund(std::string_view scope, absl::Span<const Limit> limits,
                                          int64_t amount, int64_t now_ms, bool* changed) {
  return Adjust(scope, limits, amount, now_ms, /*refund=*/true, -1, changed);
}

absl::StatusOr<Decision> KeyState::Charge(std::string_view scope, absl::Span<const Limit> limits,
                                          int64_t amount, int64_t now_ms, bool* changed) {
  return Adjust(scope, limits, amount, now_ms, /*refund=*/false, -1, changed);
}

absl::StatusOr<Decision> KeyState::ChargeWithin(std::string_view scope,
                                                absl::Span<const Limit> limits, int64_t amount,
                                                int64_t max_wait_ms, int64_t now_ms,
                                                bool* changed) {
  if (max_wait_ms < 0) return absl::InvalidArgumentError("MAXWAIT must not be negative");
  return Adjust(scope, limits, amount, now_ms, /*refund=*/false, max_wait_ms, changed);
}

bool KeyState::CarryOver(const Policy& policy, int64_t now_ms) {
  if (policy.carried_from.empty()) return false;
  return internal::CarryOver(
      policy,
      [&](const Limit& l) { return Peek(policy.name, absl::MakeConstSpan(&l, 1), 0, now_ms); },
      [&](const Limit& l, int64_t amount) {
        bool changed = false;
        (void)Charge(policy.name, absl::MakeConstSpan(&l, 1), amount, now_ms, &changed);
      },
      [&](const Limit& l) { Reset(policy.name, absl::MakeConstSpan(&l, 1)); });
}

size_t KeyState::Reset(std::string_view scope, absl::Span<const Limit> limits) {
  Block b{static_cast<char*>(block_)};
  const uint64_t sid = ScopeId(scope);
  size_t removed = 0;
  for (const Limit& limit : limits) {
    bool any = false;
    const uint64_t id = StateId(limit);
    if (const size_t off = b.Find(sid, id); off != 0) {
      EraseAt(b, off);
      any = true;
    }
    // A reset lifts a penalty block too, whether or not this limit was written with BLOCK.
    if (const size_t off = b.Find(sid, id | kBlockBit); off != 0) {
      EraseAt(b, off);
      any = true;
    }
    removed += any;
  }
  if (b.p != nullptr && b.count() == 0) {
    internal::StateFree(b.p);
    block_ = nullptr;
  }
  return removed;
}

size_t KeyState::Prune(int64_t now_ms) {
  Block b{static_cast<char*>(block_)};
  size_t removed = 0;
  for (size_t off = kHeaderBytes; off < b.bytes();) {
    if (b.expiry(off) <= now_ms) {
      EraseAt(b, off);
      ++removed;
    } else {
      off += b.size_at(off);
    }
  }
  if (removed > 0 && b.count() == 0) {
    internal::StateFree(b.p);
    block_ = nullptr;
  }
  return removed;
}

}  // namespace rl

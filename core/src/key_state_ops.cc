// rl::KeyState's operations besides a check, peek or acquire (key_state.cc): releasing a lease,
// refunds and charges, carrying a state over to a new window, resets and pruning.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "carry.h"
#include "key_state_block.h"
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

namespace {

// New entries are made only by a charge: refuses one that would pass kMaxStates even after the
// fresh entries are dropped (as a check drops them).
absl::Status RoomForCharge(KeyState& state, uint64_t sid, absl::Span<const Limit> limits,
                           int64_t now_ms, bool* changed) {
  auto missing = [&] {
    const Block b{static_cast<char*>(const_cast<void*>(state.block()))};
    size_t added = 0;
    for (const Limit& limit : limits) added += b.Find(sid, StateId(limit)) == 0;
    return added;
  };
  const size_t added = missing();
  if (added == 0 || state.size() + added <= KeyState::kMaxStates) return absl::OkStatus();
  *changed = state.Prune(now_ms) > 0;
  if (state.size() + missing() <= KeyState::kMaxStates) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "too many rate-limit states under one key (at most ", KeyState::kMaxStates, ")"));
}

// One limit of a refund or charge: its new state written (or dropped when it is equivalent to
// fresh), and what a check of cost 0 answers right after, a running block shown.
LimitResult AdjustOne(void*& block, uint64_t sid, const Limit& limit, int64_t now_ms,
                      int64_t amount, AdjustOp op, bool* changed) {
  LimitResult r;
  Block b{static_cast<char*>(block)};
  const uint64_t id = StateId(limit);
  size_t off = b.Find(sid, id);
  int64_t expiry_ms = now_ms;
  Pending q{};
  q.off = off;
  q.kind = internal::ShapeOf(limit.algorithm);
  bool write = false;
  switch (q.kind) {
    case StateShape::kTwoWord: {
      TwoWordState old;
      if (off != 0) old = TwoWordState{b.word(off, 0), b.word(off, 1)};
      const internal::Step<TwoWordState> step =
          internal::TwoWordAdjust(off != 0 ? &old : nullptr, limit, now_ms, amount, op);
      r = step.result;
      expiry_ms = step.expiry_ms;
      q.two = step.state;
      write = step.changed;
      break;
    }
    case StateShape::kThreeWord: {
      ThreeWordState old;
      if (off != 0) old = ThreeWordState{b.word(off, 0), b.word(off, 1), b.word(off, 2)};
      const internal::Step<ThreeWordState> step =
          internal::ThreeWordAdjust(off != 0 ? &old : nullptr, limit, now_ms, amount, op);
      r = step.result;
      expiry_ms = step.expiry_ms;
      q.three = step.state;
      write = step.changed;
      break;
    }
    case StateShape::kLog: {
      LogBuf* log = off != 0 ? b.log(off) : nullptr;
      const int64_t before = internal::LogTotal(log);
      internal::LogPrune(log, limit.window_ms, now_ms);
      // Dropping runs that left the window changes the stored bytes even when nothing is
      // written (a zero amount): a replay must drop them too.
      *changed = *changed || internal::LogTotal(log) != before;
      log = internal::LogAdjust(log, limit, now_ms, amount, op);
      if (off != 0) b.set_log(off, log);  // owned by the entry from here on
      r = internal::LogEvaluate(log, limit, now_ms, 0, &expiry_ms);
      q.log = log;
      write = amount > 0 && log != nullptr;
      break;
    }
    case StateShape::kLeases:
      break;  // refused by ValidateAdjust
  }
  q.expiry_ms = expiry_ms;
  if (write) {
    if (expiry_ms <= now_ms) {
      // Equivalent to fresh: no entry (a new log made for nothing is freed).
      if (off != 0) {
        EraseAt(b, off);
      } else if (q.kind == StateShape::kLog) {
        internal::LogFree(q.log);
      }
    } else {
      if (off == 0) {
        Reserve(block, b, EntryBytes(id));
        off = Append(b, sid, id, expiry_ms);
      }
      WriteState(b, off, q);
    }
    *changed = true;
  }
  // A refund or charge neither starts nor lifts a block, but its answer shows one.
  if (limit.block_ms > 0) {
    const int64_t until = BlockedUntil(Block{static_cast<char*>(block)}, sid, id, now_ms);
    if (until > now_ms) internal::ApplyBlock(r, until, now_ms);
  }
  return r;
}

}  // namespace

absl::StatusOr<bool> KeyState::Release(std::string_view key, std::string_view lease_id,
                                       int64_t now_ms, bool* changed) {
  *changed = false;
  absl::StatusOr<internal::LeaseId> id = internal::ParseLeaseId(lease_id, key);
  if (!id.ok()) return id.status();
  Block b{static_cast<char*>(block_)};
  const size_t off = b.Find(id->scope_id, LimitId(Algorithm::kConcurrency, 0));
  if (off == 0) return false;
  LeaseBuf* leases = b.leases(off);
  const size_t before = internal::LeaseCount(leases);
  const bool held = internal::LeaseRemove(leases, id->nonce, now_ms);
  *changed = internal::LeaseCount(leases) != before;
  if (internal::LeaseCount(leases) == 0) {
    EraseAt(b, off);
    *changed = true;  // also a set that held none (only a decoded state can)
    if (b.count() == 0) {
      internal::StateFree(b.p);
      block_ = nullptr;
    }
  } else if (*changed) {
    b.set_expiry(off, internal::LeaseExpiry(leases, now_ms));
  }
  return held;
}

absl::StatusOr<Decision> KeyState::Adjust(std::string_view scope, absl::Span<const Limit> limits,
                                          int64_t amount, int64_t now_ms, bool refund,
                                          bool* changed) {
  *changed = false;
  const AdjustOp op = refund ? AdjustOp::kRefund : AdjustOp::kCharge;
  absl::StatusOr<Decision> out(absl::in_place);
  if (absl::Status s = internal::ValidateAdjust(limits, amount, op); !s.ok()) {
    out = std::move(s);
    return out;
  }
  const uint64_t sid = ScopeId(scope);
  if (op == AdjustOp::kCharge && amount > 0) {
    if (absl::Status s = RoomForCharge(*this, sid, limits, now_ms, changed); !s.ok()) {
      out = std::move(s);
      return out;
    }
  }
  for (size_t i = 0; i < limits.size(); ++i) {
    out->limits[i] = AdjustOne(block_, sid, limits[i], now_ms, amount, op, changed);
  }
  Block b{static_cast<char*>(block_)};
  if (b.p != nullptr && b.count() == 0) {
    internal::StateFree(b.p);
    block_ = nullptr;
  }
  internal::MakeDecision(limits.size(), *out);
  return out;
}

absl::StatusOr<Decision> KeyState::Refund(std::string_view scope, absl::Span<const Limit> limits,
                                          int64_t amount, int64_t now_ms, bool* changed) {
  return Adjust(scope, limits, amount, now_ms, /*refund=*/true, changed);
}

absl::StatusOr<Decision> KeyState::Charge(std::string_view scope, absl::Span<const Limit> limits,
                                          int64_t amount, int64_t now_ms, bool* changed) {
  return Adjust(scope, limits, amount, now_ms, /*refund=*/false, changed);
}

absl::StatusOr<Decision> KeyState::ChargeWithin(std::string_view scope,
                                                absl::Span<const Limit> limits, int64_t amount,
                                                int64_t max_wait_ms, int64_t now_ms,
                                                bool* changed) {
  if (max_wait_ms < 0) return absl::InvalidArgumentError("MAXWAIT must not be negative");
  if (absl::Status s = internal::ValidateAdjust(limits, amount, internal::AdjustOp::kCharge);
      !s.ok()) {
    return s;
  }
  // One key's block is one Redis key: nothing runs between the peek and the charge.
  absl::StatusOr<Decision> peek = Peek(scope, limits, amount, now_ms);
  if (!peek.ok() || !internal::WithinWait(*peek, limits, max_wait_ms)) return peek;
  absl::StatusOr<Decision> d = Charge(scope, limits, amount, now_ms, changed);
  if (d.ok()) internal::AdmitCharged(*peek, *d);
  return d;
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

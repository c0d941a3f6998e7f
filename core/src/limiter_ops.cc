// The Limiter's operations beyond a check: refunds and charges (settle-later costs), releasing a
// concurrency lease, and rl::Lease itself. Checks, peeks and acquires are in limiter.cc.
#include <algorithm>
#include <string>
#include <utility>

#include "check_steps.h"
#include "leases.h"
#include "limiter_impl.h"
#include "rl/key_state.h"
#include "sliding_log.h"
#include "step.h"

namespace rl {

using internal::AdjustOp;
using internal::LogBuf;
using internal::Shard;
using internal::Slot2;
using internal::Slot3;
using internal::SlotLog;
using internal::StateShape;
using internal::ThreeWordState;
using internal::TwoWordState;

// One limit of a refund or charge, in its locked shard: its new state written, dropped when it
// is equivalent to fresh, or (a new state that found no room) not stored, which sets *unstored.
// Returns what a check of cost 0 answers right after.
LimitResult Limiter::Impl::AdjustOne(Shard& sh, uint64_t k, const Limit& limit, int64_t now,
                                     int64_t amount, AdjustOp op, const uint64_t* keys, size_t n,
                                     bool* unstored) {
  switch (internal::ShapeOf(limit.algorithm)) {
    case StateShape::kTwoWord:
      return AdjustTwoWord(sh, k, limit, now, amount, op, keys, n, unstored);
    case StateShape::kThreeWord:
      return AdjustThreeWord(sh, k, limit, now, amount, op, keys, n, unstored);
    case StateShape::kLog:
      return AdjustLog(sh, k, limit, now, amount, op, keys, n, unstored);
    case StateShape::kLeases:
      break;  // refused by ValidateAdjust
  }
  return LimitResult{};
}

LimitResult Limiter::Impl::AdjustTwoWord(Shard& sh, uint64_t k, const Limit& limit, int64_t now,
                                         int64_t amount, AdjustOp op, const uint64_t* keys,
                                         size_t n, bool* unstored) {
  auto it = sh.two.find(k);
  TwoWordState old;
  const bool had = it != sh.two.end();
  if (had) old = TwoWordState{expiry_.FromRel(it->rel_time()), it->word};
  const internal::Step<TwoWordState> step =
      internal::TwoWordAdjust(had ? &old : nullptr, limit, now, amount, op);
  const uint32_t expiry = expiry_.Encode(step.expiry_ms, internal::UsageLevel(step.result));
  if (step.expiry_ms <= now) {
    if (had) sh.two.erase(it);
  } else if (had) {
    it->set_rel_time(expiry_.ToRel(step.state.time));
    it->word = step.state.word;
    it->expiry = expiry;
  } else if (step.changed) {
    if (MakeRoom(sh, now, 1, keys, n)) {
      Slot2 slot{k, expiry, 0, 0, step.state.word};
      slot.set_rel_time(expiry_.ToRel(step.state.time));
      sh.two.insert(slot);
    } else {
      *unstored = true;
    }
  }
  return step.result;
}

LimitResult Limiter::Impl::AdjustThreeWord(Shard& sh, uint64_t k, const Limit& limit, int64_t now,
                                           int64_t amount, AdjustOp op, const uint64_t* keys,
                                           size_t n, bool* unstored) {
  auto it = sh.three.find(k);
  ThreeWordState old;
  const bool had = it != sh.three.end();
  if (had) old = ThreeWordState{expiry_.FromRel(it->rel_time()), it->previous(), it->current()};
  const internal::Step<ThreeWordState> step =
      internal::ThreeWordAdjust(had ? &old : nullptr, limit, now, amount, op);
  const uint32_t expiry = expiry_.Encode(step.expiry_ms, internal::UsageLevel(step.result));
  if (step.expiry_ms <= now) {
    if (had) sh.three.erase(it);
  } else if (had) {
    it->set_rel_time(expiry_.ToRel(step.state.time));
    it->set_counts(step.state.previous, step.state.current);
    it->expiry = expiry;
  } else if (step.changed) {
    if (MakeRoom(sh, now, 1, keys, n)) {
      sh.three.insert(Slot3(k, expiry, expiry_.ToRel(step.state.time), step.state.previous,
                            step.state.current));
    } else {
      *unstored = true;
    }
  }
  return step.result;
}

LimitResult Limiter::Impl::AdjustLog(Shard& sh, uint64_t k, const Limit& limit, int64_t now,
                                     int64_t amount, AdjustOp op, const uint64_t* keys, size_t n,
                                     bool* unstored) {
  auto it = sh.logs.find(k);
  const bool had = it != sh.logs.end();
  LogBuf* log = had ? it->log : nullptr;
  internal::LogPrune(log, limit.window_ms, now);
  const bool grows = amount > 0 && op == AdjustOp::kCharge;
  int64_t expiry_ms = now;
  LimitResult r;
  if (!had && grows && !MakeRoom(sh, now, 1, keys, n)) {
    *unstored = true;
    LogBuf* scratch = internal::LogAdjust(nullptr, limit, now, amount, op);
    r = internal::LogEvaluate(scratch, limit, now, 0, &expiry_ms);
    internal::LogFree(scratch);
    return r;
  }
  const size_t before = internal::LogBytes(log);
  log = internal::LogAdjust(log, limit, now, amount, op);
  r = internal::LogEvaluate(log, limit, now, 0, &expiry_ms);
  const uint32_t expiry = expiry_.Encode(expiry_ms, internal::UsageLevel(r));
  if (expiry_ms <= now) {
    // Empty: the state is fresh again.
    if (had) {
      it->log = log;
      sh.log_bytes += internal::LogBytes(log) - before;
      sh.Erase(StateShape::kLog, k);
    } else {
      internal::LogFree(log);
    }
  } else if (had) {
    it->log = log;
    it->expiry = expiry;
    sh.log_bytes += internal::LogBytes(log) - before;
  } else {
    sh.logs.insert(SlotLog{k, expiry, log});
    sh.log_bytes += internal::LogBytes(log);
  }
  return r;
}

void Limiter::Impl::PeekLocked(const StateKey* sk, absl::Span<const Limit> limits, int64_t now,
                               int64_t cost, Decision* out) {
  for (size_t i = 0; i < limits.size(); ++i) {
    const Limit& limit = limits[i];
    Shard& sh = shards_[sk[i].shard];
    sh.mu.AssertHeld();  // by the caller's LockShards
    // A check's own evaluation steps (check_steps.h); what they record for a write-back is
    // dropped: a peek writes nothing.
    internal::sharded::Pending q;
    q.key = sk[i].key;
    q.two_slot = nullptr;
    q.three_slot = nullptr;
    q.log_slot = nullptr;
    LimitResult& r = out->limits[i];
    switch (internal::ShapeOf(limit.algorithm)) {
      case StateShape::kTwoWord:
        r = internal::sharded::EvaluateTwo(q, sh, expiry_, limit, now, cost);
        break;
      case StateShape::kThreeWord:
        r = internal::sharded::EvaluateThree(q, sh, expiry_, limit, now, cost);
        break;
      case StateShape::kLog:
        r = internal::sharded::EvaluateLog(q, sh, limit, now, cost);
        break;
      case StateShape::kLeases:
        break;  // refused by ValidateAdjust
    }
    if (limit.block_ms > 0) {
      const int64_t until = sh.BlockedUntil(sk[i].key, now);
      if (until > now) internal::ApplyBlock(r, until, now);
    }
  }
  internal::MakeDecision(limits.size(), *out);
}

absl::StatusOr<Decision> Limiter::Impl::Adjust(std::string_view scope, std::string_view key,
                                               absl::Span<const Limit> limits, int64_t amount,
                                               AdjustOp op, int64_t max_wait_ms) {
  absl::StatusOr<Decision> out(absl::in_place);
  if (absl::Status s = internal::ValidateAdjust(limits, amount, op); !s.ok()) {
    out = std::move(s);
    return out;
  }
  const size_t n = limits.size();
  StateKey sk[kMaxLimitsPerCheck];
  uint64_t keys[kMaxLimitsPerCheck];
  uint32_t locked[kMaxLimitsPerCheck];
  for (size_t i = 0; i < n; ++i) {
    sk[i] = KeyFor(scope, key, limits[i]);
    keys[i] = sk[i].key;
    locked[i] = sk[i].shard;
  }
  const size_t lock_count = LockShards(locked, n);
  const int64_t now = clock_->NowMs();
  Decision peek(kUnfilledResults);
  if (max_wait_ms >= 0) {
    PeekLocked(sk, limits, now, amount, &peek);
    if (!internal::WithinWait(peek, limits, max_wait_ms)) {
      UnlockShards(locked, lock_count);
      out = peek;
      return out;
    }
  }
  bool unstored = false;
  // Each limit's new state is written (or dropped when it is equivalent to fresh) as soon as it
  // is computed: a refund or charge always applies, so there is nothing to decide first. Slot
  // pointers are not kept across MakeRoom, which may erase other states (never this call's).
  for (size_t i = 0; i < n; ++i) {
    Shard& sh = shards_[sk[i].shard];
    sh.mu.AssertHeld();  // by LockShards
    LimitResult& r = out->limits[i];
    r = AdjustOne(sh, sk[i].key, limits[i], now, amount, op, keys, n, &unstored);
    // A refund or charge neither starts nor lifts a block, but its answer shows one.
    if (limits[i].block_ms > 0) {
      const int64_t until = sh.BlockedUntil(sk[i].key, now);
      if (until > now) internal::ApplyBlock(r, until, now);
    }
  }
  if (unstored) {
    // Still under the lock: Stats() reads the counter under it (incremented after the unlock,
    // this raced with it).
    Shard& first = shards_[sk[0].shard];
    first.mu.AssertHeld();
    ++first.overflows;
  }
  UnlockShards(locked, lock_count);
  internal::MakeDecision(n, *out);
  if (max_wait_ms >= 0) internal::AdmitCharged(peek, *out);
  if (unstored) out->decided_by = DecidedBy::kOverflow;
  return out;
}

absl::StatusOr<bool> Limiter::Impl::Release(std::string_view key, std::string_view lease_id) {
  absl::StatusOr<internal::LeaseId> id = internal::ParseLeaseId(lease_id, key);
  if (!id.ok()) return id.status();
  const StateKey k = LeaseKeyFor(id->scope_id, key);
  Shard& sh = shards_[k.shard];
  internal::ShardLock lock(sh.mu);
  const int64_t now = clock_->NowMs();
  auto it = sh.leases.find(k.key);
  if (it == sh.leases.end()) return false;
  const size_t before = internal::LeaseBytes(it->leases);
  const bool held = internal::LeaseRemove(it->leases, id->nonce, now);
  if (internal::LeaseCount(it->leases) == 0) {
    sh.Erase(StateShape::kLeases, k.key);
  } else {
    sh.lease_bytes += internal::LeaseBytes(it->leases) - before;
    it->expiry = expiry_.Encode(internal::LeaseExpiry(it->leases, now), internal::kLevelProtected);
  }
  return held;
}

// ---- rl::Lease ----

Lease::~Lease() { ReleaseWithoutWaiting(); }

void Lease::ReleaseWithoutWaiting() {
  LeaseIssuer* issuer = std::exchange(issuer_, nullptr);
  if (issuer != nullptr) issuer->ReleaseWithoutWaiting(key_, id_);
}

Lease::Lease(Lease&& other) noexcept
    : issuer_(std::exchange(other.issuer_, nullptr)),
      key_(std::move(other.key_)),
      id_(std::move(other.id_)),
      decision_(other.decision_) {}

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    ReleaseWithoutWaiting();
    issuer_ = std::exchange(other.issuer_, nullptr);
    key_ = std::move(other.key_);
    id_ = std::move(other.id_);
    decision_ = other.decision_;
  }
  return *this;
}

bool Lease::Release() {
  LeaseIssuer* issuer = std::exchange(issuer_, nullptr);
  if (issuer == nullptr) return false;
  absl::StatusOr<bool> held = issuer->Release(key_, id_);
  return held.ok() && *held;
}

std::string Lease::Detach() {
  issuer_ = nullptr;
  return id_;
}

}  // namespace rl

// The Limiter: validates a check, locks the shards of its states in a fixed order, evaluates every
// limit, and writes the new states back only when all of them allow (all or nothing).
#include "rl/limiter.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "carry.h"
#include "check_steps.h"
#include "leases.h"
#include "limiter_impl.h"
#include "rl/key_state.h"
#include "sliding_log.h"
#include "step.h"

namespace rl {

using internal::LeaseBuf;
using internal::LogBuf;
using internal::Shard;
using internal::Slot2;
using internal::Slot3;
using internal::SlotBlock;
using internal::SlotLease;
using internal::SlotLog;
using internal::StateShape;
using internal::ThreeWordState;
using internal::TwoWordState;
using internal::sharded::EvaluateLeases;
using internal::sharded::EvaluateLog;
using internal::sharded::EvaluateThree;
using internal::sharded::EvaluateTwo;
using internal::sharded::InsertNew;
using internal::sharded::KeyHasher;
using internal::sharded::Pending;
using internal::sharded::PendingArray;

namespace {}  // namespace

namespace {

// Whether a pending limit found a stored state (a check never looks for leases).
template <bool kLeases>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool Found(const Pending& q) {
  bool f = q.two_slot != nullptr || q.three_slot != nullptr || q.log_slot != nullptr;
  if constexpr (kLeases) f = f || q.lease_slot != nullptr;
  return f;
}

}  // namespace

template <Limiter::Impl::Op kOp, size_t kN>
inline int64_t Limiter::Impl::Prepare(std::string_view scope, std::string_view key, CheckArgs a,
                                      CheckFrame& f) {
  constexpr bool kLeases = kOp != Op::kCheck;
  int64_t blocks = 0;  // non-zero when some limit has a BLOCK
  const KeyHasher hasher(scope, key, seed_);
  for (size_t i = 0; i < (kN != 0 ? kN : a.n); ++i) {
    const Limit& limit = a.limits[i];
    const uint64_t k = kLeases && limit.algorithm == Algorithm::kConcurrency
                           ? LeaseKeyFor(ScopeId(scope), key).key
                           : hasher.For(limit);
    // Only the members read before being written: value-initializing all of Pending (with its
    // LimitResult and states) showed in profiles.
    Pending& q = *new (&a.p[i]) Pending;
    q.two_slot = nullptr;
    q.three_slot = nullptr;
    q.log_slot = nullptr;
    q.new_log = nullptr;
    if constexpr (kLeases) {
      q.lease_slot = nullptr;
      q.new_leases = nullptr;
    }
    q.key = f.keys[i] = k;
    q.shard = f.locked[i] = ShardOf(k);
    q.kind = internal::ShapeOf(limit.algorithm);
    blocks |= limit.block_ms;
  }
  return blocks;
}

template <Limiter::Impl::Op kOp, size_t kN>
inline void Limiter::Impl::EvaluateAll(CheckArgs a) {
  for (size_t i = 0; i < (kN != 0 ? kN : a.n); ++i) {
    Pending& q = a.p[i];
    Shard& sh = shards_[q.shard];
    sh.mu.AssertHeld();  // by LockShards
    switch (q.kind) {
      case StateShape::kTwoWord:
        a.results[i] = EvaluateTwo(q, sh, expiry_, a.limits[i], a.now, a.cost);
        break;
      case StateShape::kThreeWord:
        a.results[i] = EvaluateThree(q, sh, expiry_, a.limits[i], a.now, a.cost);
        break;
      case StateShape::kLog:
        a.results[i] = EvaluateLog(q, sh, a.limits[i], a.now, a.cost);
        break;
      case StateShape::kLeases:
        if constexpr (kOp != Op::kCheck) a.results[i] = EvaluateLeases(q, sh, a.limits[i], a.now);
        break;
    }
  }
}

template <Limiter::Impl::Op kOp, size_t kN>
inline bool Limiter::Impl::ReserveRoom(CheckArgs a, CheckFrame& f, uint32_t& unstored,
                                       Decision& out) {
  uint32_t placed = 0;
  for (size_t i = 0; i < (kN != 0 ? kN : a.n); ++i) {
    const Pending& q = a.p[i];
    if (Found<kOp != Op::kCheck>(q) || !internal::WritesState(kOp, a.cost, q.kind)) continue;
    size_t adding = 1;  // with the new states of this check already placed in its shard
    for (size_t j = 0; j < i; ++j) adding += ((placed >> j) & 1) && a.p[j].shard == q.shard;
    Shard& sh = shards_[q.shard];
    sh.mu.AssertHeld();
    if (MakeRoom(sh, a.now, adding, f.keys, (kN != 0 ? kN : a.n))) {
      placed |= 1u << i;
    } else {
      unstored |= 1u << i;
    }
  }
  if (ABSL_PREDICT_TRUE(unstored == 0)) return true;
  Shard& first = shards_[a.p[__builtin_ctz(unstored)].shard];
  first.mu.AssertHeld();
  ++first.overflows;
  if (overflow_ != FailureMode::kFailClosed) return true;
  for (size_t i = 0; i < (kN != 0 ? kN : a.n); ++i) {
    if (((unstored >> i) & 1) == 0) continue;
    Shard& sh = shards_[a.p[i].shard];
    sh.mu.AssertHeld();
    a.results[i] = Refused(sh, a.now, a.results[i]);
  }
  internal::MakeDecision((kN != 0 ? kN : a.n), out);
  return false;
}

template <Limiter::Impl::Op kOp, size_t kN>
inline void Limiter::Impl::WriteBack(CheckArgs a, CheckFrame& f, uint32_t unstored, uint64_t nonce,
                                     bool* leased) {
  bool logs_grew = false;
  // Update found states first (their slot pointers stay valid until a table grows: making room
  // only erased other states), then insert new ones.
  for (size_t i = 0; i < (kN != 0 ? kN : a.n); ++i) {
    Pending& q = a.p[i];
    if (!internal::WritesState(kOp, a.cost, q.kind)) continue;
    const uint32_t expiry = expiry_.Encode(q.expiry_ms, internal::UsageLevel(a.results[i]));
    const bool not_stored = (unstored >> i) & 1;  // fail-open: allowed, not counted
    if (q.kind == StateShape::kLog) {
      if (not_stored) continue;
      WriteLog(a, i, expiry);
      logs_grew = true;
    } else if (q.two_slot != nullptr) {
      q.two_slot->set_rel_time(expiry_.ToRel(q.two.time));
      q.two_slot->word = q.two.word;
      q.two_slot->expiry = expiry;
    } else if (q.three_slot != nullptr) {
      q.three_slot->set_rel_time(expiry_.ToRel(q.three.time));
      q.three_slot->set_counts(q.three.previous, q.three.current);
      q.three_slot->expiry = expiry;
    } else if constexpr (kOp == Op::kAcquire) {
      if (q.kind != StateShape::kLeases || not_stored) continue;
      WriteLease(a, i, nonce);
      *leased = true;
    }
  }
  for (size_t i = 0; i < (kN != 0 ? kN : a.n); ++i) {
    Pending& q = a.p[i];
    if (Found<kOp != Op::kCheck>(q) || !internal::WritesState(kOp, a.cost, q.kind)) continue;
    if ((unstored >> i) & 1) continue;  // fail-open: allowed, not counted
    if (kOp == Op::kCheck && q.kind == StateShape::kLeases) continue;
    Shard& sh = shards_[q.shard];
    sh.mu.AssertHeld();
    InsertNew(q, sh, expiry_, expiry_.Encode(q.expiry_ms, internal::UsageLevel(a.results[i])));
  }
  // A log that grew may have passed the byte bound; it stays over (a soft bound) when nothing
  // is safe to evict. (New states found room before.)
  if (ABSL_PREDICT_FALSE(logs_grew) && max_memory_bytes_ > 0) {
    for (size_t i = 0; i < f.lock_count; ++i) {
      Shard& sh = shards_[f.locked[i]];
      sh.mu.AssertHeld();
      MakeRoom(sh, a.now, 0, f.keys, (kN != 0 ? kN : a.n));
    }
  }
}

template <Limiter::Impl::Op kOp, size_t kN>
inline void Limiter::Impl::Refresh(CheckArgs a) {
  // Nothing consumed. State found fresh-equivalent is dropped here (lazy expiry); the rest only
  // gets its expiry refreshed, which a changed limit may have moved. An unchanged expiry word is
  // not written: a denial that changes nothing leaves its slot's cache line shared, so threads
  // denied on one hot key do not pass the line between cores.
  for (size_t i = 0; i < (kN != 0 ? kN : a.n); ++i) {
    Pending& q = a.p[i];
    Shard& sh = shards_[q.shard];
    sh.mu.AssertHeld();
    if (!Found<kOp != Op::kCheck>(q)) continue;
    const uint32_t expiry = expiry_.Encode(q.expiry_ms, internal::UsageLevel(a.results[i]));
    if (q.expiry_ms <= a.now) {
      if (sh.Erase(q.kind, q.key)) ++sh.expired;
    } else if (q.two_slot != nullptr) {
      if (q.two_slot->expiry != expiry) q.two_slot->expiry = expiry;
    } else if (q.three_slot != nullptr) {
      if (q.three_slot->expiry != expiry) q.three_slot->expiry = expiry;
    } else if (q.log_slot != nullptr) {
      if (q.log_slot->expiry != expiry) q.log_slot->expiry = expiry;
    } else if constexpr (kOp != Op::kCheck) {
      q.lease_slot->expiry = expiry_.Encode(q.expiry_ms, internal::kLevelProtected);
    }
  }
}

template <Limiter::Impl::Op kOp, size_t kN>
inline void Limiter::Impl::Apply(std::string_view scope, std::string_view key,
                                 absl::Span<const Limit> limits, int64_t cost, uint64_t nonce,
                                 bool* leased, Decision& out) {
  PendingArray pending;
  CheckFrame f;
  const size_t n = kN != 0 ? kN : limits.size();
  CheckArgs a{limits, n, cost, 0, out.limits.data(), pending.items};
  const int64_t blocks = Prepare<kOp, kN>(scope, key, a, f);
  // One `now` per check, read before the locks so the clock's cost is not spent holding them. A
  // check that then waits for a lock may act on a time older than the state it finds (as with
  // rl-server's CommandClock, which hands out its I/O thread's reading of the batch): every step
  // keeps counting a state newer than `now` (no refill, no new window, log runs at the newest
  // run's time), which can only admit less, never more.
  a.now = clock_->NowMs();
  f.lock_count = LockShards(f.locked, n);
  EvaluateAll<kOp, kN>(a);
  if (ABSL_PREDICT_FALSE(blocks != 0)) {
    ApplyBlocks(a.p, limits, a.results, a.now, cost, kOp != Op::kPeek);
  }
  // The decision now, while its limits' results are at hand (a refusal redoes it).
  internal::MakeDecision(n, out);
  // New states need room before anything is written: at a bound with nothing safe to evict they
  // are not stored, and the overflow mode decides the check (see LimiterOptions::overflow).
  uint32_t unstored = 0;  // bit i: the new state of limit i cannot be stored
  bool write = out.allowed && kOp != Op::kPeek && (cost > 0 || kOp == Op::kAcquire);
  if (write) write = ReserveRoom<kOp, kN>(a, f, unstored, out);
  if (write) {
    WriteBack<kOp, kN>(a, f, unstored, nonce, leased);
  } else {
    Refresh<kOp, kN>(a);
  }
  UnlockShards(f.locked, f.lock_count);
  if (ABSL_PREDICT_FALSE(unstored != 0)) out.decided_by = DecidedBy::kOverflow;
}

template <Limiter::Impl::Op kOp>
absl::StatusOr<Decision> Limiter::Impl::Run(std::string_view scope, std::string_view key,
                                            absl::Span<const Limit> limits, int64_t cost,
                                            uint64_t nonce, bool* leased) {
  // One result object, returned by name so the large Decision is built in place.
  absl::StatusOr<Decision> out(absl::in_place, kUnfilledResults);
  if (ABSL_PREDICT_FALSE(kOp == Op::kAcquire || !internal::CheckValid(limits, cost))) {
    absl::Status s = kOp == Op::kCheck  ? internal::ValidateCheck(limits, cost)
                     : kOp == Op::kPeek ? internal::ValidatePeek(limits, cost)
                                        : internal::ValidateAcquire(limits, cost);
    if (!s.ok()) {
      out = std::move(s);
      return out;
    }
  }
  // Checks of one or two limits (the common cases) get instances whose loops the compiler
  // unrolls.
  if (limits.size() == 1) {
    Apply<kOp, 1>(scope, key, limits, cost, nonce, leased, *out);
  } else if (limits.size() == 2) {
    Apply<kOp, 2>(scope, key, limits, cost, nonce, leased, *out);
  } else {
    Apply<kOp, 0>(scope, key, limits, cost, nonce, leased, *out);
  }
  if constexpr (kOp != Op::kCheck) internal::MarkLeases(limits, *out);
  return out;
}

// ---- Limiter: forwards to Impl ----

Limiter::Limiter(LimiterOptions options) : impl_(std::make_unique<Impl>(options)) {}
Limiter::~Limiter() = default;

absl::StatusOr<Decision> Limiter::Check(std::string_view scope, std::string_view key,
                                        absl::Span<const Limit> limits, int64_t cost) {
  return impl_->Run<Impl::Op::kCheck>(scope, key, limits, cost);
}

void Limiter::CarryOver(const Policy& policy, std::string_view key) {
  if (policy.carried_from.empty()) return;
  internal::CarryOver(
      policy,
      [&](const Limit& l) {
        return impl_->Run<Impl::Op::kPeek>(policy.name, key, absl::MakeConstSpan(&l, 1), 0);
      },
      [&](const Limit& l, int64_t amount) {
        (void)impl_->Adjust(policy.name, key, absl::MakeConstSpan(&l, 1), amount,
                            internal::AdjustOp::kCharge);
      },
      [&](const Limit& l) { impl_->Reset(policy.name, key, absl::MakeConstSpan(&l, 1)); });
}

absl::StatusOr<Decision> Limiter::Check(const Policy& policy, std::string_view key, int64_t cost) {
  CarryOver(policy, key);
  absl::StatusOr<Decision> d = impl_->Run<Impl::Op::kCheck>(policy.name, key, policy.limits, cost);
  if (d.ok() && policy.shadow) ApplyShadow(*d);
  return d;
}

absl::StatusOr<Decision> Limiter::Peek(const Policy& policy, std::string_view key, int64_t cost) {
  absl::StatusOr<Decision> d = impl_->Run<Impl::Op::kPeek>(policy.name, key, policy.limits, cost);
  if (d.ok() && policy.shadow) ApplyShadow(*d);
  return d;
}

size_t Limiter::Reset(const Policy& policy, std::string_view key) {
  return impl_->Reset(policy.name, key, policy.limits);
}

absl::StatusOr<Decision> Limiter::Peek(std::string_view scope, std::string_view key,
                                       absl::Span<const Limit> limits, int64_t cost) {
  return impl_->Run<Impl::Op::kPeek>(scope, key, limits, cost);
}

size_t Limiter::Reset(std::string_view scope, std::string_view key,
                      absl::Span<const Limit> limits) {
  return impl_->Reset(scope, key, limits);
}

absl::StatusOr<Lease> Limiter::Acquire(std::string_view scope, std::string_view key,
                                       absl::Span<const Limit> limits, int64_t cost) {
  // The nonce is drawn before the shard locks are taken (it may cost a system call).
  const uint64_t nonce = internal::NewLeaseNonce();
  bool leased = false;
  absl::StatusOr<Decision> d =
      impl_->Run<Impl::Op::kAcquire>(scope, key, limits, cost, nonce, &leased);
  if (!d.ok()) return d.status();
  if (!leased) return Lease(nullptr, std::string(key), "", *d);
  return Lease(this, std::string(key), internal::FormatLeaseId(ScopeId(scope), key, nonce), *d);
}

absl::StatusOr<Lease> Limiter::Acquire(const Policy& policy, std::string_view key, int64_t cost) {
  CarryOver(policy, key);
  absl::StatusOr<Lease> lease = Acquire(policy.name, key, policy.limits, cost);
  if (lease.ok() && policy.shadow) ApplyShadow(lease->decision_);
  return lease;
}

absl::StatusOr<bool> Limiter::Release(std::string_view key, std::string_view lease_id) {
  return impl_->Release(key, lease_id);
}

absl::StatusOr<Decision> Limiter::Refund(std::string_view scope, std::string_view key,
                                         absl::Span<const Limit> limits, int64_t amount) {
  return impl_->Adjust(scope, key, limits, amount, internal::AdjustOp::kRefund);
}

absl::StatusOr<Decision> Limiter::Refund(const Policy& policy, std::string_view key,
                                         int64_t amount) {
  CarryOver(policy, key);
  absl::StatusOr<Decision> d =
      impl_->Adjust(policy.name, key, policy.limits, amount, internal::AdjustOp::kRefund);
  if (d.ok() && policy.shadow) ApplyShadow(*d);
  return d;
}

absl::StatusOr<Decision> Limiter::Charge(std::string_view scope, std::string_view key,
                                         absl::Span<const Limit> limits, int64_t amount) {
  return impl_->Adjust(scope, key, limits, amount, internal::AdjustOp::kCharge);
}

absl::StatusOr<Decision> Limiter::ChargeWithin(std::string_view scope, std::string_view key,
                                               absl::Span<const Limit> limits, int64_t amount,
                                               int64_t max_wait_ms) {
  if (max_wait_ms < 0) return absl::InvalidArgumentError("MAXWAIT must not be negative");
  return impl_->Adjust(scope, key, limits, amount, internal::AdjustOp::kCharge, max_wait_ms);
}

absl::StatusOr<Decision> Limiter::Charge(const Policy& policy, std::string_view key,
                                         int64_t amount) {
  CarryOver(policy, key);
  absl::StatusOr<Decision> d =
      impl_->Adjust(policy.name, key, policy.limits, amount, internal::AdjustOp::kCharge);
  if (d.ok() && policy.shadow) ApplyShadow(*d);
  return d;
}

absl::Status Limiter::ExportState(std::string* out) const { return impl_->ExportState(out); }
absl::Status Limiter::ImportState(std::string_view data) { return impl_->ImportState(data); }
size_t Limiter::Sweep(size_t budget) { return impl_->Sweep(budget); }
LimiterStats Limiter::Stats() const { return impl_->Stats(); }
size_t Limiter::KeyCount() const { return impl_->KeyCount(); }
Clock& Limiter::clock() const { return impl_->clock(); }

}  // namespace rl

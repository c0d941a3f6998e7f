// The Limiter: validates a check and runs the pipeline (pipeline.h) over its sharded store
// (check_steps.h), which locks the shards of its states in a fixed order, evaluates every limit,
// and writes the new states back only when all of them allow (all or nothing).
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

template <Limiter::Impl::Op kOp>
absl::StatusOr<Decision> Limiter::Impl::RunInline(std::string_view scope, std::string_view key,
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
  Store::Frame frame;
  Store store(*this, frame, scope, key);
  if constexpr (kOp != Op::kAcquire) {
    // An existing hot key of one GCRA or token-bucket limit, checked or peeked without the lock
    // (hot_keys.h).
    if (limits.size() == 1 && hot_ && internal::HotAlgorithm(limits[0].algorithm) &&
        limits[0].block_ms == 0 && store.template TryHot<kOp>(limits[0], cost, *out)) {
      return out;
    }
  }
  if (limits.size() == 1) {
    internal::RunChecks<kOp, 1>(store, limits, cost, nonce, leased, *out);
  } else if (limits.size() == 2) {
    internal::RunChecks<kOp, 2>(store, limits, cost, nonce, leased, *out);
  } else {
    internal::RunChecks<kOp, 0>(store, limits, cost, nonce, leased, *out);
  }
  if (ABSL_PREDICT_FALSE(store.unstored() != 0)) out->decided_by = DecidedBy::kOverflow;
  if constexpr (kOp != Op::kCheck) internal::MarkLeases(limits, *out);
  return out;
}

template <Limiter::Impl::Op kOp>
absl::StatusOr<Decision> Limiter::Impl::Run(std::string_view scope, std::string_view key,
                                            absl::Span<const Limit> limits, int64_t cost,
                                            uint64_t nonce, bool* leased) {
  return RunInline<kOp>(scope, key, limits, cost, nonce, leased);
}

// ---- Limiter: forwards to Impl ----

Limiter::Limiter(LimiterOptions options) : impl_(std::make_unique<Impl>(options)) {}
Limiter::~Limiter() = default;

absl::StatusOr<Decision> Limiter::Check(std::string_view scope, std::string_view key,
                                        absl::Span<const Limit> limits, int64_t cost) {
  return impl_->RunInline<Impl::Op::kCheck>(scope, key, limits, cost, 0, nullptr);
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

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

absl::StatusOr<Decision> Limiter::Impl::Adjust(std::string_view scope, std::string_view key,
                                               absl::Span<const Limit> limits, int64_t amount,
                                               AdjustOp op, int64_t max_wait_ms) {
  absl::StatusOr<Decision> out(absl::in_place);
  if (absl::Status s = internal::ValidateAdjust(limits, amount, op); !s.ok()) {
    out = std::move(s);
    return out;
  }
  Store::Frame frame;
  Store store(*this, frame, scope, key);
  internal::RunAdjust(store, limits, amount, op, max_wait_ms, *out);
  if (store.unstored() != 0) out->decided_by = DecidedBy::kOverflow;
  return out;
}

absl::StatusOr<bool> Limiter::Impl::Release(std::string_view key, std::string_view lease_id) {
  absl::StatusOr<internal::LeaseId> id = internal::ParseLeaseId(lease_id, key);
  if (!id.ok()) return id.status();
  Store::Frame frame;
  Store store(*this, frame, "", key);
  Store::Q q;
  store.LocateLeases(q, id->scope_id);
  store.Lock(1);
  const bool held = internal::ReleaseLease(store, q, id->nonce, store.Now());
  store.Unlock();
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

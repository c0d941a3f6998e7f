// One interface over both back ends, so a service picks in-process or remote limiting with a flag
// and the rest of its code does not change: rl::LocalRateLimiter wraps the engine (rl::Limiter),
// rl::RemoteLimiter talks to rl-server. Both check a named policy for a key, all or nothing,
// settle costs known only afterwards (Refund, Charge), and take concurrency leases (Acquire: one
// rl::Lease type whichever back end granted it).
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "rl/decision.h"
#include "rl/lease.h"
#include "rl/limit.h"
#include "rl/limiter.h"

namespace rl {

class RateLimiter : public LeaseIssuer {
 public:
  virtual ~RateLimiter() = default;

  // Checks every limit of `policy` for `key` and consumes `cost` only when all allow. The state
  // lives under the policy's name. An error means the request itself was invalid (negative cost,
  // a limit the server rejects); an unreachable remote limiter is not an error but a decision
  // made by the policy's FailureMode (Decision::decided_by says which). Both back ends apply
  // shadow mode: a shadow policy's denial comes back allowed, with Decision::shadow_denied.
  virtual absl::StatusOr<Decision> Check(const Policy& policy, std::string_view key,
                                         int64_t cost = 1) = 0;
  // Settle-later costs (see Limiter::Refund and Limiter::Charge): give back up to `amount`, or
  // take `amount` even into debt; the answer is what a check of cost 0 would get right after.
  // A remote limiter that cannot reach its server returns that error (it invents no state).
  virtual absl::StatusOr<Decision> Refund(const Policy& policy, std::string_view key,
                                          int64_t amount) = 0;
  virtual absl::StatusOr<Decision> Charge(const Policy& policy, std::string_view key,
                                          int64_t amount) = 0;
  // A lease of the policy's CONCURRENCY limit, all or nothing with its rate limits (see
  // Limiter::Acquire). Whether to proceed is decision().allowed, not held(): a shadow policy's
  // denial, and a remote limiter's fail-open outage, are allowed without a lease. The lease
  // releases itself when destroyed; this limiter must outlive it.
  virtual absl::StatusOr<Lease> Acquire(const Policy& policy, std::string_view key,
                                        int64_t cost = 1) = 0;
  // Release(key, lease_id), from LeaseIssuer: ends a lease by id (one handed over by Detach()).

  // Unix time in ms as the limiter sees it, for X-RateLimit-Reset (rl::HeaderValues).
  virtual int64_t WallNowMs() const = 0;
};

// The in-process back end: a thin adapter over an rl::Limiter it does not own.
class LocalRateLimiter final : public RateLimiter {
 public:
  explicit LocalRateLimiter(Limiter* limiter) : limiter_(limiter) {}

  absl::StatusOr<Decision> Check(const Policy& policy, std::string_view key,
                                 int64_t cost = 1) override {
    return limiter_->Check(policy, key, cost);
  }
  absl::StatusOr<Decision> Refund(const Policy& policy, std::string_view key,
                                  int64_t amount) override {
    return limiter_->Refund(policy, key, amount);
  }
  absl::StatusOr<Decision> Charge(const Policy& policy, std::string_view key,
                                  int64_t amount) override {
    return limiter_->Charge(policy, key, amount);
  }
  // The engine's own lease: it releases itself on the Limiter.
  absl::StatusOr<Lease> Acquire(const Policy& policy, std::string_view key,
                                int64_t cost = 1) override {
    return limiter_->Acquire(policy, key, cost);
  }
  absl::StatusOr<bool> Release(std::string_view key, std::string_view lease_id) override {
    return limiter_->Release(key, lease_id);
  }
  int64_t WallNowMs() const override { return limiter_->clock().WallMs(); }

 private:
  Limiter* limiter_;
};

}  // namespace rl

// One interface over both back ends, so a service picks in-process or remote limiting with a flag
// and the rest of its code does not change: rl::LocalRateLimiter wraps the engine (rl::Limiter),
// rl::RemoteLimiter talks to rl-server. Both check a named policy for a key, all or nothing.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "rl/decision.h"
#include "rl/limit.h"
#include "rl/limiter.h"

namespace rl {

class RateLimiter {
 public:
  virtual ~RateLimiter() = default;

  // Checks every limit of `policy` for `key` and consumes `cost` only when all allow. The state
  // lives under the policy's name. An error means the request itself was invalid (negative cost,
  // a limit the server rejects); an unreachable remote limiter is not an error but a decision
  // made by the policy's FailureMode (Decision::decided_by says which). Both back ends apply
  // shadow mode: a shadow policy's denial comes back allowed, with Decision::shadow_denied.
  virtual absl::StatusOr<Decision> Check(const Policy& policy, std::string_view key,
                                         int64_t cost = 1) = 0;
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
  int64_t WallNowMs() const override { return limiter_->clock().WallMs(); }

 private:
  Limiter* limiter_;
};

}  // namespace rl

// The validators of step.h: the one place that says what makes a check, peek, acquire, refund or
// charge invalid, with messages fit for a RESP "-ERR " reply.
#include "step.h"

#include <string>

namespace rl::internal {
namespace {

bool HasConcurrency(absl::Span<const Limit> limits) {
  return ConcurrencyIndex(limits) != limits.size();
}

absl::Status NegativeCost() { return absl::InvalidArgumentError("cost must not be negative"); }

}  // namespace

absl::Status ValidateCheck(absl::Span<const Limit> limits, int64_t cost) {
  if (absl::Status s = ValidateLimits(limits); !s.ok()) return s;
  if (HasConcurrency(limits)) {
    return absl::InvalidArgumentError(
        "a CONCURRENCY limit holds leases: take one with RL.ACQUIRE and end it with RL.RELEASE");
  }
  if (cost < 0) return NegativeCost();
  return absl::OkStatus();
}

absl::Status ValidatePeek(absl::Span<const Limit> limits, int64_t cost) {
  if (absl::Status s = ValidateLimits(limits); !s.ok()) return s;
  if (cost < 0) return NegativeCost();
  return absl::OkStatus();
}

absl::Status ValidateAcquire(absl::Span<const Limit> limits, int64_t cost) {
  if (absl::Status s = ValidateLimits(limits); !s.ok()) return s;
  if (!HasConcurrency(limits)) {
    return absl::InvalidArgumentError(
        "RL.ACQUIRE needs a CONCURRENCY limit (e.g. CONCURRENCY 3 LEASE 5m)");
  }
  if (cost < 0) return NegativeCost();
  return absl::OkStatus();
}

absl::Status ValidateAdjust(absl::Span<const Limit> limits, int64_t amount, AdjustOp op) {
  if (absl::Status s = ValidateLimits(limits); !s.ok()) return s;
  const char* verb = op == AdjustOp::kRefund ? "REFUND" : "CHARGE";
  for (const Limit& limit : limits) {
    if (limit.algorithm == Algorithm::kConcurrency) {
      return absl::InvalidArgumentError(std::string("CONCURRENCY takes no ") + verb +
                                        ": end a lease with RL.RELEASE");
    }
    if (op == AdjustOp::kRefund && limit.algorithm == Algorithm::kLeakyBucket) {
      return absl::InvalidArgumentError(
          "LEAKY_BUCKET cannot refund: its callers were already told when to proceed, and a "
          "slot given back would let two of them proceed at once");
    }
  }
  if (amount < 0) return absl::InvalidArgumentError("COST must not be negative");
  if (amount > kMaxLimit) {
    return absl::InvalidArgumentError("COST must be at most " + std::to_string(kMaxLimit));
  }
  return absl::OkStatus();
}

}  // namespace rl::internal

// The validators of step.h: the one place that says what makes a check, peek, acquire, refund or
// charge invalid, with messages fit for a RESP "-ERR " reply.
#include "step.h"

#include <string>

#include "rl/validate.h"

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
        "a CONCURRENCY limit holds leases: take one with Acquire (RL.ACQUIRE) and end it with "
        "Release (RL.RELEASE)");
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
        "Acquire (RL.ACQUIRE) needs a CONCURRENCY limit (e.g. CONCURRENCY 3 LEASE 5m)");
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
                                        ": end a lease with Release (RL.RELEASE)");
    }
    if (op == AdjustOp::kRefund && (TraitsOf(limit.algorithm) & kShaping) != 0) {
      return absl::InvalidArgumentError(
          std::string(AlgorithmName(limit.algorithm)) +
          " cannot refund: its callers were already told when to proceed, and a slot given back "
          "would let two of them proceed at once");
    }
  }
  if (amount < 0) return absl::InvalidArgumentError("COST must not be negative");
  if (amount > kMaxLimit) {
    return absl::InvalidArgumentError("COST must be at most " + std::to_string(kMaxLimit));
  }
  return absl::OkStatus();
}

}  // namespace rl::internal

namespace rl {

absl::Status ValidateOperation(Operation op, absl::Span<const Limit> limits, int64_t cost) {
  switch (op) {
    case Operation::kCheck:
      return internal::ValidateCheck(limits, cost);
    case Operation::kPeek:
      return internal::ValidatePeek(limits, cost);
    case Operation::kAcquire:
      return internal::ValidateAcquire(limits, cost);
    case Operation::kRefund:
      return internal::ValidateAdjust(limits, cost, internal::AdjustOp::kRefund);
    case Operation::kCharge:
      return internal::ValidateAdjust(limits, cost, internal::AdjustOp::kCharge);
  }
  return absl::InvalidArgumentError("unknown operation");
}

}  // namespace rl

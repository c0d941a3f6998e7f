// What makes an operation on a set of limits invalid, with the one text every way of calling it
// answers: rl::Limiter, rl::KeyState, rl-server and rl.so (after "ERR ") and rl::RemoteLimiter
// (which checks a request before sending it, so a mistake is an error even while the server is
// unreachable, never a FailureMode decision).
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "rl/limit.h"

namespace rl {

enum class Operation : uint8_t { kCheck, kPeek, kAcquire, kRefund, kCharge };

// OK when `limits` are valid (ValidateLimits) for `op` and `cost` (the amount of a refund or
// charge) is in range: a check takes no CONCURRENCY limit, an acquire needs exactly one, a refund
// or charge takes none and no refund touches a LEAKY_BUCKET.
absl::Status ValidateOperation(Operation op, absl::Span<const Limit> limits, int64_t cost);

}  // namespace rl

// rl.so's bound on new keys (see admission.h).
#include "admission.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "rl/ascii.h"

namespace rl::module {

Admission& Admissions() {
  static Admission admission;
  return admission;
}

std::string_view OverflowModeName(FailureMode mode) {
  return mode == FailureMode::kFailClosed ? "fail-closed" : "fail-open";
}

absl::Status Admission::SetOption(std::string_view name, std::string_view value) {
  const std::string text(value);
  if (EqualsIgnoreCase(name, "MAXMEMORY-SHARE")) {
    // A plain decimal: no sign, no exponent, no "nan" or "inf" that strtod would take.
    const bool plain = !text.empty() && text.find_first_not_of("0123456789.") == std::string::npos;
    char* end = nullptr;
    const double share = plain ? std::strtod(text.c_str(), &end) : 0;
    if (!plain || end != text.c_str() + text.size() || !(share > 0 && share <= 1)) {
      return absl::InvalidArgumentError("MAXMEMORY-SHARE must be a number in (0, 1], got '" +
                                        EchoToken(value) + "'");
    }
    share_ = share;
    return absl::OkStatus();
  }
  if (EqualsIgnoreCase(name, "MAX-KEYS")) {
    int64_t keys = 0;
    if (!ParseInt64(value, &keys) || keys < 0) {
      return absl::InvalidArgumentError("MAX-KEYS must be an integer >= 0 (0 = none), got '" +
                                        EchoToken(value) + "'");
    }
    max_keys_ = static_cast<uint64_t>(keys);
    return absl::OkStatus();
  }
  if (EqualsIgnoreCase(name, "OVERFLOW")) {
    if (EqualsIgnoreCase(value, "fail-open")) {
      overflow_ = FailureMode::kFailOpen;
    } else if (EqualsIgnoreCase(value, "fail-closed")) {
      overflow_ = FailureMode::kFailClosed;
    } else {
      return absl::InvalidArgumentError("OVERFLOW must be fail-open or fail-closed, got '" +
                                        EchoToken(value) + "'");
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError("unknown load argument");
}

bool Admission::AdmitNewKey(RedisModuleCtx* ctx, int ctx_flags) const {
  // The master (or the AOF) stored it already: refusing it here would only make this node differ.
  if (ctx_flags & (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING)) return true;
  // The same measure Redis evicts by (replica output and AOF buffers excluded). Read only for a
  // new key: checks of existing keys never pay for it.
  if ((ctx_flags & REDISMODULE_CTX_FLAGS_MAXMEMORY) && RedisModule_GetUsedMemoryRatio() >= share_) {
    return false;
  }
  return max_keys_ == 0 || RedisModule_DbSize(ctx) < max_keys_;
}

Decision Refused(const Decision& fresh) {
  Decision d = fresh;
  d.allowed = false;
  d.shadow_denied = false;
  d.decided_by = DecidedBy::kOverflow;
  d.binding = 0;
  for (size_t i = 0; i < d.count; ++i) {
    LimitResult& r = d.limits[i];
    const int64_t wait = std::clamp<int64_t>(r.window_ms, 1, 1000);
    r.allowed = false;
    r.remaining = 0;
    r.retry_after_ms = wait;
    r.reset_after_ms = wait;
    if (wait > d.limits[d.binding].retry_after_ms) d.binding = static_cast<uint8_t>(i);
  }
  if (d.count > 0) {
    const LimitResult& b = d.limits[d.binding];
    d.limit = b.limit;
    d.remaining = 0;
    d.retry_after_ms = b.retry_after_ms;
    d.reset_after_ms = b.reset_after_ms;
  }
  return d;
}

}  // namespace rl::module

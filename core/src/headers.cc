// HTTP header values from a decision. They are computed here, once, so that every client (PHP,
// Python, a C++ service) prints the same numbers with the same rounding.
//
// Field syntax follows draft-ietf-httpapi-ratelimit-headers (-08 and later): RateLimit-Policy is
// a Structured Fields list of String items with parameters q (quota) and w (window, seconds);
// RateLimit is a list of String items with r (remaining) and t (seconds). Lists are serialised
// the canonical RFC 8941 way, ", " between members.
//
// Rounding: every "seconds" value is rounded up, so a client that trusts a header never comes
// back too early.
//
// Retry-After when the call can never pass (retry_after_ms == kRetryNever, cost above what the
// limit can hold): Retry-After is left out. Any delay would be a lie that invites a retry loop
// which cannot succeed; the caller should answer 429 (or 413) without it. RateLimit's t then
// reports the time until the binding window is replenished, which is still true.
#include "rl/headers.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace rl {
namespace {

// RFC 8941 Integers have at most 15 digits.
constexpr int64_t kMaxSfInteger = 999'999'999'999'999;
// Names the draft fields' entry when the caller gives no policy name (inline limits).
constexpr std::string_view kDefaultPolicyName = "default";

// Milliseconds to whole seconds, rounded up; negative input counts as zero.
int64_t CeilSeconds(int64_t ms) {
  if (ms <= 0) return 0;
  return ms / 1000 + (ms % 1000 != 0 ? 1 : 0);
}

// A value for a Structured Fields Integer parameter: non-negative and at most 15 digits.
std::string SfInteger(int64_t value) {
  return std::to_string(std::clamp<int64_t>(value, 0, kMaxSfInteger));
}

// A Structured Fields String: quoted, with '"' and '\' escaped. SF strings carry printable ASCII
// only, so anything else becomes '?' rather than producing a header a client must drop.
void AppendSfString(std::string_view text, std::string* out) {
  out->push_back('"');
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(ch);
    } else if (c >= 0x20 && c <= 0x7e) {
      out->push_back(ch);
    } else {
      out->push_back('?');
    }
  }
  out->push_back('"');
}

// Saturating add for the wall-clock reset, so a hostile or broken clock cannot overflow.
int64_t SaturatingAdd(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b) {
    return std::numeric_limits<int64_t>::max();
  }
  if (b < 0 && a < std::numeric_limits<int64_t>::min() - b) {
    return std::numeric_limits<int64_t>::min();
  }
  return a + b;
}

}  // namespace

// Each entry's name is distinct within a decision, so a client can tell the limits apart.
std::string HeaderEntryName(const Decision& decision, size_t index, std::string_view policy_name) {
  std::string name(policy_name.empty() ? kDefaultPolicyName : policy_name);
  if (decision.count <= 1) return name;
  const LimitResult& limit = decision.limits[index];
  name += '-';
  name += FormatDuration(limit.window_ms);
  bool shared_window = false;
  for (size_t i = 0; i < decision.count; ++i) {
    if (i != index && decision.limits[i].window_ms == limit.window_ms) shared_window = true;
  }
  if (shared_window) {
    // Limits carry no algorithm in the decision; their position is the stable tiebreak.
    name += '-';
    name += std::to_string(index + 1);
  }
  return name;
}

std::vector<HeaderField> HeaderValues(const Decision& decision, std::string_view policy_name,
                                      int64_t wall_now_ms) {
  std::vector<HeaderField> fields;
  // A failure mode evaluated no limit: its zeros mean "unknown", and printed as
  // X-RateLimit-Limit: 0 they would tell a client it has no allowance at all. Only when to ask
  // again (fail-closed) is known.
  if (decision.decided_by == DecidedBy::kFailOpen ||
      decision.decided_by == DecidedBy::kFailClosed) {
    if (!decision.allowed && decision.retry_after_ms > 0) {
      fields.push_back({"Retry-After", std::to_string(CeilSeconds(decision.retry_after_ms))});
    }
    return fields;
  }
  fields.reserve(6);

  const bool never = decision.retry_after_ms < 0;
  const int64_t remaining = std::max<int64_t>(decision.remaining, 0);
  const int64_t reset_after_ms = std::max<int64_t>(decision.reset_after_ms, 0);

  fields.push_back({"X-RateLimit-Limit", std::to_string(std::max<int64_t>(decision.limit, 0))});
  fields.push_back({"X-RateLimit-Remaining", std::to_string(remaining)});
  fields.push_back({"X-RateLimit-Reset",
                    std::to_string(CeilSeconds(SaturatingAdd(wall_now_ms, reset_after_ms)))});

  const size_t count = std::min<size_t>(decision.count, decision.limits.size());
  if (count > 0) {
    std::string policy;
    for (size_t i = 0; i < count; ++i) {
      const LimitResult& limit = decision.limits[i];
      if (i > 0) policy += ", ";
      AppendSfString(HeaderEntryName(decision, i, policy_name), &policy);
      policy += ";q=";
      policy += SfInteger(limit.limit);
      // A CONCURRENCY limit has no window (its window_ms is a lease's ttl): w is left out, as
      // the draft allows.
      if ((decision.leases >> i & 1) != 0) continue;
      policy += ";w=";
      // The draft's window is a non-zero integer of seconds; a 250ms window shows as 1.
      policy += SfInteger(std::max<int64_t>(CeilSeconds(limit.window_ms), 1));
    }
    fields.push_back({"RateLimit-Policy", std::move(policy)});
  }

  // The binding limit names the RateLimit entry; without per-limit results (count == 0) the
  // entry is just the policy name, so RateLimit is still there for the caller.
  const size_t binding = decision.binding < count ? decision.binding : 0;
  std::string rate_limit;
  if (count > 0) {
    AppendSfString(HeaderEntryName(decision, binding, policy_name), &rate_limit);
  } else {
    AppendSfString(policy_name.empty() ? kDefaultPolicyName : policy_name, &rate_limit);
  }
  // Denied with a finite retry: t is the retry so that Retry-After does not point earlier than
  // the end of the effective window (the draft's rule). Otherwise: time until full reset.
  const int64_t t_seconds = (!decision.allowed && !never) ? CeilSeconds(decision.retry_after_ms)
                                                          : CeilSeconds(reset_after_ms);
  rate_limit += ";r=";
  rate_limit += SfInteger(remaining);
  rate_limit += ";t=";
  rate_limit += SfInteger(t_seconds);
  fields.push_back({"RateLimit", std::move(rate_limit)});

  if (!decision.allowed && !never) {
    fields.push_back({"Retry-After", std::to_string(CeilSeconds(decision.retry_after_ms))});
  }
  return fields;
}

}  // namespace rl

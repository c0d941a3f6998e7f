// Limits and policies: what a rate limit is, and the one textual spec parser that the RESP server,
// config files and library users share ("SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rl/algorithm_rows.h"

namespace rl {

// kTokenBucket, kGcra, kSlidingLog, kSlidingWindow, kFixedWindow, kLeakyBucket, kConcurrency,
// kAlignedWindow: one per row of the registry (rl/algorithm_rows.h), which says what each is.
enum class Algorithm : uint8_t {
#define RL_ENUMERATOR(Name, id, spec_name, traits, shape) k##Name = id,
  RL_ALGORITHM_ROWS(RL_ENUMERATOR)
#undef RL_ENUMERATOR
};

// Every algorithm, in id order.
absl::Span<const Algorithm> Algorithms();
// The spec name: "TOKEN_BUCKET", "GCRA", "SLIDING_LOG", "SLIDING_WINDOW", "FIXED_WINDOW",
// "LEAKY_BUCKET", "CONCURRENCY", "ALIGNED_WINDOW"; "UNKNOWN" for a value that is none of them.
std::string_view AlgorithmName(Algorithm algorithm);
// Case-insensitive inverse of AlgorithmName; nullopt for anything else.
std::optional<Algorithm> ParseAlgorithm(std::string_view name);

// "LIMIT per WINDOW". Token bucket, GCRA and leaky bucket read it as a rate (limit / window) with a
// capacity (burst, queue size) that defaults to `limit`. A CONCURRENCY limit reads LIMIT as the
// most leases held at once and WINDOW as each lease's ttl.
struct Limit {
  Algorithm algorithm = Algorithm::kTokenBucket;
  int64_t limit = 0;      // > 0
  int64_t window_ms = 0;  // > 0
  int64_t burst = 0;      // 0 = same as limit; only meaningful for bucket algorithms
  // A penalty block (BLOCK duration): when this limit denies a call, every call of it is denied
  // for block_ms from then on. 0 = none; not for CONCURRENCY.
  int64_t block_ms = 0;

  int64_t capacity() const { return burst > 0 ? burst : limit; }
  friend bool operator==(const Limit& a, const Limit& b) {
    return a.algorithm == b.algorithm && a.limit == b.limit && a.window_ms == b.window_ms &&
           a.capacity() == b.capacity() && a.block_ms == b.block_ms;
  }
  friend bool operator!=(const Limit& a, const Limit& b) { return !(a == b); }
};

// Largest accepted values; chosen so every product the algorithms form fits in int64.
inline constexpr int64_t kMaxLimit = int64_t{1} << 40;
inline constexpr int64_t kMaxWindowMs = int64_t{10} * 365 * 24 * 3600 * 1000;  // ten years
inline constexpr size_t kMaxLimitsPerCheck = 8;
// Most leases one CONCURRENCY limit may allow (each live lease is remembered).
inline constexpr int64_t kMaxConcurrency = 10000;
// A lease's ttl when CONCURRENCY is written without LEASE.
inline constexpr int64_t kDefaultLeaseMs = 60 * 1000;

// What a bare number (a duration without a unit) means.
enum class BareDuration : uint8_t {
  // Refused with the fix in the message ("window '60' needs a unit: 60s, 1m, 250ms"): what people
  // type. Coming from Lua scripts and redis-cell they mean seconds; earlier versions read
  // milliseconds, so no guess is safe.
  kRefused = 0,
  // Milliseconds, as earlier versions read it: only for text they persisted or replicated (an
  // RDB, an AOF, a primary not yet upgraded), so that it keeps its meaning.
  kMilliseconds = 1,
};

// Parses a duration with a unit: "250ms", "1s", "60s", "1m", "1h", "1d". Must be in
// [1, kMaxWindowMs]. Error messages are fit for a RESP "-ERR " reply.
absl::StatusOr<int64_t> ParseDurationMs(std::string_view text,
                                        BareDuration bare = BareDuration::kRefused);
// A wait named `what` in its errors (e.g. "MAXWAIT"): a duration with a unit as above, where zero
// ("0ms", "0s": no wait) is allowed too.
absl::StatusOr<int64_t> ParseWaitMs(std::string_view text, std::string_view what);
// Shortest exact rendering: 60000 -> "1m", 1500 -> "1500ms".
std::string FormatDuration(int64_t ms);

// Parses one "<ALGORITHM> limit window [BURST n] [BLOCK duration]" (or "CONCURRENCY n
// [LEASE ttl]") starting at tokens[*pos] and advances *pos past it. Fails when tokens[*pos] is
// not an algorithm name or the numbers are invalid. `bare`: what a duration without a unit means.
absl::StatusOr<Limit> ParseLimit(absl::Span<const std::string_view> tokens, size_t* pos,
                                 BareDuration bare = BareDuration::kRefused);
// Parses consecutive limits from tokens[*pos] until a token that is not an algorithm name (so a
// caller can go on with its own keywords such as COST). At least one, at most kMaxLimitsPerCheck.
absl::StatusOr<std::vector<Limit>> ParseLimits(absl::Span<const std::string_view> tokens,
                                               size_t* pos,
                                               BareDuration bare = BareDuration::kRefused);
// The same loop into caller-provided room (no allocation; what a server does per request):
// fills out[0..*count) and validates them together (ValidateLimits).
absl::Status ParseLimitsInto(absl::Span<const std::string_view> tokens, size_t* pos,
                             absl::Span<Limit> out, size_t* count,
                             BareDuration bare = BareDuration::kRefused);
// Canonical spec text, e.g. "TOKEN_BUCKET 100 1m BURST 20 BLOCK 1h", "CONCURRENCY 3 LEASE 5m".
std::string FormatLimit(const Limit& limit);

// What a remote caller does when the limiter cannot be reached in time.
enum class FailureMode : uint8_t { kFailOpen = 0, kFailClosed = 1 };

// A named set of limits checked together, all or nothing. A policy's state lives under its name,
// so renaming a policy starts it clean.
struct Policy {
  std::string name;
  std::vector<Limit> limits;
  bool shadow = false;  // evaluate and count, but always allow
  FailureMode failure_mode = FailureMode::kFailOpen;
  // Set by PolicyRegistry when this policy replaced one of the same name whose limit had another
  // window (a state lives under its algorithm and window, so the new window would find none):
  // (index into `limits`, the old limit). A key's state under the old limit carries over at the
  // key's next check, refund, charge or acquire, keeping the share of the allowance it had used
  // (see CarryOver in rl/limiter.h). Not part of the spec text; empty for a new policy.
  std::vector<std::pair<size_t, Limit>> carried_from;
};

// Fills next->carried_from from `previous`, the policy it replaces: each limit of `next` with no
// limit of the same state (algorithm and window) in `previous` takes over an old limit of the
// same algorithm whose state `next` leaves unused (the one at the same position first); a limit
// kept as it was keeps what it carried already, so reloading an unchanged file loses nothing.
void LinkPreviousPolicy(const Policy& previous, Policy* next);

// Parses "<limit>... [SHADOW] [FAIL_OPEN|FAIL_CLOSED]" (keywords case-insensitive, any order after
// the limits). The name must be 1..128 printable characters without spaces. BareDuration::
// kMilliseconds is for reading text that earlier versions stored or replicated, nothing else.
absl::StatusOr<Policy> ParsePolicy(std::string_view name, absl::Span<const std::string_view> tokens,
                                   BareDuration bare = BareDuration::kRefused);
// Same, from one whitespace-separated string (config files).
absl::StatusOr<Policy> ParsePolicy(std::string_view name, std::string_view spec,
                                   BareDuration bare = BareDuration::kRefused);
// Canonical spec text of the limits and flags (without the name); ParsePolicy round-trips it.
std::string FormatPolicy(const Policy& policy);

// Splits a spec on ASCII whitespace, dropping empty pieces; the views point into `spec`.
std::vector<std::string_view> SplitSpec(std::string_view spec);
// OK when `name` is 1..128 printable ASCII characters without spaces (0x21..0x7E).
absl::Status ValidatePolicyName(std::string_view name);
// OK when every limit is in range, BURST appears only on bucket algorithms, BLOCK not on
// CONCURRENCY, there are 1..kMaxLimitsPerCheck limits, no two share algorithm and window (they
// would share state) and at most one is CONCURRENCY.
absl::Status ValidateLimits(absl::Span<const Limit> limits);
// ValidatePolicyName and ValidateLimits together: what ParsePolicy guarantees, for policies
// built in code.
absl::Status ValidatePolicy(const Policy& policy);

}  // namespace rl

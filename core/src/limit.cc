// The one textual spec parser for limits and policies. The RESP server, config files and library
// users all go through here, so a spec means the same everywhere and every mistake gets the same
// message. Input is untrusted (it comes off the wire): nothing here asserts or throws, and every
// error is an absl::InvalidArgumentError whose text can follow "ERR " in a Redis reply.
#include "rl/limit.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <string>

#include "registry.h"
#include "rl/ascii.h"

namespace rl {
namespace {

constexpr size_t kMaxPolicyNameLength = 128;

// "TOKEN_BUCKET, GCRA, ... or CONCURRENCY", for the message about an unknown algorithm.
std::string AlgorithmList() {
  std::string out;
  for (size_t i = 0; i < internal::kAlgorithmCount; ++i) {
    if (i > 0) out += i + 1 == internal::kAlgorithmCount ? " or " : ", ";
    out += internal::kAlgorithmRows[i].name;
  }
  return out;
}

constexpr std::string_view kWindowHint = "(use e.g. 250ms, 1s, 1m, 1h, 1d)";

// Longest first: FormatDuration picks the first that divides. Parsing is case-insensitive like
// every other keyword of the protocol; "M" is minutes too, there are no months.
struct DurationUnit {
  std::string_view suffix;
  int64_t ms;
};
constexpr DurationUnit kDurationUnits[] = {
    {"d", 24 * 3600 * 1000}, {"h", 3600 * 1000}, {"m", 60 * 1000}, {"s", 1000}, {"ms", 1}};

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string Echo(std::string_view token) { return EchoToken(token); }

// Strict unsigned decimal: digits only (no sign, space or "0x"). Returns false when empty, not
// all digits, or above `max`; overflow is caught before it can happen.
bool ParseDigits(std::string_view text, int64_t max, int64_t* out) {
  if (text.empty()) return false;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const int digit = c - '0';
    if (value > (max - digit) / 10) return false;
    value = value * 10 + digit;
  }
  *out = value;
  return true;
}

bool AllDigits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// Parses a count in [1, kMaxLimit]; `what` names it in the message ("limit", "burst"), the text
// ValidateLimit gives for the same number built in code (one text per mistake).
absl::StatusOr<int64_t> ParseCount(std::string_view text, std::string_view what) {
  int64_t value = 0;
  if (!AllDigits(text) || !ParseDigits(text, kMaxLimit, &value) || value < 1) {
    return absl::InvalidArgumentError(std::string(what) + " must be between 1 and " +
                                      std::to_string(kMaxLimit));
  }
  return value;
}

absl::Status ValidateLimit(const Limit& limit) {
  if (!internal::KnownAlgorithm(limit.algorithm)) {
    return absl::InvalidArgumentError("unknown algorithm");
  }
  if (limit.algorithm == Algorithm::kConcurrency) {
    if (limit.limit < 1 || limit.limit > kMaxConcurrency) {
      return absl::InvalidArgumentError("CONCURRENCY must be between 1 and " +
                                        std::to_string(kMaxConcurrency));
    }
    if (limit.window_ms < 1 || limit.window_ms > kMaxWindowMs) {
      return absl::InvalidArgumentError("LEASE must be between 1ms and " +
                                        FormatDuration(kMaxWindowMs));
    }
  } else if (limit.limit < 1 || limit.limit > kMaxLimit) {
    return absl::InvalidArgumentError("limit must be between 1 and " + std::to_string(kMaxLimit));
  }
  if (limit.window_ms < 1 || limit.window_ms > kMaxWindowMs) {
    return absl::InvalidArgumentError("window must be between 1ms and " +
                                      FormatDuration(kMaxWindowMs));
  }
  if (limit.burst < 0 || limit.burst > kMaxLimit) {
    return absl::InvalidArgumentError("burst must be between 1 and " + std::to_string(kMaxLimit));
  }
  if (limit.burst != 0 && !internal::HasBurst(limit.algorithm)) {
    return absl::InvalidArgumentError("BURST is not allowed with " +
                                      std::string(AlgorithmName(limit.algorithm)));
  }
  if (limit.block_ms < 0 || limit.block_ms > kMaxWindowMs) {
    return absl::InvalidArgumentError("BLOCK must be between 1ms and " +
                                      FormatDuration(kMaxWindowMs));
  }
  if (limit.block_ms != 0 && limit.algorithm == Algorithm::kConcurrency) {
    return absl::InvalidArgumentError("BLOCK is not allowed with CONCURRENCY");
  }
  return absl::OkStatus();
}

// A duration of at least `min_ms` (1, or 0 where "no wait" means something). `what` names it
// when a unit is missing ("window", "BLOCK", "LEASE"); `noun` when it is malformed or out of range
// (limit options have always said "window" there, and clients match that text).
absl::StatusOr<int64_t> ParseDuration(std::string_view text, std::string_view what,
                                      BareDuration bare, int64_t min_ms = 1,
                                      std::string_view noun = "window") {
  const size_t digits = std::min(text.find_first_not_of("0123456789"), text.size());
  const std::string_view number = text.substr(0, digits);
  const std::string_view unit = text.substr(digits);
  int64_t unit_ms = unit.empty() ? 1 : 0;  // bare: milliseconds, as earlier versions read it
  for (const DurationUnit& u : kDurationUnits) {
    if (EqualsIgnoreCase(unit, u.suffix)) unit_ms = u.ms;
  }
  if (number.empty() || unit_ms == 0) {
    return absl::InvalidArgumentError("invalid " + std::string(noun) + " '" + Echo(text) + "' " +
                                      std::string(kWindowHint));
  }
  int64_t value = 0;
  // Bounding the count by kMaxWindowMs / unit_ms keeps the product in range without overflow.
  if (!ParseDigits(number, kMaxWindowMs / unit_ms, &value) || value * unit_ms < min_ms) {
    return absl::InvalidArgumentError(std::string(noun) + " '" + Echo(text) + "' out of range (" +
                                      std::to_string(min_ms) + "ms to " +
                                      FormatDuration(kMaxWindowMs) + ")");
  }
  if (unit.empty() && bare == BareDuration::kRefused) {
    // The fix in the message: people who mean seconds see how to say so.
    return absl::InvalidArgumentError(std::string(what) + " '" + Echo(text) +
                                      "' needs a unit: " + Echo(text) + "s, 1m, 250ms");
  }
  return value * unit_ms;
}

// "CONCURRENCY n [LEASE ttl]" from tokens[i] (the keyword) on; advances *pos past it.
absl::StatusOr<Limit> ParseConcurrency(absl::Span<const std::string_view> tokens, size_t* pos,
                                       BareDuration bare) {
  size_t i = *pos;
  if (tokens.size() - i < 2) {
    return absl::InvalidArgumentError(
        "CONCURRENCY needs the most leases held at once, e.g. CONCURRENCY 3 [LEASE 5m]");
  }
  int64_t n = 0;
  if (!AllDigits(tokens[i + 1]) || !ParseDigits(tokens[i + 1], kMaxConcurrency, &n) || n < 1) {
    return absl::InvalidArgumentError("CONCURRENCY must be between 1 and " +
                                      std::to_string(kMaxConcurrency));
  }
  Limit limit{Algorithm::kConcurrency, n, kDefaultLeaseMs};
  i += 2;
  if (i < tokens.size() && EqualsIgnoreCase(tokens[i], "LEASE")) {
    if (i + 1 >= tokens.size()) return absl::InvalidArgumentError("LEASE needs a duration");
    absl::StatusOr<int64_t> ttl = ParseDuration(tokens[i + 1], "LEASE", bare);
    if (!ttl.ok()) return ttl.status();
    limit.window_ms = *ttl;
    i += 2;
  }
  if (i < tokens.size() && EqualsIgnoreCase(tokens[i], "BURST")) {
    return absl::InvalidArgumentError("BURST is not allowed with CONCURRENCY");
  }
  if (i < tokens.size() && EqualsIgnoreCase(tokens[i], "BLOCK")) {
    return absl::InvalidArgumentError("BLOCK is not allowed with CONCURRENCY");
  }
  *pos = i;
  return limit;
}

}  // namespace

absl::Span<const Algorithm> Algorithms() {
  static constexpr auto kAll = [] {
    std::array<Algorithm, internal::kAlgorithmCount> all{};
    for (size_t i = 0; i < all.size(); ++i) all[i] = internal::kAlgorithmRows[i].algorithm;
    return all;
  }();
  return kAll;
}

std::string_view AlgorithmName(Algorithm algorithm) {
  return internal::KnownAlgorithm(algorithm) ? internal::RowOf(algorithm).name
                                             : std::string_view("UNKNOWN");
}

std::optional<Algorithm> ParseAlgorithm(std::string_view name) {
  for (const internal::AlgorithmRow& row : internal::kAlgorithmRows) {
    if (EqualsIgnoreCase(name, row.name)) return row.algorithm;
  }
  return std::nullopt;
}

absl::StatusOr<int64_t> ParseDurationMs(std::string_view text, BareDuration bare) {
  return ParseDuration(text, "window", bare);
}

absl::StatusOr<int64_t> ParseWaitMs(std::string_view text, std::string_view what) {
  return ParseDuration(text, what, BareDuration::kRefused, /*min_ms=*/0, what);
}

std::string FormatDuration(int64_t ms) {
  for (const DurationUnit& u : kDurationUnits) {
    if (ms > 0 && ms % u.ms == 0) return std::to_string(ms / u.ms) + std::string(u.suffix);
  }
  return std::to_string(ms) + "ms";
}

absl::StatusOr<Limit> ParseLimit(absl::Span<const std::string_view> tokens, size_t* pos,
                                 BareDuration bare) {
  size_t i = *pos;
  if (i >= tokens.size()) {
    return absl::InvalidArgumentError("missing limit (e.g. SLIDING_WINDOW 100 1m)");
  }
  const std::optional<Algorithm> algorithm = ParseAlgorithm(tokens[i]);
  if (!algorithm.has_value()) {
    return absl::InvalidArgumentError("unknown algorithm '" + Echo(tokens[i]) + "' (use " +
                                      AlgorithmList() + ")");
  }
  if (*algorithm == Algorithm::kConcurrency) return ParseConcurrency(tokens, pos, bare);
  const internal::AlgorithmRow& row = internal::RowOf(*algorithm);
  if (tokens.size() - i < 3) {
    return absl::InvalidArgumentError(std::string(row.name) + " needs a limit and a window, e.g. " +
                                      std::string(row.name) + " 100 1m");
  }
  Limit limit;
  limit.algorithm = *algorithm;
  absl::StatusOr<int64_t> count = ParseCount(tokens[i + 1], "limit");
  if (!count.ok()) return count.status();
  limit.limit = *count;
  absl::StatusOr<int64_t> window = ParseDurationMs(tokens[i + 2], bare);
  if (!window.ok()) return window.status();
  limit.window_ms = *window;
  i += 3;

  // Options after the numbers, in any order, each at most once.
  while (i < tokens.size()) {
    const bool burst = EqualsIgnoreCase(tokens[i], "BURST");
    const bool block = EqualsIgnoreCase(tokens[i], "BLOCK");
    if (EqualsIgnoreCase(tokens[i], "LEASE")) {
      return absl::InvalidArgumentError("LEASE is only for CONCURRENCY");
    }
    if (!burst && !block) break;
    if (burst && !(row.traits & internal::kBurst)) {
      return absl::InvalidArgumentError("BURST is not allowed with " + std::string(row.name));
    }
    if ((burst && limit.burst != 0) || (block && limit.block_ms != 0)) {
      return absl::InvalidArgumentError(std::string(burst ? "BURST" : "BLOCK") +
                                        " given more than once");
    }
    if (i + 1 >= tokens.size()) {
      return absl::InvalidArgumentError(std::string(burst ? "BURST" : "BLOCK") + " needs a value");
    }
    if (burst) {
      absl::StatusOr<int64_t> value = ParseCount(tokens[i + 1], "burst");
      if (!value.ok()) return value.status();
      limit.burst = *value;
    } else {
      absl::StatusOr<int64_t> value = ParseDuration(tokens[i + 1], "BLOCK", bare);
      if (!value.ok()) return value.status();
      limit.block_ms = *value;
    }
    i += 2;
  }
  *pos = i;
  return limit;
}

absl::Status ParseLimitsInto(absl::Span<const std::string_view> tokens, size_t* pos,
                             absl::Span<Limit> out, size_t* count, BareDuration bare) {
  size_t n = 0;
  size_t i = *pos;
  // The first token must be a limit; after that, the first non-algorithm token ends the list.
  do {
    if (n == out.size() || n == kMaxLimitsPerCheck) {
      return absl::InvalidArgumentError("too many limits (at most " +
                                        std::to_string(kMaxLimitsPerCheck) + " per check)");
    }
    absl::StatusOr<Limit> limit = ParseLimit(tokens, &i, bare);
    if (!limit.ok()) return limit.status();
    out[n++] = *limit;
  } while (i < tokens.size() && ParseAlgorithm(tokens[i]).has_value());

  if (absl::Status status = ValidateLimits(out.subspan(0, n)); !status.ok()) return status;
  *pos = i;
  *count = n;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Limit>> ParseLimits(absl::Span<const std::string_view> tokens,
                                               size_t* pos, BareDuration bare) {
  std::array<Limit, kMaxLimitsPerCheck> buf;
  size_t n = 0;
  if (absl::Status status = ParseLimitsInto(tokens, pos, absl::MakeSpan(buf), &n, bare);
      !status.ok()) {
    return status;
  }
  return std::vector<Limit>(buf.begin(), buf.begin() + n);
}

std::string FormatLimit(const Limit& limit) {
  std::string out(AlgorithmName(limit.algorithm));
  out += ' ';
  out += std::to_string(limit.limit);
  if (limit.algorithm == Algorithm::kConcurrency) {
    // The default ttl is left out, like a default BURST.
    if (limit.window_ms != kDefaultLeaseMs) {
      out += " LEASE ";
      out += FormatDuration(limit.window_ms);
    }
    return out;
  }
  out += ' ';
  out += FormatDuration(limit.window_ms);
  // A burst equal to the limit is the default; leaving it out keeps the canonical text short.
  if (limit.burst > 0 && limit.burst != limit.limit) {
    out += " BURST ";
    out += std::to_string(limit.burst);
  }
  if (limit.block_ms > 0) {
    out += " BLOCK ";
    out += FormatDuration(limit.block_ms);
  }
  return out;
}

absl::StatusOr<Policy> ParsePolicy(std::string_view name, absl::Span<const std::string_view> tokens,
                                   BareDuration bare) {
  if (absl::Status status = ValidatePolicyName(name); !status.ok()) return status;
  Policy policy;
  policy.name = std::string(name);
  size_t pos = 0;
  absl::StatusOr<std::vector<Limit>> limits = ParseLimits(tokens, &pos, bare);
  if (!limits.ok()) return limits.status();
  policy.limits = *std::move(limits);

  bool failure_mode_set = false;
  for (; pos < tokens.size(); ++pos) {
    const std::string_view token = tokens[pos];
    if (EqualsIgnoreCase(token, "SHADOW")) {
      if (policy.shadow) return absl::InvalidArgumentError("SHADOW given more than once");
      policy.shadow = true;
      continue;
    }
    std::optional<FailureMode> mode;
    if (EqualsIgnoreCase(token, "FAIL_OPEN")) mode = FailureMode::kFailOpen;
    if (EqualsIgnoreCase(token, "FAIL_CLOSED")) mode = FailureMode::kFailClosed;
    if (!mode.has_value()) {
      // Also catches a limit written after the keywords: limits come first.
      return absl::InvalidArgumentError("syntax error near '" + Echo(token) + "'");
    }
    if (failure_mode_set) {
      return absl::InvalidArgumentError(policy.failure_mode != *mode
                                            ? "FAIL_OPEN and FAIL_CLOSED exclude each other"
                                            : "failure mode given more than once");
    }
    policy.failure_mode = *mode;
    failure_mode_set = true;
  }
  return policy;
}

absl::StatusOr<Policy> ParsePolicy(std::string_view name, std::string_view spec,
                                   BareDuration bare) {
  const std::vector<std::string_view> tokens = SplitSpec(spec);
  return ParsePolicy(name, absl::MakeConstSpan(tokens), bare);
}

std::string FormatPolicy(const Policy& policy) {
  std::string out;
  for (const Limit& limit : policy.limits) {
    if (!out.empty()) out += ' ';
    out += FormatLimit(limit);
  }
  if (policy.shadow) out += " SHADOW";
  // FAIL_OPEN is the default and is left out, like a default BURST.
  if (policy.failure_mode == FailureMode::kFailClosed) out += " FAIL_CLOSED";
  return out;
}

std::vector<std::string_view> SplitSpec(std::string_view spec) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < spec.size()) {
    while (i < spec.size() && IsSpace(spec[i])) ++i;
    const size_t start = i;
    while (i < spec.size() && !IsSpace(spec[i])) ++i;
    if (i > start) tokens.push_back(spec.substr(start, i - start));
  }
  return tokens;
}

absl::Status ValidatePolicyName(std::string_view name) {
  // Printable ASCII only: the name goes into state keys, RESP replies and HTTP structured-field
  // strings, which cannot carry control bytes or non-ASCII text.
  bool ok = !name.empty() && name.size() <= kMaxPolicyNameLength;
  for (size_t i = 0; ok && i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    ok = c >= 0x21 && c <= 0x7e;
  }
  if (!ok) {
    return absl::InvalidArgumentError("invalid policy name '" + Echo(name) + "' (1 to " +
                                      std::to_string(kMaxPolicyNameLength) +
                                      " printable characters, no spaces)");
  }
  return absl::OkStatus();
}

absl::Status ValidateLimits(absl::Span<const Limit> limits) {
  if (limits.empty())
    return absl::InvalidArgumentError("missing limit (e.g. SLIDING_WINDOW 100 1m)");
  if (limits.size() > kMaxLimitsPerCheck) {
    return absl::InvalidArgumentError("too many limits (at most " +
                                      std::to_string(kMaxLimitsPerCheck) + " per check)");
  }
  for (size_t i = 0; i < limits.size(); ++i) {
    if (absl::Status status = ValidateLimit(limits[i]); !status.ok()) return status;
    for (size_t j = 0; j < i; ++j) {
      if (limits[i].algorithm == Algorithm::kConcurrency &&
          limits[j].algorithm == Algorithm::kConcurrency) {
        return absl::InvalidArgumentError("more than one CONCURRENCY limit (one per check)");
      }
      if (limits[j].algorithm == limits[i].algorithm &&
          limits[j].window_ms == limits[i].window_ms) {
        return absl::InvalidArgumentError("duplicate limit " +
                                          std::string(AlgorithmName(limits[i].algorithm)) + " " +
                                          FormatDuration(limits[i].window_ms) +
                                          " (limits of one algorithm need different windows)");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidatePolicy(const Policy& policy) {
  if (absl::Status status = ValidatePolicyName(policy.name); !status.ok()) return status;
  return ValidateLimits(policy.limits);
}

}  // namespace rl

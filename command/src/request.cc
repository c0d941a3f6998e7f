// The RL.* argument grammar (see request.h).
#include "rl/command/request.h"

#include <string>

#include "rl/ascii.h"

namespace rl::command {
namespace {

absl::Status NotAnInteger() {
  return absl::InvalidArgumentError("value is not an integer or out of range");
}

// "TOKEN_BUCKET, GCRA, ..., CONCURRENCY": every algorithm, for the message of a missing limit.
std::string AlgorithmNames() {
  std::string names;
  for (Algorithm a : Algorithms()) names.append(names.empty() ? "" : ", ").append(AlgorithmName(a));
  return names;
}

}  // namespace

absl::Status SyntaxError() { return absl::InvalidArgumentError("syntax error"); }

namespace {

// What follows the limits from args[pos] on: COST n, MAXWAIT d (RL.CHECK only), HEADERS, LIMITS
// (none for RL.RESET), each at most once; RL.REFUND and RL.CHARGE need COST.
absl::Status ParseOptions(Verb verb, absl::Span<const std::string_view> args, size_t pos,
                          Request* r) {
  const bool options = verb != Verb::kReset;
  const bool adjust = verb == Verb::kRefund || verb == Verb::kCharge;
  bool cost_seen = false;
  bool headers_seen = false;
  bool limits_seen = false;
  while (pos < args.size()) {
    const std::string_view token = args[pos];
    if (options && EqualsIgnoreCase(token, "COST") && pos + 1 < args.size()) {
      if (cost_seen) return absl::InvalidArgumentError("COST given more than once");
      if (!ParseInt64(args[pos + 1], &r->cost)) return NotAnInteger();
      if (r->cost < 0) return absl::InvalidArgumentError("COST must not be negative");
      cost_seen = true;
      pos += 2;
    } else if (verb == Verb::kCheck && EqualsIgnoreCase(token, "MAXWAIT") &&
               pos + 1 < args.size()) {
      if (r->max_wait_ms >= 0) return absl::InvalidArgumentError("MAXWAIT given more than once");
      absl::StatusOr<int64_t> ms = ParseWaitMs(args[pos + 1], "MAXWAIT");
      if (!ms.ok()) return ms.status();
      r->max_wait_ms = *ms;
      pos += 2;
    } else if (options && EqualsIgnoreCase(token, "HEADERS")) {
      if (headers_seen) return absl::InvalidArgumentError("HEADERS given more than once");
      r->headers = headers_seen = true;
      ++pos;
    } else if (options && EqualsIgnoreCase(token, "LIMITS")) {
      if (limits_seen) return absl::InvalidArgumentError("LIMITS given more than once");
      r->limits_detail = limits_seen = true;
      ++pos;
    } else {
      return SyntaxError();
    }
  }
  if (adjust && !cost_seen) {
    return absl::InvalidArgumentError(
        std::string(verb == Verb::kRefund ? "RL.REFUND" : "RL.CHARGE") +
        " needs COST n (the amount to " + (verb == Verb::kRefund ? "give back)" : "take)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseRequest(Verb verb, absl::Span<const std::string_view> args,
                          const PolicyLookup& lookup, Request* r, LimitCache* cache) {
  if (args.size() < 3) return SyntaxError();
  r->key = args[1];
  size_t pos = 2;
  // Whether a limit list starts at args[pos]: the cached list's first token is an algorithm name
  // already known, which spares the name lookup.
  auto limits_here = [&]() {
    return pos < args.size() && ((cache != nullptr && cache->StartsWith(args[pos])) ||
                                 ParseAlgorithm(args[pos]).has_value());
  };
  // The list at args[pos] into r->limits: the cached parse when the same bytes came last time,
  // else parsed into r->inline_limits (and remembered).
  auto take_limits = [&]() -> absl::Status {
    if (cache != nullptr) {
      size_t end = 0;
      if (absl::Span<const Limit> hit = cache->Find(args, pos, &end); !hit.empty()) {
        r->limits = hit;
        pos = end;
        return absl::OkStatus();
      }
    }
    const size_t start = pos;
    size_t count = 0;
    if (absl::Status s = ParseLimitsInto(
            args, &pos, absl::MakeSpan(r->inline_limits.data(), r->inline_limits.size()), &count);
        !s.ok()) {
      return s;
    }
    r->limits = absl::MakeConstSpan(r->inline_limits.data(), count);
    if (cache != nullptr) cache->Store(args, start, pos, r->limits);
    return absl::OkStatus();
  };
  // POLICY is tested first: no algorithm has that name, and matching it against every algorithm
  // name first cost a policy check more than its whole lookup.
  const bool by_policy = EqualsIgnoreCase(args[pos], "POLICY");
  // The inline list sent last time (the steady state of a client): taken from the cache at once,
  // without testing its first token on its own before (a hit implies that test).
  size_t cached_end = 0;
  absl::Span<const Limit> cached;
  if (!by_policy && cache != nullptr) cached = cache->Find(args, pos, &cached_end);
  if (!cached.empty()) {
    r->limits = cached;
    pos = cached_end;
    r->scope = kInlineScope;
  } else if (!by_policy && limits_here()) {
    if (absl::Status s = take_limits(); !s.ok()) return s;
    r->scope = kInlineScope;
  } else if (by_policy) {
    if (pos + 1 >= args.size()) return SyntaxError();
    const std::string_view name = args[pos + 1];
    pos += 2;
    if (limits_here()) {
      // The caller's definition, under the policy's state.
      if (absl::Status s = ValidatePolicyName(name); !s.ok()) return s;
      if (absl::Status s = take_limits(); !s.ok()) return s;
      r->scope = name;
      r->policy_name = name;
    } else {
      r->policy = lookup ? lookup(name) : nullptr;
      if (r->policy == nullptr) {
        return absl::NotFoundError("no such policy '" + EchoToken(name) + "'");
      }
      r->limits = r->policy->limits;
      r->scope = r->policy->name;
      r->policy_name = r->policy->name;
      r->shadow = r->policy->shadow;
    }
  } else {
    return absl::InvalidArgumentError("expected a limit (" + AlgorithmNames() +
                                      ") or POLICY name, got '" + EchoToken(args[pos]) + "'");
  }

  return ParseOptions(verb, args, pos, r);
}

absl::Status ParseRelease(absl::Span<const std::string_view> args, ReleaseRequest* out) {
  if (args.size() != 3) {
    return absl::InvalidArgumentError("wrong number of arguments for 'rl.release' command");
  }
  out->key = args[1];
  out->lease_id = args[2];
  return absl::OkStatus();
}

absl::Status ParseThrottle(absl::Span<const std::string_view> args, ThrottleRequest* out) {
  if (args.size() < 5 || args.size() > 6) {
    return absl::InvalidArgumentError("wrong number of arguments for 'cl.throttle' command");
  }
  int64_t max_burst = 0, count = 0, period = 0, quantity = 1;
  if (!ParseInt64(args[2], &max_burst) || !ParseInt64(args[3], &count) ||
      !ParseInt64(args[4], &period) || (args.size() == 6 && !ParseInt64(args[5], &quantity))) {
    return NotAnInteger();
  }
  if (max_burst < 0 || max_burst >= kMaxLimit) {
    return absl::InvalidArgumentError("max_burst must be in [0, 2^40)");
  }
  if (count <= 0 || period <= 0) return absl::InvalidArgumentError("Zero rates are not supported");
  if (count > kMaxLimit || period > kMaxWindowMs / 1000) {
    return absl::InvalidArgumentError("count or period out of range");
  }
  if (quantity < 0) return absl::InvalidArgumentError("quantity must not be negative");
  out->key = args[1];
  out->limit = Limit{Algorithm::kGcra, count, period * 1000, max_burst + 1};
  out->quantity = quantity;
  return absl::OkStatus();
}

}  // namespace rl::command

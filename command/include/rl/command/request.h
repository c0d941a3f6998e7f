// The RL.* argument grammar, once: what RL.CHECK / RL.PEEK / RL.RESET / RL.REFUND / RL.CHARGE /
// RL.ACQUIRE / RL.RELEASE and CL.THROTTLE name, parsed and validated into plain structs that any
// front end (rl-server, rl.so) runs on its own engine. No I/O and no protocol: errors are
// absl::Status values whose text follows "ERR " in a reply (see reply.h for the mapping).
//
//   RL.CHECK   key <limit>... [COST n] [MAXWAIT duration] [HEADERS] [LIMITS]
//   RL.CHECK   key POLICY name [<limit>...] [COST n] [MAXWAIT duration] [HEADERS] [LIMITS]
//   RL.PEEK    (as RL.CHECK; a CONCURRENCY limit may be among the limits)
//   RL.RESET   key (<limit>... | POLICY name [<limit>...])
//   RL.REFUND  key (<limit>... | POLICY name [<limit>...]) COST n [HEADERS] [LIMITS]
//   RL.CHARGE  key (<limit>... | POLICY name [<limit>...]) COST n [HEADERS] [LIMITS]
//   RL.ACQUIRE key (CONCURRENCY n [LEASE ttl] [<limit>...] | POLICY name [...]) [COST n]
//              [HEADERS] [LIMITS]
//   RL.RELEASE key lease-id
//
// <limit> includes "CONCURRENCY n [LEASE ttl]" (see rl/limit.h); which verbs accept it is the
// engine's to say (rl::Limiter and rl::KeyState share one validator per operation).
//
// `POLICY name` alone uses the stored policy of that name; `POLICY name <limit>...` checks the
// given limits under that policy's state (the caller's definition, as rl::RemoteLimiter sends in
// inline mode), so one policy name and key mean one count whoever asks.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "rl/command/limit_cache.h"
#include "rl/limit.h"

namespace rl::command {

// State scopes that no policy name can equal (policy names have no spaces), so user policies and
// internal users of the engine never share state or statistics labels.
inline constexpr std::string_view kInlineScope = "";
inline constexpr std::string_view kThrottleScope = "cl.throttle (redis-cell)";

enum class Verb : uint8_t { kCheck, kPeek, kReset, kRefund, kCharge, kAcquire };

// Finds a stored policy by name (rl-server's PolicyStore, rl.so's registry); null when unknown.
using PolicyLookup = std::function<std::shared_ptr<const Policy>(std::string_view name)>;

// Room for an inline limit list, left unwritten until a parse fills it: a check builds a Request
// on every call, and zeroing eight Limits there cost more than the rest of its construction.
class InlineLimits {
 public:
  InlineLimits() {}

  static constexpr size_t size() { return kMaxLimitsPerCheck; }
  Limit* data() { return items_; }
  const Limit* data() const { return items_; }

 private:
  union {
    Limit items_[kMaxLimitsPerCheck];
  };
};

struct Request {
  std::string_view key;
  absl::Span<const Limit> limits;  // into `inline_limits`, a LimitCache or `policy->limits`
  std::string_view scope;          // where the state lives: kInlineScope or the policy name
  std::string_view policy_name;    // names the header fields; empty = "default"
  bool shadow = false;             // a stored shadow policy: never deny
  int64_t cost = 1;
  bool headers = false;
  bool limits_detail = false;  // LIMITS: the reply lists every limit's result (reply.h)
  // MAXWAIT (RL.CHECK only): admit a call that may proceed within this many ms, charging it
  // into debt (Limiter::ChargeWithin); -1 = not given, an ordinary check.
  int64_t max_wait_ms = -1;
  std::shared_ptr<const Policy> policy;  // keeps a stored policy alive for the call
  InlineLimits inline_limits;            // unwritten until a parse fills it
};

// Parses args (args[0] = command name, args[1] = key) for `verb`. RL.RESET takes no COST,
// HEADERS or LIMITS; RL.REFUND and RL.CHARGE need COST (the amount); only RL.CHECK takes
// MAXWAIT. A repeated COST, MAXWAIT, HEADERS or LIMITS is an error. Needs args.size() >= 3 (the
// command table's arity); anything shorter is a syntax error, never a crash. With a `cache`, an
// inline limit list equal byte for byte to the one parsed last time is taken from it (out->limits
// then points into the cache, valid until its next Store).
absl::Status ParseRequest(Verb verb, absl::Span<const std::string_view> args,
                          const PolicyLookup& lookup, Request* out, LimitCache* cache = nullptr);

// CL.THROTTLE key max_burst count period [quantity], redis-cell's arguments: GCRA with capacity
// max_burst + 1 and rate count per period seconds.
struct ThrottleRequest {
  std::string_view key;
  Limit limit;
  int64_t quantity = 1;
};
absl::Status ParseThrottle(absl::Span<const std::string_view> args, ThrottleRequest* out);

// RL.RELEASE key lease-id.
struct ReleaseRequest {
  std::string_view key;
  std::string_view lease_id;
};
absl::Status ParseRelease(absl::Span<const std::string_view> args, ReleaseRequest* out);

// "ERR syntax error", Redis's text for an unexpected token.
absl::Status SyntaxError();

}  // namespace rl::command

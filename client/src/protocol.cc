// RemoteLimiter's wire protocol: see protocol.h.
#include "protocol.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "resp/writer.h"
#include "rl/validate.h"

namespace rl::client_internal {
namespace {

bool IsInteger(const resp::Value* v) {
  return v != nullptr &&
         (v->type == resp::Value::Type::kInteger || v->type == resp::Value::Type::kBoolean);
}

// A lease id as the server sent it, or why it is not one. Printable and bounded, so it can be
// logged and sent back as it is.
absl::StatusOr<std::string> LeaseId(const resp::Value& v) {
  using Type = resp::Value::Type;
  if (v.type == Type::kNull) return std::string();
  if (v.type != Type::kBulk && v.type != Type::kSimpleString) {
    return absl::InternalError("RL.ACQUIRE reply: the lease id is not a string");
  }
  if (v.text.empty() || v.text.size() > kMaxLeaseIdBytes) {
    return absl::InternalError("RL.ACQUIRE reply: a lease id of a bad length");
  }
  for (const char c : v.text) {
    if (c <= ' ' || c > '~') return absl::InternalError("RL.ACQUIRE reply: a bad lease id");
  }
  return v.text;
}

// The operation a verb performs, for its validator; nullopt for RL.RESET (limits only).
std::optional<Operation> OperationOf(std::string_view verb) {
  if (verb == "RL.CHECK") return Operation::kCheck;
  if (verb == "RL.PEEK") return Operation::kPeek;
  if (verb == "RL.ACQUIRE") return Operation::kAcquire;
  if (verb == "RL.REFUND") return Operation::kRefund;
  if (verb == "RL.CHARGE") return Operation::kCharge;
  return std::nullopt;
}

// A request the server would refuse, refused here with the server's (and the local Limiter's)
// text before anything is sent: so a mistake is the same error whichever limiter is called, and
// stays an error while the server is unreachable instead of becoming a FailureMode decision.
// kServerPolicy: the server's definition decides; the caller's limits, when it gives some (for
// the fallback), must still be valid.
absl::Status ValidateRequest(std::string_view verb, PolicyMode mode, const Policy& policy,
                             const int64_t* cost) {
  if (absl::Status s = ValidatePolicyName(policy.name); !s.ok()) return s;
  const std::optional<Operation> op = OperationOf(verb);
  if (mode == PolicyMode::kInline) {
    if (policy.limits.empty()) return absl::InvalidArgumentError("policy has no limits");
    if (op.has_value()) return ValidateOperation(*op, policy.limits, cost != nullptr ? *cost : 0);
    return ValidateLimits(policy.limits);
  }
  if (!policy.limits.empty()) {
    if (absl::Status s = ValidateLimits(policy.limits); !s.ok()) return s;
  }
  if (!op.has_value() || cost == nullptr) return absl::OkStatus();
  // The cost (a refund's or charge's amount) as the server will judge it, whatever its
  // definition: the operation's own validator over a stand-in limit it accepts gives its text.
  const Limit stand_in = *op == Operation::kAcquire ? Limit{Algorithm::kConcurrency, 1, 1000}
                                                    : Limit{Algorithm::kFixedWindow, 1, 1000};
  return ValidateOperation(*op, absl::MakeConstSpan(&stand_in, 1), *cost);
}

// Whether the reply must list every limit (LIMITS) for the Decision to be the local one: the five
// fields describe only the binding limit, which is all of it for an inline one-limit policy (its
// window is the caller's), but not for several limits or a definition only the server knows.
bool NeedsLimits(std::string_view verb, PolicyMode mode, const Policy& policy) {
  if (!OperationOf(verb).has_value()) return false;
  return mode == PolicyMode::kServerPolicy || policy.limits.size() > 1;
}

// Every limit's result from a reply's LIMITS entries into `decision` (count, binding, limits).
// Each entry is a map (RESP3) of integer fields; `name` is not needed (HeaderValues rebuilds it
// from the policy name and the windows, as the server did).
absl::Status ReadLimits(const resp::Value& entries, Decision* decision) {
  using Type = resp::Value::Type;
  if (entries.type != Type::kArray || entries.elements.empty() ||
      entries.elements.size() > decision->limits.size()) {
    return absl::InternalError("RL.CHECK reply: a bad 'limits' field");
  }
  static constexpr std::array<std::string_view, 7> kFields = {
      "allowed", "limit", "window_ms", "remaining", "retry_after_ms", "reset_after_ms", "binding"};
  size_t binding = 0;
  for (size_t i = 0; i < entries.elements.size(); ++i) {
    const resp::Value& entry = entries.elements[i];
    std::array<int64_t, kFields.size()> v{};
    for (size_t f = 0; f < kFields.size(); ++f) {
      const resp::Value* field = entry.type == Type::kMap ? entry.Find(kFields[f]) : nullptr;
      if (!IsInteger(field)) {
        return absl::InternalError(
            absl::StrCat("RL.CHECK reply: a limit without '", std::string(kFields[f]), "'"));
      }
      v[f] = field->integer;
    }
    decision->limits[i] = LimitResult{v[0] != 0, v[1], v[2], v[3], v[4], v[5]};
    if (v[6] != 0) binding = i;
    // Optional: a CONCURRENCY limit (its window_ms is a lease's ttl, not a window).
    if (const resp::Value* c = entry.Find("concurrency"); IsInteger(c) && c->integer != 0) {
      decision->leases |= static_cast<uint8_t>(1u << i);
    }
  }
  decision->count = static_cast<uint8_t>(entries.elements.size());
  decision->binding = static_cast<uint8_t>(binding);
  return absl::OkStatus();
}

}  // namespace

absl::Status AppendPolicyCommand(std::string_view verb, PolicyMode mode, const Policy& policy,
                                 std::string_view key, const int64_t* cost, std::string* out,
                                 int64_t max_wait_ms) {
  if (absl::Status s = ValidateRequest(verb, mode, policy, cost); !s.ok()) return s;
  // Limit specs are printed canonically and split into tokens; the views point into `specs`.
  std::vector<std::string> specs;
  std::vector<std::string_view> args{verb, key, "POLICY", policy.name};
  if (mode == PolicyMode::kInline) {
    specs.reserve(policy.limits.size());
    for (const Limit& limit : policy.limits) {
      specs.push_back(FormatLimit(limit));
      for (std::string_view token : SplitSpec(specs.back())) args.push_back(token);
    }
  }
  const std::string cost_text = cost != nullptr ? std::to_string(*cost) : std::string();
  if (cost != nullptr) {
    args.push_back("COST");
    args.push_back(cost_text);
  }
  const std::string wait_text = max_wait_ms >= 0 ? absl::StrCat(max_wait_ms, "ms") : std::string();
  if (max_wait_ms >= 0) {
    args.push_back("MAXWAIT");
    args.push_back(wait_text);
  }
  if (NeedsLimits(verb, mode, policy)) args.push_back("LIMITS");
  resp::Writer(out).Command(args);
  return absl::OkStatus();
}

void AppendHello(std::string_view password, std::string* out) {
  resp::Writer w(out);
  if (password.empty()) {
    w.Command({"HELLO", "3"});
  } else {
    w.Command({"HELLO", "3", "AUTH", "default", password});
  }
}

absl::Status CheckHelloReply(const resp::Value& reply) {
  if (reply.type == resp::Value::Type::kError) {
    absl::Status status = ErrorStatus(reply);
    if (absl::IsPermissionDenied(status)) return status;
    return absl::UnavailableError(
        absl::StrCat("rl-server refused HELLO 3 (RESP3 is required): ", reply.text));
  }
  if (reply.type != resp::Value::Type::kMap) {
    return absl::UnavailableError("rl-server answered HELLO 3 without a map");
  }
  return absl::OkStatus();
}

absl::Status ErrorStatus(const resp::Value& reply) {
  absl::string_view text = reply.text;
  if (absl::StartsWith(text, "NOAUTH") || absl::StartsWith(text, "WRONGPASS")) {
    return absl::PermissionDeniedError(text);
  }
  // "ERR " is the protocol's generic code, not part of the message: without it the text is the
  // one the in-process Limiter gives for the same mistake.
  absl::ConsumePrefix(&text, "ERR ");
  return absl::InvalidArgumentError(text);
}

absl::StatusOr<Decision> ToDecision(const resp::Value& reply, const Policy& policy) {
  using Type = resp::Value::Type;
  if (reply.type == Type::kError) return ErrorStatus(reply);
  // allowed, limit, remaining, retry_after_ms, reset_after_ms
  std::array<int64_t, 5> v{};
  bool shadow_denied = false;
  if (reply.type == Type::kMap) {
    static constexpr std::array<std::string_view, 5> kFields = {"allowed", "limit", "remaining",
                                                                "retry_after_ms", "reset_after_ms"};
    for (size_t i = 0; i < kFields.size(); ++i) {
      const resp::Value* field = reply.Find(kFields[i]);
      if (!IsInteger(field)) {
        return absl::InternalError("RL.CHECK reply without '" + std::string(kFields[i]) + "'");
      }
      v[i] = field->integer;
    }
    const resp::Value* shadow = reply.Find("shadow_denied");
    shadow_denied = IsInteger(shadow) && shadow->integer != 0;
  } else if (reply.type == Type::kArray && reply.elements.size() >= 5) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (!IsInteger(&reply.elements[i])) {
        return absl::InternalError("unexpected RL.CHECK reply element");
      }
      v[i] = reply.elements[i].integer;
    }
  } else {
    return absl::InternalError("unexpected RL.CHECK reply shape");
  }
  Decision decision;
  decision.allowed = v[0] != 0;
  decision.limit = v[1];
  decision.remaining = v[2];
  decision.retry_after_ms = v[3];
  decision.reset_after_ms = v[4];
  decision.shadow_denied = shadow_denied;
  decision.decided_by = DecidedBy::kLimiter;
  if (const resp::Value* limits = reply.type == Type::kMap ? reply.Find("limits") : nullptr;
      limits != nullptr) {
    if (absl::Status s = ReadLimits(*limits, &decision); !s.ok()) return s;
    return decision;
  }
  LimitResult& binding = decision.limits[0];
  binding = LimitResult{decision.allowed, v[1], 0, v[2], v[3], v[4]};
  for (const Limit& limit : policy.limits) {
    if (limit.limit == v[1] || limit.capacity() == v[1]) {
      binding.window_ms = limit.window_ms;
      if (limit.algorithm == Algorithm::kConcurrency) decision.leases = 1;
      break;
    }
  }
  if (binding.window_ms == 0 && !policy.limits.empty()) {
    binding.window_ms = policy.limits.front().window_ms;
  }
  decision.count = 1;
  decision.binding = 0;
  return decision;
}

void AppendRelease(std::string_view key, std::string_view lease_id, std::string* out) {
  resp::Writer(out).Command({"RL.RELEASE", key, lease_id});
}

absl::StatusOr<Acquired> ToAcquired(const resp::Value& reply, const Policy& policy) {
  absl::StatusOr<Decision> decision = ToDecision(reply, policy);
  if (!decision.ok()) return decision.status();
  const resp::Value* lease = nullptr;
  if (reply.type == resp::Value::Type::kMap) {
    lease = reply.Find("lease");
  } else if (reply.elements.size() >= 6) {
    lease = &reply.elements[5];
  }
  if (lease == nullptr) return absl::InternalError("RL.ACQUIRE reply without a lease id");
  absl::StatusOr<std::string> id = LeaseId(*lease);
  if (!id.ok()) return id.status();
  // A lease is only ever granted with an allowed answer; a server that says otherwise is broken.
  if (!id->empty() && !decision->allowed) {
    return absl::InternalError("RL.ACQUIRE reply: a lease with a denial");
  }
  return Acquired{*decision, *std::move(id)};
}

absl::StatusOr<bool> ToReleased(const resp::Value& reply) {
  if (reply.type == resp::Value::Type::kError) return ErrorStatus(reply);
  if (reply.type != resp::Value::Type::kInteger || (reply.integer != 0 && reply.integer != 1)) {
    return absl::InternalError("unexpected RL.RELEASE reply");
  }
  return reply.integer == 1;
}

}  // namespace rl::client_internal

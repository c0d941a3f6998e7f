// What rl::RemoteLimiter says to a server and how it reads the answers, with no I/O: the RL.*
// command for a policy in each mode, the connection handshake, and replies turned into
// Decisions and Statuses. Kept apart from the sockets so it is tested byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "resp/reply_parser.h"
#include "rl/decision.h"
#include "rl/limit.h"
#include "rl/remote_limiter.h"

namespace rl::client_internal {

using PolicyMode = RemoteLimiterOptions::PolicyMode;

// Appends `verb` (RL.CHECK, RL.PEEK, RL.RESET, RL.ACQUIRE, RL.REFUND, RL.CHARGE) for (policy,
// key) to *out:
//   kInline:       <verb> <key> POLICY <name> <limit>... [COST n] [LIMITS]
//   kServerPolicy: <verb> <key> POLICY <name> [COST n] LIMITS
// Both keep the state under the policy's name and the key, as `RL.CHECK key POLICY name` and the
// in-process Limiter::Check(policy, key) do, so every path counts against one state. `cost` null
// writes no COST (RL.RESET). LIMITS (every limit's result in the reply) is asked for whenever the
// five fields cannot say the whole Decision: several limits, or the server's definition (it needs
// a server that knows LIMITS: an older one answers "syntax error"). Errors, with nothing appended,
// for what the server would refuse, with the text rl::Limiter gives (rl::ValidateOperation): an
// invalid policy name or limit, an inline policy without limits, a negative cost, a CONCURRENCY
// limit in a check, an acquire without one.
// `max_wait_ms` >= 0 adds MAXWAIT (RL.CHECK only: a check that may queue).
absl::Status AppendPolicyCommand(std::string_view verb, PolicyMode mode, const Policy& policy,
                                 std::string_view key, const int64_t* cost, std::string* out,
                                 int64_t max_wait_ms = -1);

// The first command on every connection: HELLO 3, with AUTH when a password is set. RESP3 makes
// the server's reply a map that can carry shadow_denied, which RESP2's five integers cannot.
void AppendHello(std::string_view password, std::string* out);
// OK for a HELLO reply (a map); PermissionDenied for NOAUTH / WRONGPASS; Unavailable for a
// server that refuses RESP3 (its answers could not say what a shadow policy decided).
absl::Status CheckHelloReply(const resp::Value& reply);

// An error reply as the caller sees it: NOAUTH / WRONGPASS -> PermissionDenied (the server is
// unusable to us), anything else -> InvalidArgument (the request was wrong), without the
// protocol's "ERR " code so the text is rl::Limiter's for the same mistake.
absl::Status ErrorStatus(const resp::Value& reply);

// The reply to RL.CHECK / RL.PEEK -> a Decision: a RESP3 map read by field names
// (shadow_denied included), or RESP2's five integers. With a `limits` field (LIMITS) every
// limit's result is read, so the Decision (and its header values) is the one rl::Limiter would
// give; without it the reply names only the binding limit, whose window is looked up in `policy`.
// Error replies -> ErrorStatus.
absl::StatusOr<Decision> ToDecision(const resp::Value& reply, const Policy& policy);

// RL.RELEASE <key> <lease_id>.
void AppendRelease(std::string_view key, std::string_view lease_id, std::string* out);

// The longest lease id accepted from a server (rl's are 40 hex digits).
inline constexpr size_t kMaxLeaseIdBytes = 128;

// The reply to RL.ACQUIRE: RL.CHECK's (read as ToDecision reads it) and the lease id, RESP3's
// "lease" field or RESP2's sixth element; empty when no lease was taken (nil). A reply without
// it, or an id that is not 1..kMaxLeaseIdBytes printable characters, is malformed (Internal).
struct Acquired {
  Decision decision;
  std::string lease_id;
};
absl::StatusOr<Acquired> ToAcquired(const resp::Value& reply, const Policy& policy);

// The reply to RL.RELEASE: 1 -> true (it was held), 0 -> false. Error replies -> ErrorStatus;
// anything else is malformed (Internal).
absl::StatusOr<bool> ToReleased(const resp::Value& reply);

}  // namespace rl::client_internal

// One ShouldRateLimit call without the transport: the request's descriptors matched against the
// rules (envoy/config), what the backend must check, and the response built from its decisions,
// with envoyproxy/ratelimit's semantics: each descriptor counted on its own; a descriptor no rule
// matches is OK with no limit; `unlimited` is OK with limit_remaining UINT32_MAX; a rule named in
// another matched rule's `replaces` is not checked; `shadow_mode` counts but answers OK; a
// descriptor's `limit` override replaces its rule's limit (or applies where none matched); hits
// are the descriptor's hits_addend when set, else the request's (0 means 1). The gRPC service
// (service.cc) and the fuzz target both run requests through here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backend.h"
#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "envoy_stats.h"
#include "rl/decision.h"
#include "rl/envoy/config.h"

namespace rl::envoy {

namespace pb = ::envoy::service::ratelimit::v3;

// Bounds on a request beyond its byte size (a gRPC setting): more is INVALID_ARGUMENT.
inline constexpr int kMaxDescriptors = 64;
inline constexpr int kMaxEntries = 32;

// A request's descriptors resolved against one rule set.
struct Plan {
  enum class Kind : uint8_t {
    kNoRule,     // no rule: OK, no current_limit
    kUnlimited,  // OK, limit_remaining UINT32_MAX
    kReplaced,   // named in another matched rule's `replaces`: OK, not counted
    kZero,       // requests_per_unit 0: over the limit, no engine call
    kCheck,      // checks[check] decides
  };
  struct Item {
    Kind kind = Kind::kNoRule;
    bool shadow = false;
    int64_t cost = 1;
    uint32_t requests_per_unit = 0;
    int unit = 0;  // RateLimitResponse.RateLimit.Unit
    std::string name;
    size_t check = 0;
    RuleCounters* counters = nullptr;
  };
  std::vector<Item> items;           // one per descriptor, in request order
  std::vector<BackendCheck> checks;  // what the backend decides
};

// Envoy's RateLimitResponse.RateLimit.Unit (and type.v3.RateLimitUnit) value of a unit, and back
// (nullopt for UNKNOWN or a value this build does not know).
int ProtoUnit(Unit unit);
std::optional<Unit> UnitFromProto(int value);

// Resolves `request`. Errors (INVALID_ARGUMENT): no domain, no descriptor, a descriptor without
// entries or with an empty key, more than kMaxDescriptors / kMaxEntries, a hits_addend over
// rl's largest limit. `stats` may be null (then nothing is counted).
absl::StatusOr<Plan> MakePlan(const RuleSet& rules, const pb::RateLimitRequest& request,
                              EnvoyStats* stats);

struct AnswerOptions {
  bool headers = false;     // response_headers_to_add from the binding descriptor
  int64_t wall_now_ms = 0;  // for X-RateLimit-Reset
};

// The response from the backend's decisions (decisions[i] for plan.checks[i]); counts them.
void Answer(const Plan& plan, absl::Span<const rl::Decision> decisions,
            const AnswerOptions& options, EnvoyStats* stats, pb::RateLimitResponse* response);

}  // namespace rl::envoy

// The rate-limit step of the HTTP example, modelled on a framework's request/response
// subscriber: a route table (a config map with a global default and per-route overrides) picks
// the policy, the client is identified, the limiter decides before any handler work, and the
// decision's header values are added to whatever response goes out. A route whose policy has a
// CONCURRENCY limit takes a lease instead of a check and holds it while the request runs.
// CheckAsync is what the service calls: with an rl::RemoteLimiter it waits for nothing (the
// answer arrives on the limiter's I/O thread), so no HTTP I/O thread waits on the network.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "outage_log.h"
#include "rl/decision.h"
#include "rl/headers.h"
#include "rl/lease.h"
#include "rl/limit.h"
#include "rl/rate_limiter.h"
#include "rl/remote_limiter.h"

namespace rl_http {

// The configuration map: policy specs by name, the global default, and per-route overrides.
struct RouteConfig {
  struct Override {
    std::string method;  // "GET", "POST", ...
    std::string path;    // exact path, query string excluded
    std::string policy;  // a name in `policies`, or "" for an unlimited route
    int64_t cost = 1;    // weighted cost of one request (an export costs more than a read)
  };
  std::map<std::string, std::string> policies;  // name -> spec, e.g. "SLIDING_LOG 5 1m"
  std::string default_policy;                   // applies to every route without an override
  std::vector<Override> overrides;
};

// The example's configuration: /api/products 5 per minute per client, /v1/exports stricter and
// fail-closed, /v1/reports at most 3 at once (and 20 per hour) per client, /health unlimited,
// everything else under a generous fail-open default.
RouteConfig DefaultRouteConfig();

// What the gate decided for one request.
struct GateResult {
  const rl::Policy* policy = nullptr;  // null: the route is not limited
  std::optional<rl::Decision> decision;
  bool allowed = true;
  // The limiter could not answer and the policy is fail-closed: respond 503 (the client did
  // nothing wrong), not 429.
  bool unavailable = false;
  // To add to the response. Answered by the limiter, or decided by its local fallback during an
  // outage: the rate-limit headers (the fallback's state this instance's share of the limits).
  // Decided by a failure mode: none of them (nothing about the limits is known), only a short
  // Retry-After when unavailable.
  std::vector<rl::HeaderField> headers;
  // A route whose policy has a CONCURRENCY limit: the lease the request holds while it runs (it
  // ends when this result is destroyed, after the response is built). Holds nothing when the
  // request was denied, and when an allowed one took no slot (a fail-open outage).
  rl::Lease lease;
};

class RateLimitGate {
 public:
  // Parses every policy spec; fails on a bad spec or an override naming an unknown policy.
  // `outage` (optional, not owned) is told about every check the limiter answered, to close an
  // outage episode, and how each check it did not answer was decided.
  // `async` (optional, not owned): the same limiter as `limiter` when it is an
  // rl::RemoteLimiter, whose asynchronous calls CheckAsync then uses.
  static absl::StatusOr<RateLimitGate> Create(const RouteConfig& config, rl::RateLimiter* limiter,
                                              OutageLog* outage = nullptr,
                                              rl::RemoteLimiter* async = nullptr);

  // The policy for a route (the override, else the default); null for an unlimited route.
  const rl::Policy* PolicyFor(std::string_view method, std::string_view path, int64_t* cost) const;

  // Runs the limiter for one identified client. `client_key` must already be safe (see
  // ClientKey); it is used as the limiter key as is.
  GateResult Check(std::string_view method, std::string_view path,
                   std::string_view client_key) const;
  // Check without waiting: `done` gets the result once the limiter has decided, on the remote
  // limiter's I/O thread (it must hand the response to its own executor), or at once on this
  // thread with an in-process limiter, which never waits on a network.
  void CheckAsync(std::string_view method, std::string_view path, std::string_view client_key,
                  std::function<void(GateResult)> done) const;

 private:
  RateLimitGate() = default;
  // The rest of Check once the limiter has answered (a lease already in result.lease).
  GateResult Finish(GateResult result, absl::StatusOr<rl::Decision> decision) const;

  rl::RateLimiter* limiter_ = nullptr;
  rl::RemoteLimiter* async_ = nullptr;
  OutageLog* outage_ = nullptr;
  std::map<std::string, rl::Policy, std::less<>> policies_;
  const rl::Policy* default_policy_ = nullptr;
  struct Route {
    const rl::Policy* policy;
    int64_t cost;
  };
  // Takes a lease (RateLimiter::Acquire) rather than a check: the policy has a CONCURRENCY limit.
  static bool Leases(const rl::Policy& policy);
  std::map<std::string, Route, std::less<>> routes_;  // "METHOD path" -> route
};

// The limiter key for a client: "key:" + hex XXH3-128 of the X-Api-Key value when present (raw
// client input never becomes part of a key: no unbounded lengths, separators or control bytes),
// else "ip:" + the peer address of the connection (not a forwarded-for header, which the client
// controls).
std::string ClientKey(std::string_view api_key, std::string_view peer_ip);

}  // namespace rl_http

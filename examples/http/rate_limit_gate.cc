// RateLimitGate: route table, client identity and the limiter call (see rate_limit_gate.h).
#include "rate_limit_gate.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

namespace rl_http {

RouteConfig DefaultRouteConfig() {
  RouteConfig config;
  config.policies = {
      {"api-default", "TOKEN_BUCKET 100 1m FAIL_OPEN"},
      // Exact: no trailing minute ever holds more than 5 product listings per client.
      {"products", "SLIDING_LOG 5 1m FAIL_OPEN"},
      // An export costs 10 of 30 per hour (3 exports), and is refused while the limiter is
      // unreachable: it protects an expensive backend.
      {"exports", "TOKEN_BUCKET 30 1h FAIL_CLOSED"},
      // At most 3 reports running at once per client, and 20 an hour: a report holds a lease
      // while it is built (a client that crashes mid-report frees its slot within a minute).
      {"reports", "CONCURRENCY 3 LEASE 1m FIXED_WINDOW 20 1h FAIL_CLOSED"},
  };
  config.default_policy = "api-default";
  config.overrides = {
      {"GET", "/health", "", 0},
      {"GET", "/api/products", "products", 1},
      {"POST", "/v1/exports", "exports", 10},
      {"POST", "/v1/reports", "reports", 1},
  };
  return config;
}

absl::StatusOr<RateLimitGate> RateLimitGate::Create(const RouteConfig& config,
                                                    rl::RateLimiter* limiter, OutageLog* outage,
                                                    rl::RemoteLimiter* async) {
  RateLimitGate gate;
  gate.limiter_ = limiter;
  gate.async_ = async;
  gate.outage_ = outage;
  for (const auto& [name, spec] : config.policies) {
    absl::StatusOr<rl::Policy> policy = rl::ParsePolicy(name, std::string_view(spec));
    if (!policy.ok()) return policy.status();
    gate.policies_.emplace(name, *std::move(policy));
  }
  auto find = [&gate](const std::string& name) -> absl::StatusOr<const rl::Policy*> {
    if (name.empty()) return nullptr;
    auto it = gate.policies_.find(name);
    if (it == gate.policies_.end()) return absl::NotFoundError("unknown policy " + name);
    return &it->second;
  };
  absl::StatusOr<const rl::Policy*> fallback = find(config.default_policy);
  if (!fallback.ok()) return fallback.status();
  gate.default_policy_ = *fallback;
  for (const RouteConfig::Override& route : config.overrides) {
    absl::StatusOr<const rl::Policy*> policy = find(route.policy);
    if (!policy.ok()) return policy.status();
    gate.routes_[route.method + " " + route.path] = Route{*policy, route.cost};
  }
  return gate;
}

const rl::Policy* RateLimitGate::PolicyFor(std::string_view method, std::string_view path,
                                           int64_t* cost) const {
  std::string route(method);
  route += ' ';
  route += path;
  auto it = routes_.find(route);
  if (it == routes_.end()) {
    *cost = 1;
    return default_policy_;
  }
  *cost = it->second.cost;
  return it->second.policy;
}

GateResult RateLimitGate::Check(std::string_view method, std::string_view path,
                                std::string_view client_key) const {
  GateResult result;
  int64_t cost = 1;
  result.policy = PolicyFor(method, path, &cost);
  if (result.policy == nullptr) return result;

  absl::StatusOr<rl::Decision> decision;
  if (Leases(*result.policy)) {
    absl::StatusOr<rl::Lease> lease = limiter_->Acquire(*result.policy, client_key, cost);
    if (lease.ok()) {
      decision = lease->decision();
      result.lease = *std::move(lease);
    } else {
      decision = lease.status();
    }
  } else {
    decision = limiter_->Check(*result.policy, client_key, cost);
  }
  return Finish(std::move(result), std::move(decision));
}

void RateLimitGate::CheckAsync(std::string_view method, std::string_view path,
                               std::string_view client_key,
                               std::function<void(GateResult)> done) const {
  if (async_ == nullptr) {
    done(Check(method, path, client_key));
    return;
  }
  GateResult result;
  int64_t cost = 1;
  result.policy = PolicyFor(method, path, &cost);
  if (result.policy == nullptr) {
    done(std::move(result));
    return;
  }
  const rl::Policy& policy = *result.policy;  // the gate's: outlives every call
  if (Leases(policy)) {
    async_->AsyncAcquire(policy, client_key, cost,
                         [this, &policy, done = std::move(done)](absl::StatusOr<rl::Lease> lease) {
                           GateResult result;
                           result.policy = &policy;
                           absl::StatusOr<rl::Decision> decision =
                               lease.ok() ? absl::StatusOr<rl::Decision>(lease->decision())
                                          : absl::StatusOr<rl::Decision>(lease.status());
                           if (lease.ok()) result.lease = *std::move(lease);
                           done(Finish(std::move(result), std::move(decision)));
                         });
    return;
  }
  async_->AsyncCheck(
      policy, client_key, cost,
      [this, &policy, done = std::move(done)](absl::StatusOr<rl::Decision> decision) {
        GateResult result;
        result.policy = &policy;
        done(Finish(std::move(result), std::move(decision)));
      });
}

GateResult RateLimitGate::Finish(GateResult result, absl::StatusOr<rl::Decision> decision) const {
  if (!decision.ok()) {
    // A request the limiter refused to evaluate (not an outage: those arrive as decisions made
    // by the failure mode). Treat it as the policy says for an unreachable limiter.
    std::fprintf(stderr, "rate limiter error for %s: %s\n", result.policy->name.c_str(),
                 decision.status().ToString().c_str());
    result.unavailable = result.policy->failure_mode == rl::FailureMode::kFailClosed;
    result.allowed = !result.unavailable;
    return result;
  }
  // Shadow policies count but never block: both limiters allow and report shadow_denied.
  result.allowed = decision->allowed;
  const rl::DecidedBy by = decision->decided_by;
  if (by == rl::DecidedBy::kFailOpen || by == rl::DecidedBy::kFailClosed) {
    // An outage, not the client's doing: no limit was evaluated, so no rate-limit headers.
    if (outage_ != nullptr) outage_->Decided(*decision);
    result.unavailable = !decision->allowed;
    if (result.unavailable) {
      const int64_t ms = std::max<int64_t>(decision->retry_after_ms, 1);
      result.headers.push_back({"Retry-After", std::to_string((ms + 999) / 1000)});
    }
  } else {
    // Answered, or decided during an outage by the local fallback: either way real limits were
    // evaluated (the fallback's are this instance's share), so a denial is the client's 429.
    if (outage_ != nullptr) {
      if (by == rl::DecidedBy::kFallback) {
        outage_->Decided(*decision);
      } else {
        outage_->Answered();
      }
    }
    result.headers = rl::HeaderValues(*decision, result.policy->name, limiter_->WallNowMs());
  }
  result.decision = *std::move(decision);
  return result;
}

bool RateLimitGate::Leases(const rl::Policy& policy) {
  return std::any_of(policy.limits.begin(), policy.limits.end(), [](const rl::Limit& limit) {
    return limit.algorithm == rl::Algorithm::kConcurrency;
  });
}

std::string ClientKey(std::string_view api_key, std::string_view peer_ip) {
  if (api_key.empty()) return "ip:" + std::string(peer_ip);
  const XXH128_hash_t hash = XXH3_128bits(api_key.data(), api_key.size());
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return std::string("key:") + hex;
}

}  // namespace rl_http

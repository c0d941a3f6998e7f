// Where ShouldRateLimit's counts live: this rl-server's own engine, or through rl::RemoteLimiter
// an rl-server or a Redis Cluster whose nodes load rl.so (a fleet of stateless rate limit
// services sharing one count). Either way a descriptor's state lives under the scope "envoy" and
// its rule's key, so the local engine, RESP clients (RL.CHECK key POLICY envoy ...) and the
// remote backend name the same state.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rl/decision.h"
#include "rl/limit.h"
#include "rl/limiter.h"

namespace rl::envoy {

// The scope (policy name) of every state ShouldRateLimit counts.
inline constexpr std::string_view kStateScope = "envoy";

struct BackendCheck {
  std::string key;
  rl::Limit limit;
  int64_t cost = 1;
};

// Every check's decision, in order; an error when the backend could not decide them all in time
// (the whole call then fails with a gRPC error status, so Envoy's failure_mode_deny applies).
using BackendDone = std::function<void(absl::StatusOr<std::vector<rl::Decision>>)>;

class Backend {
 public:
  virtual ~Backend() = default;
  // Decides each check on its own (as envoyproxy/ratelimit counts each descriptor) and calls
  // `done` exactly once, on this thread (local engine) or the backend's I/O thread (remote),
  // before `deadline` or with an error.
  virtual void CheckAll(std::vector<BackendCheck> checks,
                        std::chrono::steady_clock::time_point deadline, BackendDone done) = 0;
};

// The server's own engine: decides inline.
std::unique_ptr<Backend> MakeLocalBackend(rl::Limiter* limiter);

// "host:port" (an rl-server) or "cluster:host:port[,host:port...]" (Redis Cluster with rl.so),
// each call bounded by `timeout_ms`; `password` for AUTH when non-empty.
absl::StatusOr<std::unique_ptr<Backend>> MakeRemoteBackend(std::string_view spec,
                                                           int64_t timeout_ms,
                                                           const std::string& password);

}  // namespace rl::envoy

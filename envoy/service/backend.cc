// The local and remote backends of ShouldRateLimit; see backend.h.
#include "backend.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <utility>

#ifdef RL_ENVOY_REMOTE_BACKEND
#include "rl/remote_limiter.h"
#endif

namespace rl::envoy {
namespace {

class LocalBackend final : public Backend {
 public:
  explicit LocalBackend(rl::Limiter* limiter) : limiter_(limiter) {}

  void CheckAll(std::vector<BackendCheck> checks, std::chrono::steady_clock::time_point,
                BackendDone done) override {
    std::vector<rl::Decision> out;
    out.reserve(checks.size());
    for (const BackendCheck& c : checks) {
      const auto limits = absl::MakeConstSpan(&c.limit, 1);
      if (c.limit.algorithm == rl::Algorithm::kConcurrency) {
        // Envoy's API has no release: the lease ends by its ttl (the rule's LEASE).
        auto lease = limiter_->Acquire(kStateScope, c.key, limits, c.cost);
        if (!lease.ok()) return done(lease.status());
        out.push_back(lease->decision());
        lease->Detach();
        continue;
      }
      auto d = limiter_->Check(kStateScope, c.key, limits, c.cost);
      if (!d.ok()) return done(d.status());
      out.push_back(*d);
    }
    done(std::move(out));
  }

 private:
  rl::Limiter* limiter_;
};

#ifdef RL_ENVOY_REMOTE_BACKEND
class RemoteBackend final : public Backend {
 public:
  explicit RemoteBackend(std::unique_ptr<rl::RemoteLimiter> remote) : remote_(std::move(remote)) {}

  void CheckAll(std::vector<BackendCheck> checks, std::chrono::steady_clock::time_point deadline,
                BackendDone done) override {
    if (deadline <= std::chrono::steady_clock::now()) {
      return done(absl::DeadlineExceededError("the call's deadline passed before the backend"));
    }
    // The policies must outlive the call: they travel with the callback.
    struct Call {
      std::vector<rl::Policy> policies;
      std::vector<BackendCheck> checks;
    };
    auto call = std::make_shared<Call>();
    call->checks = std::move(checks);
    call->policies.resize(call->checks.size());
    std::vector<rl::RemoteLimiter::Request> requests(call->checks.size());
    for (size_t i = 0; i < call->checks.size(); ++i) {
      rl::Policy& p = call->policies[i];
      p.name = std::string(kStateScope);
      p.limits = {call->checks[i].limit};
      requests[i] = {&p, call->checks[i].key, call->checks[i].cost};
    }
    remote_->AsyncCheckMany(requests, [call, done = std::move(done)](
                                          std::vector<absl::StatusOr<rl::Decision>> results) {
      std::vector<rl::Decision> out;
      out.reserve(results.size());
      for (auto& r : results) {
        if (!r.ok()) return done(r.status());
        // Not decided by the limits (the backend was unreachable or too slow): a failure of the
        // call, never an invented answer, so Envoy's failure_mode_deny decides.
        if (r->decided_by != rl::DecidedBy::kLimiter) {
          return done(absl::UnavailableError("rate limit backend unavailable"));
        }
        out.push_back(*r);
      }
      done(std::move(out));
    });
  }

 private:
  std::unique_ptr<rl::RemoteLimiter> remote_;
};
#endif

}  // namespace

std::unique_ptr<Backend> MakeLocalBackend(rl::Limiter* limiter) {
  return std::make_unique<LocalBackend>(limiter);
}

absl::StatusOr<std::unique_ptr<Backend>> MakeRemoteBackend(std::string_view spec,
                                                           int64_t timeout_ms,
                                                           const std::string& password) {
#ifdef RL_ENVOY_REMOTE_BACKEND
  rl::RemoteLimiterOptions options;
  options.timeout = std::chrono::milliseconds(timeout_ms);
  options.password = password;
  options.policy_mode = rl::RemoteLimiterOptions::PolicyMode::kInline;
  constexpr std::string_view kCluster = "cluster:";
  if (spec.substr(0, kCluster.size()) == kCluster) {
    std::string_view nodes = spec.substr(kCluster.size());
    while (!nodes.empty()) {
      const size_t comma = std::min(nodes.find(','), nodes.size());
      if (comma > 0) options.cluster_nodes.emplace_back(nodes.substr(0, comma));
      nodes.remove_prefix(std::min(comma + 1, nodes.size()));
    }
    if (options.cluster_nodes.empty()) {
      return absl::InvalidArgumentError(fmt::format("envoy-backend '{}' names no node", spec));
    }
  } else {
    const size_t colon = spec.rfind(':');
    int port = 0;
    const std::string_view digits =
        colon == std::string_view::npos ? std::string_view() : spec.substr(colon + 1);
    const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (digits.empty() || parsed.ec != std::errc() || parsed.ptr != digits.data() + digits.size() ||
        port <= 0 || port > 65535) {
      return absl::InvalidArgumentError(
          fmt::format("envoy-backend '{}' is not HOST:PORT or cluster:HOST:PORT,...", spec));
    }
    options.host = std::string(spec.substr(0, colon));
    options.port = static_cast<uint16_t>(port);
  }
  auto remote = rl::RemoteLimiter::Create(std::move(options));
  if (!remote.ok()) return remote.status();
  return std::make_unique<RemoteBackend>(*std::move(remote));
#else
  return absl::UnimplementedError("this rl-server was built without rl::RemoteLimiter");
#endif
}

}  // namespace rl::envoy

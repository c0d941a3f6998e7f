// Front ends beside the RESP one (Envoy's gRPC rate limit service): linked into the rl-server
// executable by main.cc, not into rl_server_lib, so the server library and its tests carry none
// of their dependencies, and a front end whose port is not configured is never created (costs
// nothing at run time). The server calls them at start, on SIGHUP, on a /metrics scrape and at
// shutdown.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rl::server {

struct ServerConfig;
struct ServerState;

class FrontEnd {
 public:
  virtual ~FrontEnd() = default;
  // Binds and starts serving, once the engine and the policies are loaded and before the
  // readiness line. An error stops the start (printed by the caller).
  virtual absl::Status Start() = 0;
  // SIGHUP: checks what this front end reads from `next` (the config file read again) and
  // returns how to apply it; the reload applies it only when the whole file (every front end's
  // part and the policies) is valid, so a bad file changes nothing anywhere.
  virtual absl::StatusOr<std::function<void()>> PrepareReload(const ServerConfig& next) = 0;
  // Appends its Prometheus families to a /metrics page (any thread).
  virtual void RenderMetrics(std::string* page) const = 0;
  // Stops serving: after the RESP connections drained, before the final snapshot.
  virtual void Stop() = 0;
};

// Makes the front end `config` asks for, or null when it is not configured (its port is 0).
using FrontEndFactory = std::function<absl::StatusOr<std::unique_ptr<FrontEnd>>(ServerState*)>;

}  // namespace rl::server

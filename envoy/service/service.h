// Envoy's rate limit service (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) as a
// front end of rl-server: a gRPC server (callback API, gRPC's own threads) on --envoy-port,
// created only when that port is set, answering from the rules of --envoy-rules (swapped whole on
// SIGHUP; a bad file keeps the old set) over this server's engine or a remote backend.
#pragma once

#include "front_end.h"

namespace rl::envoy {

// Makes the front end when config.envoy_port is set, else null.
server::FrontEndFactory EnvoyFrontEndFactory();

}  // namespace rl::envoy

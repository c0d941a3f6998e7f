// The `rl` key under a rate_limit: rl's extension of envoyproxy/ratelimit's YAML, choosing the
// rl algorithm (and its BURST, BLOCK or LEASE) that checks the descriptor instead of the default
// ALIGNED_WINDOW. Documented in docs/envoy-config.md.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "rl/envoy/config.h"
#include "rl/limit.h"

namespace rl::envoy {

inline constexpr std::string_view kExtensionKey = "rl";

// The engine limit of a rate_limit of `requests_per_unit` per `unit` with extension `ext` (an
// undefined node: none). On error, *where is the node at fault and *key its key ("rl.burst").
// requests_per_unit 0 gives a limit of 0, which the engine does not take (see Rule).
absl::StatusOr<rl::Limit> ExtensionLimit(const YAML::Node& ext, uint32_t requests_per_unit,
                                         Unit unit, YAML::Mark* where, std::string* key);

}  // namespace rl::envoy

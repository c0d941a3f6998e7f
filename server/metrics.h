// The Prometheus text exposition (format 0.0.4) of rl-server's counters: per-policy decisions,
// engine keys/memory/evictions, connections, command latency histograms and snapshot health.
// Built on demand by a scrape from the per-thread counters; nothing here is on the hot path.
#pragma once

#include <string>
#include <string_view>

namespace rl::server {

struct ServerState;

// The whole /metrics body.
std::string RenderMetrics(const ServerState& state);

// A label value with \, " and newline escaped as the exposition format requires.
std::string EscapeLabelValue(std::string_view value);

}  // namespace rl::server

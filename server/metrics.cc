// Prometheus text rendering; see metrics.h.
#include "metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "rl/limiter.h"
#include "server.h"
#include "server_state.h"
#include "snapshot.h"

namespace rl::server {
namespace {

// Appends "# HELP" and "# TYPE" lines.
void Family(std::string* out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(*out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

template <typename T>
void Sample(std::string* out, std::string_view name, T value) {
  fmt::format_to(std::back_inserter(*out), "{} {}\n", name, value);
}

// Shortest text of a bucket bound in seconds, e.g. 2.5e-06 -> "2.5e-06".
std::string Seconds(int64_t ns) { return fmt::format("{}", ns / 1e9); }

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

// The per-policy check counters, by kind (inline limits, CL.THROTTLE, each policy).
void RenderChecks(std::string* page, const CheckCounters& checks) {
  std::string& out = *page;
  auto o = std::back_inserter(out);
  // Policies in name order, for a stable page.
  std::vector<const std::pair<const std::string, PolicyCounters>*> policies;
  policies.reserve(checks.per_policy.size());
  for (const auto& entry : checks.per_policy) policies.push_back(&entry);
  std::sort(policies.begin(), policies.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  struct PerPolicy {
    std::string_view name, help;
    uint64_t PolicyCounters::*field;
  };
  static constexpr PerPolicy kPerPolicy[] = {
      {"rl_checks_total", "Rate-limit checks (RL.CHECK, CL.THROTTLE) by kind and policy.",
       &PolicyCounters::checks},
      {"rl_allowed_total", "Checks answered allowed (shadow denials included) by policy.",
       &PolicyCounters::allowed},
      {"rl_denied_total", "Checks answered denied by policy.", &PolicyCounters::denied},
      {"rl_shadow_denied_total", "Checks a SHADOW policy would have denied but allowed, by policy.",
       &PolicyCounters::shadow_denied},
      {"rl_near_limit_total",
       "Allowed checks that left less than 20% of the limit remaining, by policy.",
       &PolicyCounters::near_limit},
  };
  for (const PerPolicy& m : kPerPolicy) {
    Family(&out, m.name, "counter", m.help);
    // `kind` keeps internal users apart from policies of any name.
    fmt::format_to(o, "{}{{kind=\"inline\"}} {}\n", m.name, checks.inline_limits.*m.field);
    fmt::format_to(o, "{}{{kind=\"cl.throttle\"}} {}\n", m.name, checks.throttle.*m.field);
    for (const auto* row : policies) {
      fmt::format_to(o, "{}{{kind=\"policy\",policy=\"{}\"}} {}\n", m.name,
                     EscapeLabelValue(row->first), row->second.*m.field);
    }
  }
}

// The limiter's states and the server's connections and commands.
void RenderServer(std::string* page, const ServerState& st, uint64_t commands) {
  std::string& out = *page;
  rl::LimiterStats ls = st.limiter->Stats();
  Family(&out, "rl_keys", "gauge", "Live limiter states.");
  Sample(&out, "rl_keys", ls.keys);
  Family(&out, "rl_memory_bytes", "gauge", "Estimated bytes held by limiter states and tables.");
  Sample(&out, "rl_memory_bytes", ls.memory_bytes);
  Family(&out, "rl_evictions_total", "counter",
         "States evicted because --max-keys or --max-memory was reached.");
  Sample(&out, "rl_evictions_total", ls.evictions);
  Family(&out, "rl_overflows_total", "counter",
         "Checks that needed a new state at --max-keys/--max-memory with no state safe to evict "
         "(decided by --overflow).");
  Sample(&out, "rl_overflows_total", ls.overflows);
  Family(&out, "rl_expired_total", "counter", "States dropped because they had fully refilled.");
  Sample(&out, "rl_expired_total", ls.expired);
  Family(&out, "rl_policies", "gauge", "Named policies defined (config file and runtime).");
  Sample(&out, "rl_policies", st.policies.size());

  Family(&out, "rl_connected_clients", "gauge", "Clients connected now.");
  Sample(&out, "rl_connected_clients", st.global.connected_clients.load());
  Family(&out, "rl_connections_received_total", "counter", "Connections accepted.");
  Sample(&out, "rl_connections_received_total", st.global.total_connections.load());
  Family(&out, "rl_rejected_connections_total", "counter",
         "Connections refused because maxclients was reached.");
  Sample(&out, "rl_rejected_connections_total", st.global.rejected_connections.load());
  Family(&out, "rl_protocol_errors_total", "counter", "Connections closed for a protocol error.");
  Sample(&out, "rl_protocol_errors_total", st.global.protocol_errors.load());
  Family(&out, "rl_auth_failures_total", "counter",
         "Wrong passwords (AUTH, HELLO ... AUTH); each pauses its connection.");
  Sample(&out, "rl_auth_failures_total", st.global.auth_failures.load());
  Family(&out, "rl_auth_failure_disconnections_total", "counter",
         "Connections closed after 10 wrong passwords in a row.");
  Sample(&out, "rl_auth_failure_disconnections_total", st.global.auth_failure_disconnects.load());
  Family(&out, "rl_commands_processed_total", "counter", "Commands executed.");
  Sample(&out, "rl_commands_processed_total", commands);
  Family(&out, "rl_uptime_seconds", "gauge", "Seconds since the server started.");
  Sample(&out, "rl_uptime_seconds", (st.clock->NowMs() - st.start_steady_ms) / 1000);
}

void RenderLatency(std::string* page, const LatencySnapshot& latency) {
  std::string& out = *page;
  auto o = std::back_inserter(out);
  Family(&out, "rl_command_duration_seconds", "histogram",
         "Command processing time (parsing and execution, without network I/O) by family: rl = "
         "RL.* and CL.THROTTLE.");
  for (int f = 0; f < kCommandFamilies; ++f) {
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kLatencyBoundsNs.size(); ++b) {
      cumulative += latency.buckets[f][b];
      fmt::format_to(o, "rl_command_duration_seconds_bucket{{family=\"{}\",le=\"{}\"}} {}\n",
                     kFamilyNames[f], Seconds(kLatencyBoundsNs[b]), cumulative);
    }
    cumulative += latency.buckets[f].back();
    // _count is the +Inf bucket so the two always agree, even while threads keep counting.
    fmt::format_to(o, "rl_command_duration_seconds_bucket{{family=\"{}\",le=\"+Inf\"}} {}\n",
                   kFamilyNames[f], cumulative);
    fmt::format_to(o, "rl_command_duration_seconds_sum{{family=\"{}\"}} {}\n", kFamilyNames[f],
                   latency.sum_ns[f] / 1e9);
    fmt::format_to(o, "rl_command_duration_seconds_count{{family=\"{}\"}} {}\n", kFamilyNames[f],
                   cumulative);
  }
}

void RenderReloads(std::string* page, const ServerState& st) {
  std::string& out = *page;
  auto o = std::back_inserter(out);
  // As Prometheus's own prometheus_config_last_reload_successful: 1 until a reload fails.
  const ReloadStatus reload = st.reloads.Get();
  Family(&out, "rl_config_last_reload_successful", "gauge",
         "0 when the last SIGHUP reload failed (the running config was kept), else 1.");
  Sample(&out, "rl_config_last_reload_successful", reload.last == "error" ? 0 : 1);
  Family(&out, "rl_config_last_reload_timestamp_seconds", "gauge",
         "Unix time of the last SIGHUP reload (0 = never).");
  Sample(&out, "rl_config_last_reload_timestamp_seconds", reload.last_wall_ms / 1e3);
  Family(&out, "rl_config_reloads_total", "counter", "SIGHUP reloads by result.");
  fmt::format_to(o, "rl_config_reloads_total{{result=\"ok\"}} {}\n", reload.ok);
  fmt::format_to(o, "rl_config_reloads_total{{result=\"error\"}} {}\n", reload.failed);
  Family(&out, "rl_config_restart_pending_settings", "gauge",
         "Settings the config file changes that apply only after a restart.");
  Sample(&out, "rl_config_restart_pending_settings", reload.restart_pending.size());
  Family(&out, "rl_config_last_reload_info", "gauge",
         "The last SIGHUP reload's status (none, ok, error) and message, as labels.");
  fmt::format_to(o, "rl_config_last_reload_info{{status=\"{}\",message=\"{}\"}} 1\n", reload.last,
                 EscapeLabelValue(reload.message));
}

void RenderSnapshots(std::string* page, const ServerState& st) {
  std::string& out = *page;
  PersistenceStats ps;
  if (st.snapshotter != nullptr) ps = st.snapshotter->Stats();
  Family(&out, "rl_snapshot_enabled", "gauge", "1 when --snapshot is set.");
  Sample(&out, "rl_snapshot_enabled", ps.enabled ? 1 : 0);
  Family(&out, "rl_snapshot_saves_total", "counter", "Successful snapshot saves.");
  Sample(&out, "rl_snapshot_saves_total", ps.saves);
  Family(&out, "rl_snapshot_save_errors_total", "counter", "Failed snapshot saves.");
  Sample(&out, "rl_snapshot_save_errors_total", ps.save_errors);
  Family(&out, "rl_snapshot_last_save_timestamp_seconds", "gauge",
         "Unix time of the last successful save (0 = never).");
  Sample(&out, "rl_snapshot_last_save_timestamp_seconds", ps.last_save_wall_ms / 1e3);
  Family(&out, "rl_snapshot_last_save_duration_seconds", "gauge", "Duration of the last save.");
  Sample(&out, "rl_snapshot_last_save_duration_seconds", ps.last_save_duration_us / 1e6);
  Family(&out, "rl_snapshot_last_save_keys", "gauge", "States written by the last save.");
  Sample(&out, "rl_snapshot_last_save_keys", ps.last_save_keys);
  Family(&out, "rl_snapshot_last_save_bytes", "gauge", "Size of the last snapshot file.");
  Sample(&out, "rl_snapshot_last_save_bytes", ps.last_save_bytes);
  Family(&out, "rl_snapshot_load_keys", "gauge", "States restored from the snapshot at start.");
  Sample(&out, "rl_snapshot_load_keys", ps.load_keys);
}

}  // namespace

std::string RenderMetrics(const ServerState& st) {
  CheckCounters checks;
  LatencySnapshot latency;
  uint64_t commands = 0;
  for (const auto& ws : st.worker_stats) {
    commands += ws->commands();
    ws->AddTo(&checks);
    ws->AddLatency(&latency);
  }
  std::string out;
  RenderChecks(&out, checks);
  RenderServer(&out, st, commands);
  RenderLatency(&out, latency);
  RenderReloads(&out, st);
  RenderSnapshots(&out, st);
  for (const auto& front_end : st.front_ends) front_end->RenderMetrics(&out);
  return out;
}

}  // namespace rl::server

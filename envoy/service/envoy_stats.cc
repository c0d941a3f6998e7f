// ShouldRateLimit's Prometheus counters; see envoy_stats.h.
#include "envoy_stats.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

namespace rl::envoy {
namespace {

// A label value as the exposition format needs it (rl-server's metrics.cc does the same; this
// library links no server code, so the fuzz target stays small).
std::string Label(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string_view("\\n") : std::string_view(&c, 1);
  }
  return out;
}

}  // namespace

RuleCounters* EnvoyStats::Find(std::string_view domain, std::string_view key) {
  std::string id;
  id.reserve(domain.size() + 1 + key.size());
  id.append(domain).push_back('\0');
  id.append(key);
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = series_.find(id);
    if (it != series_.end()) return it->second.get();
  }
  absl::MutexLock lock(&mu_);
  if (series_.size() >= kMaxSeries) {
    id.resize(domain.size() + 1);
    id.append(kOtherKey);
  }
  auto& slot = series_[id];
  if (slot == nullptr) slot = std::make_unique<RuleCounters>();
  return slot.get();
}

void EnvoyStats::Add(RuleCounters* c, const HitOutcome& o) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  c->total_hits.fetch_add(o.hits, kRelaxed);
  if (o.over_limit) {
    c->over_limit.fetch_add(o.hits, kRelaxed);
    if (o.shadow) c->shadow_mode.fetch_add(o.hits, kRelaxed);
  } else {
    c->within_limit.fetch_add(o.hits, kRelaxed);
    if (o.near_limit > 0) c->near_limit.fetch_add(o.near_limit, kRelaxed);
  }
}

void EnvoyStats::CountError(std::string_view code) {
  absl::MutexLock lock(&mu_);
  ++errors_[std::string(code)];
}

void EnvoyStats::Render(std::string* page) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::pair<std::string_view, const RuleCounters*>> rows;
  for (const auto& [id, counters] : series_) rows.emplace_back(id, counters.get());
  std::sort(rows.begin(), rows.end());
  struct Family {
    std::string_view name, help;
    const std::atomic<uint64_t> RuleCounters::*field;
  };
  static constexpr Family kFamilies[] = {
      {"total_hits", "hits (descriptor costs) ShouldRateLimit counted", &RuleCounters::total_hits},
      {"over_limit", "hits over their limit (shadow mode included)", &RuleCounters::over_limit},
      {"near_limit", "allowed hits past 80% of their limit", &RuleCounters::near_limit},
      {"within_limit", "allowed hits", &RuleCounters::within_limit},
      {"shadow_mode", "over-limit hits answered OK by a rule in shadow mode",
       &RuleCounters::shadow_mode},
  };
  auto out = std::back_inserter(*page);
  for (const Family& f : kFamilies) {
    fmt::format_to(out, "# HELP ratelimit_service_rate_limit_{} {}\n", f.name, f.help);
    fmt::format_to(out, "# TYPE ratelimit_service_rate_limit_{} counter\n", f.name);
    for (const auto& [id, counters] : rows) {
      const size_t sep = id.find('\0');
      fmt::format_to(out, "ratelimit_service_rate_limit_{}{{domain=\"{}\",key=\"{}\"}} {}\n",
                     f.name, Label(id.substr(0, sep)), Label(id.substr(sep + 1)),
                     (counters->*f.field).load(std::memory_order_relaxed));
    }
  }
  fmt::format_to(out,
                 "# HELP rl_envoy_call_errors_total ShouldRateLimit calls answered with a gRPC "
                 "error status\n# TYPE rl_envoy_call_errors_total counter\n");
  std::vector<std::pair<std::string, uint64_t>> errors(errors_.begin(), errors_.end());
  std::sort(errors.begin(), errors.end());
  for (const auto& [code, n] : errors) {
    fmt::format_to(out, "rl_envoy_call_errors_total{{code=\"{}\"}} {}\n", code, n);
  }
}

}  // namespace rl::envoy

// ShouldRateLimit's request decoding and deciding on arbitrary bytes: the protobuf parse of a
// RateLimitRequest (what gRPC hands the service), then what the service does with it (MakePlan
// over a fixed rule set, the local engine, Answer). Checked on every input:
// - never a crash or a sanitizer report, whatever the bytes;
// - a request MakePlan refuses gets a status, nothing else; an accepted one gets exactly one
//   DescriptorStatus per descriptor, overall OVER_LIMIT exactly when one of them is, and a
//   response that serializes and parses back to itself.
// Shared by fuzz/envoy_request_fuzz.cc and the corpus replay test (tests/envoy).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "backend.h"
#include "decide.h"
#include "fuzz_check.h"
#include "google/protobuf/stubs/logging.h"
#include "rl/clock.h"
#include "rl/envoy/config.h"
#include "rl/limiter.h"

namespace rl::fuzz {

inline constexpr std::string_view kEnvoyFuzzRules = R"(domain: fuzz
descriptors:
  - key: a
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: b
    value: "x*"
    rate_limit: {unit: minute, requests_per_unit: 3, name: bx}
  - key: c
    rate_limit: {unit: hour, requests_per_unit: 1, replaces: [{name: bx}]}
    descriptors:
      - key: d
        rate_limit: {unlimited: true}
  - key: s
    shadow_mode: true
    detailed_metric: true
    rate_limit: {unit: day, requests_per_unit: 1}
  - key: z
    rate_limit: {unit: minute, requests_per_unit: 0}
)";

inline void RunEnvoyRequest(std::string_view input) {
  static const auto* const rules = [] {
    auto set = envoy::RuleSet::LoadString(kEnvoyFuzzRules, "fuzz.yaml");
    FUZZ_CHECK(set.ok());
    return new std::shared_ptr<const envoy::RuleSet>(*set);
  }();
  static auto* const clock = new ManualClock(1'700'000'000'000);
  static auto* const limiter = [] {
    LimiterOptions options;
    options.clock = clock;
    options.sweep_interval_ms = 0;
    options.max_keys = 10'000;
    return new Limiter(options);
  }();
  static auto* const backend = envoy::MakeLocalBackend(limiter).release();
  static auto* const stats = new envoy::EnvoyStats();
  // protobuf logs every string that is not UTF-8: noise here, not a finding.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;

  envoy::pb::RateLimitRequest request;
  if (!request.ParseFromArray(input.data(), static_cast<int>(input.size()))) return;
  auto plan = envoy::MakePlan(**rules, request, stats);
  if (!plan.ok()) return;
  bool called = false;
  backend->CheckAll(
      plan->checks, std::chrono::steady_clock::time_point::max(),
      [&](absl::StatusOr<std::vector<Decision>> decisions) {
        called = true;
        if (!decisions.ok()) return;  // e.g. a cost over rl's largest limit
        FUZZ_CHECK(decisions->size() == plan->checks.size());
        envoy::pb::RateLimitResponse response;
        envoy::Answer(*plan, *decisions, {true, clock->WallMs()}, stats, &response);
        FUZZ_CHECK(response.statuses_size() == request.descriptors_size());
        bool over = false;
        for (const auto& s : response.statuses()) {
          over = over || s.code() == envoy::pb::RateLimitResponse::OVER_LIMIT;
        }
        FUZZ_CHECK(over == (response.overall_code() == envoy::pb::RateLimitResponse::OVER_LIMIT));
        std::string bytes;
        FUZZ_CHECK(response.SerializeToString(&bytes));
        envoy::pb::RateLimitResponse again;
        FUZZ_CHECK(again.ParseFromString(bytes));
        FUZZ_CHECK(again.SerializeAsString() == bytes);
      });
  FUZZ_CHECK(called);
  clock->Advance(1);
  std::string page;
  stats->Render(&page);
}

}  // namespace rl::fuzz

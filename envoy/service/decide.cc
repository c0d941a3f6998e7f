// Resolving and answering one ShouldRateLimit request; see decide.h.
#include "decide.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "rl/envoy/config.h"
#include "rl/headers.h"

namespace rl::envoy {
namespace {

namespace common = ::envoy::extensions::common::ratelimit::v3;
using Code = pb::RateLimitResponse::Code;

absl::Status CheckShape(const pb::RateLimitRequest& request) {
  if (request.domain().empty()) {
    return absl::InvalidArgumentError("rate limit domain must not be empty");
  }
  if (request.descriptors_size() == 0) {
    return absl::InvalidArgumentError("rate limit descriptor list must not be empty");
  }
  if (request.descriptors_size() > kMaxDescriptors) {
    return absl::InvalidArgumentError(
        fmt::format("more than {} descriptors in one request", kMaxDescriptors));
  }
  for (const auto& d : request.descriptors()) {
    if (d.entries_size() == 0 || d.entries_size() > kMaxEntries) {
      return absl::InvalidArgumentError(
          fmt::format("a descriptor must have 1..{} entries", kMaxEntries));
    }
    for (const auto& e : d.entries()) {
      if (e.key().empty()) return absl::InvalidArgumentError("a descriptor entry has no key");
    }
    if (d.has_hits_addend() && d.hits_addend().value() > static_cast<uint64_t>(rl::kMaxLimit)) {
      return absl::InvalidArgumentError("descriptor hits_addend is too large");
    }
  }
  return absl::OkStatus();
}

// Resolves one descriptor: its rule (an override's own, or the configured one) into `item`;
// the engine key into `key`; the names it replaces appended to `replaced`.
void Resolve(const RuleSet& rules, std::string_view domain, const common::RateLimitDescriptor& d,
             absl::Span<const Entry> entries, EnvoyStats* stats, Plan::Item* item, std::string* key,
             rl::Limit* limit, std::vector<std::string>* replaced) {
  Rule override_rule;
  std::string detailed_key;
  const Rule* rule = nullptr;
  const std::optional<Unit> unit = d.has_limit() ? UnitFromProto(d.limit().unit()) : std::nullopt;
  if (unit.has_value()) {
    // An override is a plain limit: never unlimited, shadow or replacing (as envoyproxy's).
    override_rule = RuleSet::OverrideRule(domain, entries, d.limit().requests_per_unit(), *unit);
    rule = &override_rule;
    EngineKey(domain, entries, key);
  } else {
    rule = rules.Match(domain, entries, key, &detailed_key);
  }
  if (rule == nullptr) return;  // kNoRule
  if (stats != nullptr) {
    item->counters = stats->Find(domain, !rule->detailed_metric ? rule->stat_key
                                         : detailed_key.empty() ? DetailedStatKey(domain, entries)
                                                                : detailed_key);
  }
  if (rule->unlimited) {
    item->kind = Plan::Kind::kUnlimited;
    return;
  }
  item->kind = rule->requests_per_unit == 0 ? Plan::Kind::kZero : Plan::Kind::kCheck;
  item->shadow = rule->shadow_mode;
  item->name = rule->name;
  item->requests_per_unit = rule->requests_per_unit;
  item->unit = ProtoUnit(rule->unit);
  *limit = rule->limit;
  replaced->insert(replaced->end(), rule->replaces.begin(), rule->replaces.end());
}

}  // namespace

int ProtoUnit(Unit unit) {
  switch (unit) {
    case Unit::kSecond:
      return 1;
    case Unit::kMinute:
      return 2;
    case Unit::kHour:
      return 3;
    case Unit::kDay:
      return 4;
    case Unit::kMonth:
      return 5;
    case Unit::kYear:
      return 6;
    case Unit::kWeek:
      return 7;
  }
  return 0;
}

std::optional<Unit> UnitFromProto(int value) {
  for (Unit u : {Unit::kSecond, Unit::kMinute, Unit::kHour, Unit::kDay, Unit::kMonth, Unit::kYear,
                 Unit::kWeek}) {
    if (ProtoUnit(u) == value) return u;
  }
  return std::nullopt;
}

absl::StatusOr<Plan> MakePlan(const RuleSet& rules, const pb::RateLimitRequest& request,
                              EnvoyStats* stats) {
  absl::Status shape = CheckShape(request);
  if (!shape.ok()) return shape;
  Plan plan;
  const int n = request.descriptors_size();
  const int64_t request_hits = request.hits_addend() == 0 ? 1 : request.hits_addend();
  std::vector<Entry> entries;
  std::vector<std::string> keys(n), replaced;
  std::vector<rl::Limit> limits(n);
  plan.items.resize(n);
  for (int i = 0; i < n; ++i) {
    const common::RateLimitDescriptor& d = request.descriptors(i);
    Plan::Item& item = plan.items[i];
    item.cost = d.has_hits_addend() ? static_cast<int64_t>(d.hits_addend().value()) : request_hits;
    entries.clear();
    for (const auto& e : d.entries()) entries.push_back(Entry{e.key(), e.value()});
    Resolve(rules, request.domain(), d, entries, stats, &item, &keys[i], &limits[i], &replaced);
  }
  for (int i = 0; i < n; ++i) {
    Plan::Item& item = plan.items[i];
    const bool checked = item.kind == Plan::Kind::kCheck || item.kind == Plan::Kind::kZero;
    if (checked && !item.name.empty() &&
        std::find(replaced.begin(), replaced.end(), item.name) != replaced.end()) {
      item.kind = Plan::Kind::kReplaced;
    }
    if (item.kind != Plan::Kind::kCheck) continue;
    item.check = plan.checks.size();
    plan.checks.push_back(BackendCheck{std::move(keys[i]), limits[i], item.cost});
  }
  return plan;
}

void Answer(const Plan& plan, absl::Span<const rl::Decision> decisions,
            const AnswerOptions& options, EnvoyStats* stats, pb::RateLimitResponse* response) {
  Code overall = pb::RateLimitResponse::OK;
  // A copy: the decision of a requests_per_unit 0 rule lives only in its iteration.
  rl::Decision binding;
  bool has_binding = false;
  std::string_view binding_name;
  bool binding_denies = false;
  for (const Plan::Item& item : plan.items) {
    auto* status = response->add_statuses();
    status->set_code(pb::RateLimitResponse::OK);
    if (item.kind == Plan::Kind::kUnlimited) {
      status->set_limit_remaining(std::numeric_limits<uint32_t>::max());
    }
    if (item.kind == Plan::Kind::kUnlimited || item.kind == Plan::Kind::kNoRule ||
        item.kind == Plan::Kind::kReplaced) {
      if (stats != nullptr && item.counters != nullptr) {
        stats->Add(item.counters, {static_cast<uint64_t>(item.cost), false, false, 0});
      }
      continue;
    }
    rl::Decision zero;  // requests_per_unit 0: every request is over the limit
    zero.allowed = item.cost == 0;
    const rl::Decision& d = item.kind == Plan::Kind::kZero ? zero : decisions[item.check];
    auto* limit = status->mutable_current_limit();
    limit->set_name(item.name);
    limit->set_requests_per_unit(item.requests_per_unit);
    limit->set_unit(static_cast<pb::RateLimitResponse::RateLimit::Unit>(item.unit));
    status->set_limit_remaining(
        static_cast<uint32_t>(std::clamp<int64_t>(d.remaining, 0, UINT32_MAX)));
    auto* reset = status->mutable_duration_until_reset();
    reset->set_seconds(d.reset_after_ms / 1000);
    reset->set_nanos(static_cast<int32_t>(d.reset_after_ms % 1000) * 1'000'000);
    const bool over = !d.allowed;
    if (over && !item.shadow) {
      status->set_code(pb::RateLimitResponse::OVER_LIMIT);
      overall = pb::RateLimitResponse::OVER_LIMIT;
    }
    // The headers follow the denying descriptor, else the one with the least remaining.
    const bool denies = over && !item.shadow;
    if (!has_binding || denies != binding_denies ? !has_binding || denies
                                                 : d.remaining < binding.remaining) {
      binding = d;
      has_binding = true;
      binding_denies = denies;
      binding_name = item.name.empty() ? std::string_view(kStateScope) : item.name;
    }
    if (stats != nullptr && item.counters != nullptr) {
      HitOutcome o{static_cast<uint64_t>(item.cost), over, over && item.shadow, 0};
      const int64_t threshold = d.limit * 8 / 10;
      const int64_t used = d.limit - d.remaining;
      if (!over && used > threshold) o.near_limit = std::min<int64_t>(item.cost, used - threshold);
      stats->Add(item.counters, o);
    }
  }
  response->set_overall_code(overall);
  if (options.headers && has_binding) {
    rl::Decision shown = binding;
    if (overall == pb::RateLimitResponse::OK) shown.allowed = true;
    for (const rl::HeaderField& h : rl::HeaderValues(shown, binding_name, options.wall_now_ms)) {
      auto* header = response->add_response_headers_to_add();
      header->set_key(h.name);
      header->set_value(h.value);
    }
  }
}

}  // namespace rl::envoy

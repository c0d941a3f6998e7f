// Matching a request descriptor against a loaded RuleSet, as envoyproxy/ratelimit's GetLimit
// walks its descriptor tree, and the keys (engine state, metrics) a match is known by.
#include <algorithm>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "rl/ascii.h"
#include "rl/envoy/config.h"
#include "rule_set_impl.h"

namespace rl::envoy {
namespace {

constexpr std::string_view kUnitNames[] = {"SECOND", "MINUTE", "HOUR", "DAY",
                                           "WEEK",   "MONTH",  "YEAR"};
constexpr int64_t kDay = 24 * 3600;
constexpr int64_t kUnitSeconds[] = {1, 60, 3600, kDay, 7 * kDay, 30 * kDay, 365 * kDay};

void AppendEscaped(std::string_view text, std::string* out) {
  for (char c : text) {
    if (c == '\\' || c == '|' || c == '=') out->push_back('\\');
    out->push_back(c);
  }
}

}  // namespace

int64_t UnitSeconds(Unit unit) { return kUnitSeconds[static_cast<size_t>(unit)]; }

std::string_view UnitName(Unit unit) { return kUnitNames[static_cast<size_t>(unit)]; }

std::optional<Unit> ParseUnit(std::string_view name) {
  for (size_t i = 0; i < std::size(kUnitNames); ++i) {
    if (rl::EqualsIgnoreCase(name, kUnitNames[i])) return static_cast<Unit>(i);
  }
  return std::nullopt;
}

std::string DetailedStatKey(std::string_view domain, absl::Span<const Entry> entries) {
  std::string key(domain);
  for (const Entry& e : entries) key.append(".").append(e.key).append("_").append(e.value);
  return key;
}

void EngineKey(std::string_view domain, absl::Span<const Entry> entries, std::string* out) {
  out->clear();
  AppendEscaped(domain, out);
  for (const Entry& e : entries) {
    out->push_back('|');
    AppendEscaped(e.key, out);
    out->push_back('=');
    AppendEscaped(e.value, out);
  }
}

bool WildcardMatch(const std::vector<std::string>& parts, std::string_view value) {
  if (parts.size() == 1) return parts[0] == value;
  size_t fixed = 0;
  for (const std::string& p : parts) fixed += p.size();
  const std::string_view first = parts.front(), last = parts.back();
  if (value.size() < fixed || value.substr(0, first.size()) != first ||
      value.substr(value.size() - last.size()) != last) {
    return false;
  }
  // The middle pieces, in order, within what the first and last leave.
  std::string_view rest = value.substr(first.size(), value.size() - first.size() - last.size());
  for (size_t i = 1; i + 1 < parts.size(); ++i) {
    const size_t at = rest.find(parts[i]);
    if (at == std::string_view::npos) return false;
    rest.remove_prefix(at + parts[i].size());
  }
  return true;
}

RuleSet::RuleSet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RuleSet::~RuleSet() = default;

std::shared_ptr<const RuleSet> RuleSet::Make(std::unique_ptr<Impl> impl) {
  return std::shared_ptr<const RuleSet>(new RuleSet(std::move(impl)));
}

const Rule* RuleSet::Match(std::string_view domain, absl::Span<const Entry> entries,
                           std::string* engine_key) const {
  return Match(domain, entries, engine_key, nullptr);
}

const Rule* RuleSet::Match(std::string_view domain, absl::Span<const Entry> entries,
                           std::string* engine_key, std::string* detailed_stat_key) const {
  if (engine_key != nullptr) engine_key->clear();
  if (detailed_stat_key != nullptr) detailed_stat_key->clear();
  auto d = impl_->domains.find(absl::string_view(domain.data(), domain.size()));
  if (d == impl_->domains.end()) return nullptr;
  const Level* level = &d->second;
  const Rule* found = nullptr;
  // (entry, wildcard value) for entries a share_threshold wildcard matched: they count as one.
  absl::InlinedVector<std::pair<size_t, const std::string*>, 2> shared;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const Node* next = nullptr;
    bool by_wildcard = false;
    if (auto k = level->keys.find(e.key); k != level->keys.end()) {
      const KeyEntry& ke = k->second;
      // A request's empty value is "no value": only a wildcard or the key alone takes it.
      if (!e.value.empty()) {
        if (auto v = ke.by_value.find(e.value); v != ke.by_value.end()) next = v->second.get();
      }
      for (size_t w = 0; next == nullptr && w < ke.wildcards.size(); ++w) {
        if (WildcardMatch(ke.wildcards[w].parts, e.value)) {
          next = ke.wildcards[w].node;
          by_wildcard = true;
        }
      }
      if (next == nullptr) next = ke.without_value.get();
    }
    if (next == nullptr) break;
    if (by_wildcard && !next->shared_value.empty()) shared.emplace_back(i, &next->shared_value);
    if (i + 1 == entries.size() && next->rule.has_value()) found = &*next->rule;
    if (next->children == nullptr) break;
    level = next->children.get();
  }
  if (found == nullptr) return nullptr;
  const auto value_of = [&](size_t i) -> const std::string* {
    for (const auto& [at, value] : shared) {
      if (at == i) return value;
    }
    return nullptr;
  };
  if (engine_key != nullptr) {
    AppendEscaped(domain, engine_key);
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string* value = value_of(i);
      engine_key->push_back('|');
      AppendEscaped(entries[i].key, engine_key);
      engine_key->push_back('=');
      AppendEscaped(value != nullptr ? *value : entries[i].value, engine_key);
    }
  }
  if (detailed_stat_key != nullptr) {
    if (shared.empty()) {
      *detailed_stat_key = DetailedStatKey(domain, entries);
    } else {  // upstream writes "key_value" here only for a non-empty value
      detailed_stat_key->assign(domain);
      for (size_t i = 0; i < entries.size(); ++i) {
        const std::string* value = value_of(i);
        const std::string& v = value != nullptr ? *value : entries[i].value;
        detailed_stat_key->append(".").append(entries[i].key);
        if (!v.empty()) detailed_stat_key->append("_").append(v);
      }
    }
  }
  return found;
}

Rule RuleSet::OverrideRule(std::string_view domain, absl::Span<const Entry> entries,
                           uint32_t requests_per_unit, Unit unit) {
  Rule rule;
  rule.requests_per_unit = requests_per_unit;
  rule.unit = unit;
  rule.limit =
      rl::Limit{rl::Algorithm::kAlignedWindow, requests_per_unit, UnitSeconds(unit) * 1000};
  // envoyproxy/ratelimit's descriptorKey: an empty value adds no "_".
  rule.stat_key.assign(domain).append(".");
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) rule.stat_key.append(".");
    rule.stat_key.append(entries[i].key);
    if (!entries[i].value.empty()) rule.stat_key.append("_").append(entries[i].value);
  }
  return rule;
}

std::vector<std::string> RuleSet::Domains() const {
  std::vector<std::string> out;
  for (const auto& [name, level] : impl_->domains) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

size_t RuleSet::rule_count() const { return impl_->rules; }

}  // namespace rl::envoy

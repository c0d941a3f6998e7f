// The tree a RuleSet holds: per domain, levels of descriptors indexed by key, then by value, with
// each key's wildcard values kept in file order. Shared by the loader (yaml_loader.cc) and the
// matcher (rule_set.cc).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "rl/envoy/config.h"

namespace rl::envoy {

struct Level;

// One configured descriptor: its rule (if it has a rate_limit) and the level below it.
struct Node {
  std::optional<Rule> rule;
  std::unique_ptr<Level> children;  // null when it has no descriptors
  // share_threshold: every value its wildcard matches shares one state (and detailed metric),
  // keyed by the wildcard value itself ("files*"). Empty when not set.
  std::string shared_value;
};

// A value with '*' in it: the literal pieces between the stars (`a*b*` -> "a", "b", "").
struct Wildcard {
  std::vector<std::string> parts;
  Node* node;
};

// The descriptors of one level that share a key.
struct KeyEntry {
  std::unique_ptr<Node> without_value;                               // `key` alone: any value
  absl::flat_hash_map<std::string, std::unique_ptr<Node>> by_value;  // exact values (stars too)
  std::vector<Wildcard> wildcards;  // values with '*', in file order
};

struct Level {
  absl::flat_hash_map<std::string, KeyEntry> keys;
};

struct RuleSet::Impl {
  absl::flat_hash_map<std::string, Level> domains;
  size_t rules = 0;
};

// Concatenation of strings and views (this abseil's StrCat takes no std::string_view).
template <typename... T>
std::string Cat(const T&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

// Whether `value` matches the pieces of a wildcard: starts with the first, ends with the last,
// and holds the others in order between them (each '*' matches any run, the empty one too).
bool WildcardMatch(const std::vector<std::string>& parts, std::string_view value);

}  // namespace rl::envoy

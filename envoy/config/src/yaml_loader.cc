// Reading envoyproxy/ratelimit's YAML into a RuleSet's tree. Every error names the file, the line
// and the key; a file is checked whole (unknown and misplaced keys included) before it counts, and
// a set is returned only when every file loaded.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "rl/ascii.h"
#include "rl/envoy/config.h"
#include "rl_extension.h"
#include "rule_set_impl.h"

namespace rl::envoy {
namespace {

// Descriptors nest at most this deep (a config is trusted, but a mistake should not overflow).
constexpr int kMaxDepth = 64;

// What loading a file needs to say where an error is.
struct Where {
  const std::string& file;
  // What is being read: "descriptor 'edge.tenant_gold'" (envoyproxy/ratelimit's composite key),
  // "domain 'edge'" for the domain's own list, or nothing for the file's top.
  std::string label;
};

std::string Label(const std::string& parent, int depth) {
  const std::string name = parent.substr(0, parent.size() - 1);  // without the trailing '.'
  return Cat(depth <= 1 ? "domain '" : "descriptor '", name, "'");
}

absl::Status Error(const Where& at, const YAML::Mark& mark, std::string_view key,
                   std::string_view message) {
  const int line = mark.is_null() ? 0 : mark.line + 1;
  std::string subject = key.empty() ? "" : Cat("'", key, "'");
  if (!at.label.empty()) subject += Cat(subject.empty() ? "" : " ", "in ", at.label);
  const std::string text =
      Cat(at.file, ":", std::to_string(line), ": ", subject, subject.empty() ? "" : ": ", message);
  return absl::InvalidArgumentError(text);
}
absl::Status Error(const Where& at, const YAML::Node& node, std::string_view key,
                   std::string_view message) {
  return Error(at, node.Mark(), key, message);
}

// Checks that `map` is a mapping whose keys are all in `allowed` and none repeats (envoyproxy/
// ratelimit's YAML parser refuses a repeated key too).
absl::Status CheckKeys(const Where& at, const YAML::Node& map, std::string_view what,
                       std::initializer_list<std::string_view> allowed) {
  if (!map.IsMap()) return Error(at, map, what, "expected a mapping of keys to values");
  std::vector<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) return Error(at, kv.first, what, "a key must be a string");
    const std::string& key = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (std::string_view a : allowed) list += Cat(list.empty() ? "" : ", ", a);
      return Error(at, kv.first, key, Cat("unknown key here (", what, " takes ", list, ")"));
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return Error(at, kv.first, key, "appears twice");
    }
    seen.push_back(key);
  }
  return absl::OkStatus();
}

// Where `key` is written in `map` (a block mapping's own mark is its first key's).
YAML::Mark KeyMark(const YAML::Node& map, std::string_view key) {
  for (const auto& kv : map) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) return kv.first.Mark();
  }
  return map.Mark();
}

absl::StatusOr<std::string> Text(const Where& at, const YAML::Node& map, std::string_view key) {
  const YAML::Node node = map[std::string(key)];
  if (!node.IsDefined() || node.IsNull()) return std::string();
  if (!node.IsScalar()) return Error(at, node, key, "expected a string");
  return node.Scalar();
}

absl::StatusOr<bool> Flag(const Where& at, const YAML::Node& map, std::string_view key) {
  const YAML::Node node = map[std::string(key)];
  if (!node.IsDefined() || node.IsNull()) return false;
  // YAML 1.1's booleans, as envoyproxy/ratelimit's parser reads them.
  const std::string v = node.IsScalar() ? rl::AsciiLowered(node.Scalar()) : "";
  for (std::string_view t : {"true", "yes", "on", "y"}) {
    if (v == t) return true;
  }
  for (std::string_view f : {"false", "no", "off", "n"}) {
    if (v == f) return false;
  }
  return Error(at, node, key, "expected true or false");
}

absl::StatusOr<uint32_t> Count(const Where& at, const YAML::Node& map, std::string_view key) {
  const YAML::Node node = map[std::string(key)];
  if (!node.IsDefined() || node.IsNull()) return 0u;
  uint32_t n = 0;
  if (!node.IsScalar() || !absl::SimpleAtoi(node.Scalar(), &n)) {
    return Error(at, node, key, "expected a whole number from 0 to 4294967295");
  }
  return n;
}

absl::Status ReadReplaces(const Where& at, const YAML::Node& node, Rule* rule) {
  if (!node.IsDefined() || node.IsNull()) return absl::OkStatus();
  if (!node.IsSequence()) return Error(at, node, "replaces", "expected a list of {name: ...}");
  for (const YAML::Node& item : node) {
    if (absl::Status s = CheckKeys(at, item, "replaces", {"name"}); !s.ok()) return s;
    absl::StatusOr<std::string> name = Text(at, item, "name");
    if (!name.ok()) return name.status();
    if (name->empty()) return Error(at, item, "replaces", "should not have an empty name");
    if (*name == rule->name) {
      return Error(at, item, "replaces", "should not contain the name of the same descriptor");
    }
    rule->replaces.push_back(*std::move(name));
  }
  return absl::OkStatus();
}

// rate_limit: {unit, requests_per_unit, unlimited, name, replaces, rl}.
absl::Status ReadRateLimit(const Where& at, const YAML::Node& node, Rule* rule) {
  if (absl::Status s =
          CheckKeys(at, node, "rate_limit",
                    {"unit", "requests_per_unit", "unlimited", "name", "replaces", kExtensionKey});
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> unit = Text(at, node, "unit");
  absl::StatusOr<uint32_t> count = Count(at, node, "requests_per_unit");
  absl::StatusOr<bool> unlimited = Flag(at, node, "unlimited");
  absl::StatusOr<std::string> name = Text(at, node, "name");
  for (const absl::Status& s : {unit.status(), count.status(), unlimited.status(), name.status()}) {
    if (!s.ok()) return s;
  }
  rule->name = *name;
  rule->requests_per_unit = *count;
  rule->unlimited = *unlimited;
  const std::optional<Unit> parsed = ParseUnit(*unit);
  const YAML::Node unit_node = node["unit"].IsDefined() ? node["unit"] : node;
  if (rule->unlimited && parsed.has_value()) {
    return Error(at, unit_node, "unit", "should not specify rate limit unit when unlimited");
  }
  if (!rule->unlimited && !parsed.has_value()) {
    return Error(at, unit_node, "unit",
                 Cat("invalid rate limit unit '", *unit,
                     "' (SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR)"));
  }
  if (absl::Status s = ReadReplaces(at, node["replaces"], rule); !s.ok()) return s;
  if (rule->unlimited) {
    if (node[std::string(kExtensionKey)].IsDefined()) {
      return Error(at, node[std::string(kExtensionKey)], kExtensionKey,
                   "has no meaning for an unlimited rate_limit");
    }
    return absl::OkStatus();
  }
  rule->unit = *parsed;
  YAML::Mark where = node.Mark();
  std::string key;
  absl::StatusOr<rl::Limit> limit = ExtensionLimit(
      node[std::string(kExtensionKey)], rule->requests_per_unit, rule->unit, &where, &key);
  if (!limit.ok()) return Error(at, where, key, std::string(limit.status().message()));
  rule->limit = *limit;
  return absl::OkStatus();
}

// Keys envoyproxy/ratelimit accepts that change what rl would count or answer, which rl does not
// do (yet): refused when true rather than silently ignored.
absl::Status RefuseUnsupported(const Where& at, const YAML::Node& node) {
  for (std::string_view key : {"quota_mode"}) {
    absl::StatusOr<bool> on = Flag(at, node, key);
    if (!on.ok()) return on.status();
    if (*on) return Error(at, node[std::string(key)], key, "is not supported by rl");
  }
  // value_to_metric changes only metric names: accepted, read as false.
  absl::StatusOr<bool> metric = Flag(at, node, "value_to_metric");
  return metric.status();
}

struct Loader {
  const std::string& file;
  RuleSet::Impl* impl;

  absl::Status Descriptors(const YAML::Node& list, const std::string& parent, Level* level,
                           int depth);
  absl::Status Descriptor(const YAML::Node& node, const std::string& parent, Level* level,
                          int depth);
  absl::Status File(const std::string& text);
};

absl::Status Loader::Descriptors(const YAML::Node& list, const std::string& parent, Level* level,
                                 int depth) {
  if (!list.IsDefined() || list.IsNull()) return absl::OkStatus();
  Where at{file, Label(parent, depth)};
  if (!list.IsSequence()) return Error(at, list, "descriptors", "expected a list of descriptors");
  if (depth > kMaxDepth) return Error(at, list, "descriptors", "nested too deep");
  for (const YAML::Node& node : list) {
    if (absl::Status s = Descriptor(node, parent, level, depth); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Loader::Descriptor(const YAML::Node& node, const std::string& parent, Level* level,
                                int depth) {
  Where at{file, Label(parent, depth)};
  if (!node.IsMap()) return Error(at, node, "descriptors", "expected a list of descriptors");
  absl::StatusOr<std::string> key = Text(at, node, "key");
  absl::StatusOr<std::string> value = Text(at, node, "value");
  if (!key.ok()) return key.status();
  if (!value.ok()) return value.status();
  if (key->empty()) return Error(at, node, "key", "descriptor has empty key");
  const std::string composite = value->empty() ? *key : Cat(*key, "_", *value);
  const std::string full_key = parent + composite;
  at.label = Cat("descriptor '", full_key, "'");
  if (absl::Status s =
          CheckKeys(at, node, "a descriptor",
                    {"key", "value", "descriptors", "rate_limit", "shadow_mode", "detailed_metric",
                     "quota_mode", "value_to_metric", "share_threshold", "metadata"});
      !s.ok()) {
    return s;
  }
  absl::StatusOr<bool> shadow = Flag(at, node, "shadow_mode");
  absl::StatusOr<bool> detailed = Flag(at, node, "detailed_metric");
  absl::StatusOr<bool> shared = Flag(at, node, "share_threshold");
  for (const absl::Status& s :
       {shadow.status(), detailed.status(), shared.status(), RefuseUnsupported(at, node)}) {
    if (!s.ok()) return s;
  }
  if (*shared && value->find('*') == std::string::npos) {
    return Error(at, KeyMark(node, "share_threshold"), "share_threshold",
                 Cat("can only be used with wildcard values (containing '*'), but found key '",
                     composite, "'"));
  }
  KeyEntry& entry = level->keys[*key];
  std::unique_ptr<Node>& slot = value->empty() ? entry.without_value : entry.by_value[*value];
  if (slot != nullptr) {
    return Error(at, node, "key", Cat("duplicate descriptor composite key '", full_key, "'"));
  }
  slot = std::make_unique<Node>();
  if (*shared) slot->shared_value = *value;
  if (value->find('*') != std::string::npos) {
    std::vector<std::string> parts = absl::StrSplit(*value, '*');
    entry.wildcards.push_back(Wildcard{std::move(parts), slot.get()});
  }
  if (const YAML::Node rate_limit = node["rate_limit"];
      rate_limit.IsDefined() && !rate_limit.IsNull()) {
    Rule rule;
    rule.shadow_mode = *shadow;
    rule.detailed_metric = *detailed;
    rule.stat_key = full_key;
    rule.file = file;
    rule.line = KeyMark(node, "rate_limit").line + 1;
    if (absl::Status s = ReadRateLimit(at, rate_limit, &rule); !s.ok()) return s;
    slot->rule = std::move(rule);
    ++impl->rules;
  }
  const YAML::Node children = node["descriptors"];
  if (!children.IsDefined() || children.IsNull() || children.size() == 0) return absl::OkStatus();
  slot->children = std::make_unique<Level>();
  return Descriptors(children, full_key + ".", slot->children.get(), depth + 1);
}

absl::Status Loader::File(const std::string& text) {
  Where at{file, ""};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() ? 0 : e.mark.line + 1;
    return absl::InvalidArgumentError(
        Cat(file, ":", std::to_string(line), ": error loading config file: ", e.msg));
  }
  if (!root.IsDefined() || root.IsNull()) {
    return Error(at, root, "domain", "config file cannot have empty domain");
  }
  if (absl::Status s = CheckKeys(at, root, "the file", {"domain", "descriptors"}); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> domain = Text(at, root, "domain");
  if (!domain.ok()) return domain.status();
  if (domain->empty()) return Error(at, root, "domain", "config file cannot have empty domain");
  if (impl->domains.contains(*domain)) {
    return Error(at, root["domain"], "domain",
                 Cat("duplicate domain '", *domain, "' in config file"));
  }
  Level& level = impl->domains[*domain];
  return Descriptors(root["descriptors"], *domain + ".", &level, 1);
}

absl::StatusOr<std::shared_ptr<const RuleSet>> Build(
    absl::Span<const std::pair<std::string, std::string>> files) {
  auto impl = std::make_unique<RuleSet::Impl>();
  for (const auto& [name, text] : files) {
    Loader loader{name, impl.get()};
    absl::Status s;
    try {  // yaml-cpp reports by exceptions; none may leave a load
      s = loader.File(text);
    } catch (const std::exception& e) {
      s = absl::InvalidArgumentError(Cat(name, ": error loading config file: ", e.what()));
    }
    if (!s.ok()) return s;
  }
  return RuleSet::Make(std::move(impl));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const RuleSet>> RuleSet::LoadFiles(
    absl::Span<const std::pair<std::string, std::string>> files) {
  return Build(files);
}

absl::StatusOr<std::shared_ptr<const RuleSet>> RuleSet::LoadString(std::string_view yaml,
                                                                   std::string_view file_name) {
  const std::pair<std::string, std::string> file{std::string(file_name), std::string(yaml)};
  return Build(absl::MakeConstSpan(&file, 1));
}

absl::StatusOr<std::shared_ptr<const RuleSet>> RuleSet::LoadDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string ext = it->path().extension().string();
    if (name.empty() || name[0] == '.' || (ext != ".yaml" && ext != ".yml")) continue;
    if (fs::is_regular_file(it->path(), ec)) names.push_back(name);  // follows symlinks
  }
  if (ec) return absl::InvalidArgumentError(Cat(dir, ": ", ec.message()));
  std::sort(names.begin(), names.end());
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& name : names) {
    const std::string path = (fs::path(dir) / name).string();
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) return absl::InvalidArgumentError(Cat(path, ": cannot be read"));
    files.emplace_back(path, text.str());
  }
  return Build(files);
}

}  // namespace rl::envoy

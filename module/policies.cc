// rl.so's policies (see policies.h).
#include "policies.h"

#include <algorithm>
#include <map>
#include <utility>

#include "rl/command/toml_file.h"
#include "rl/policy_registry.h"

namespace rl::module {
namespace {

// Aux data: a count, then (name, spec) string pairs. Redis tags it with the type's encoding
// version (state_type.cc), 1 or 2; the aux format is the same in both. A versioned set starts
// with kVersionEntry (a name ParsePolicy refuses: policy names have no spaces, so an earlier
// rl.so skips it with a warning) whose spec is "<counter> <node>".
constexpr int kAuxOldestVersion = 1;
constexpr int kAuxNewestVersion = 2;
constexpr std::string_view kVersionEntry = "policy set version";
// First field of Encode's output: its format.
constexpr std::string_view kEncodedFormat = "rlps1";

using Texts = std::map<std::string, std::string, std::less<>>;

struct State {
  PolicyRegistry registry;
  // Unversioned only: definitions made over the file's (what an unversioned RDB carries).
  Texts runtime;
  Texts texts;  // the whole set as held: name -> spec text (as received, or canonical)
  SetVersion version;
  uint64_t digest = 0;
  uint64_t seen = 0;  // the highest counter a peer announced
  std::string file;   // the POLICIES file given at load
};

State& Global() {
  static State* state = new State();
  return *state;
}

// FNV-1a over every name and spec, each ended by a 0 byte.
uint64_t DigestOf(const Texts& texts) {
  uint64_t h = 14695981039346656037ULL;
  auto add = [&](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    h *= 1099511628211ULL;  // the 0 byte
  };
  for (const auto& [name, spec] : texts) {
    add(name);
    add(spec);
  }
  return h;
}

// After a change made here: the set's texts are the registry's canonical ones.
void Refresh() {
  State& s = Global();
  s.texts.clear();
  for (const auto& p : s.registry.List()) s.texts[p->name] = FormatPolicy(*p);
  s.digest = DigestOf(s.texts);
}

void Publish(const std::string& my_node) {
  State& s = Global();
  const uint64_t wall = static_cast<uint64_t>(std::max<long long>(0, RedisModule_Milliseconds()));
  s.version = SetVersion{std::max({s.version.counter + 1, s.seen + 1, wall}), my_node};
  s.runtime.clear();  // the versioned set is whole
  Refresh();
}

// Parses every spec; all or nothing. Stored or received text keeps the meaning it had when it
// was written (a bare number was milliseconds).
absl::StatusOr<std::vector<Policy>> ParseAll(const Texts& texts) {
  std::vector<Policy> policies;
  for (const auto& [name, spec] : texts) {
    absl::StatusOr<Policy> p =
        ParsePolicy(name, std::string_view(spec), BareDuration::kMilliseconds);
    if (!p.ok()) {
      return absl::InvalidArgumentError("policy '" + name +
                                        "': " + std::string(p.status().message()));
    }
    policies.push_back(*std::move(p));
  }
  return policies;
}

// Length-prefixed fields ("5:rlps1"), so names and specs need no escaping.
void PutField(std::string* out, std::string_view s) {
  out->append(std::to_string(s.size())).append(":").append(s);
}
bool TakeField(std::string_view* in, std::string_view* field) {
  size_t len = 0, i = 0;
  for (; i < in->size() && i < 9 && (*in)[i] >= '0' && (*in)[i] <= '9'; ++i) {
    len = len * 10 + static_cast<size_t>((*in)[i] - '0');
  }
  if (i == 0 || i >= in->size() || (*in)[i] != ':' || in->size() - i - 1 < len) return false;
  *field = in->substr(i + 1, len);
  in->remove_prefix(i + 1 + len);
  return true;
}
bool ToUint(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 19) return false;
  *v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    *v = *v * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

absl::Status Corrupt() { return absl::InvalidArgumentError("malformed policy set"); }

// Installs `texts` at `version`: all or nothing.
absl::Status InstallTexts(Texts texts, const SetVersion& version) {
  State& s = Global();
  absl::StatusOr<std::vector<Policy>> policies = ParseAll(texts);
  if (!policies.ok()) return policies.status();
  if (absl::Status st = s.registry.ReplaceAllValidated(*std::move(policies)); !st.ok()) return st;
  s.texts = std::move(texts);
  s.digest = DigestOf(s.texts);
  s.version = version;
  s.seen = std::max(s.seen, version.counter);
  s.runtime.clear();
  return absl::OkStatus();
}

}  // namespace

std::string SetVersion::ToString() const {
  return counter == 0 ? "0" : std::to_string(counter) + "-" + node;
}

ModulePolicies& Policies() {
  static ModulePolicies policies;
  return policies;
}

// The same reader as rl-server's (its file checks and its guard against toml++'s non-ASCII
// trouble), then every spec parsed before any is registered.
absl::Status ModulePolicies::LoadFile(const std::string& path) {
  absl::StatusOr<command::PolicyTexts> texts = command::ReadPoliciesFile(path);
  if (!texts.ok()) return texts.status();
  std::vector<Policy> policies;
  for (const auto& [name, spec] : *texts) {
    absl::StatusOr<Policy> policy = ParsePolicy(name, std::string_view(spec));
    if (!policy.ok()) {
      return absl::InvalidArgumentError("policy '" + name +
                                        "': " + std::string(policy.status().message()));
    }
    policies.push_back(*std::move(policy));
  }
  for (Policy& policy : policies) {
    if (absl::Status s = Global().registry.Set(std::move(policy)); !s.ok()) return s;
  }
  Global().file = path;
  Refresh();
  return absl::OkStatus();
}

absl::Status ModulePolicies::Reload(const std::string& my_node) {
  State& s = Global();
  if (s.file.empty()) return absl::FailedPreconditionError("no POLICIES file was given at load");
  absl::StatusOr<command::PolicyTexts> texts = command::ReadPoliciesFile(s.file);
  if (!texts.ok()) return texts.status();
  Texts whole;
  for (const auto& [name, spec] : *texts) whole[name] = spec;
  // The file's text reads as a client's does: a window needs its unit.
  std::vector<Policy> policies;
  for (const auto& [name, spec] : whole) {
    absl::StatusOr<Policy> p = ParsePolicy(name, std::string_view(spec));
    if (!p.ok()) {
      return absl::InvalidArgumentError("policy '" + name +
                                        "': " + std::string(p.status().message()));
    }
    policies.push_back(*std::move(p));
  }
  if (absl::Status st = s.registry.ReplaceAllValidated(std::move(policies)); !st.ok()) return st;
  Publish(my_node);
  return absl::OkStatus();
}

absl::Status ModulePolicies::Set(Policy policy, const std::string& my_node) {
  if (absl::Status s = Global().registry.Set(std::move(policy)); !s.ok()) return s;
  Publish(my_node);
  return absl::OkStatus();
}

bool ModulePolicies::Delete(std::string_view name, const std::string& my_node) {
  if (!Global().registry.Delete(name)) return false;
  Publish(my_node);
  return true;
}

absl::Status ModulePolicies::SetUnversioned(Policy policy) {
  const std::string name = policy.name;
  const std::string spec = FormatPolicy(policy);
  if (absl::Status s = Global().registry.Set(std::move(policy)); !s.ok()) return s;
  if (Global().version.counter == 0) Global().runtime[name] = spec;
  Refresh();
  return absl::OkStatus();
}

bool ModulePolicies::DeleteUnversioned(std::string_view name) {
  auto it = Global().runtime.find(name);
  if (it != Global().runtime.end()) Global().runtime.erase(it);
  const bool deleted = Global().registry.Delete(name);
  Refresh();
  return deleted;
}

std::shared_ptr<const Policy> ModulePolicies::Get(std::string_view name) {
  return Global().registry.Get(name);
}

std::vector<std::shared_ptr<const Policy>> ModulePolicies::List() {
  return Global().registry.List();
}

const SetVersion& ModulePolicies::version() const { return Global().version; }
uint64_t ModulePolicies::digest() const { return Global().digest; }

bool ModulePolicies::Newer(const SetVersion& version, uint64_t digest) const {
  const State& s = Global();
  if (version.counter == 0) return false;  // an unversioned set never spreads
  if (s.version < version) return true;
  return s.version == version && digest > s.digest;  // cannot happen but converges if it does
}

void ModulePolicies::SeeCounter(uint64_t counter) {
  Global().seen = std::max(Global().seen, counter);
}

std::string ModulePolicies::Encode() const {
  const State& s = Global();
  std::string out;
  PutField(&out, kEncodedFormat);
  PutField(&out, std::to_string(s.version.counter));
  PutField(&out, s.version.node);
  PutField(&out, std::to_string(s.texts.size()));
  for (const auto& [name, spec] : s.texts) {
    PutField(&out, name);
    PutField(&out, spec);
  }
  return out;
}

absl::StatusOr<bool> ModulePolicies::Install(std::string_view encoded, bool force) {
  std::string_view format, counter, node, count;
  SetVersion version;
  uint64_t n = 0;
  if (!TakeField(&encoded, &format) || format != kEncodedFormat || !TakeField(&encoded, &counter) ||
      !ToUint(counter, &version.counter) || !TakeField(&encoded, &node) ||
      !TakeField(&encoded, &count) || !ToUint(count, &n)) {
    return Corrupt();
  }
  version.node = std::string(node);
  Texts texts;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view name, spec;
    if (!TakeField(&encoded, &name) || !TakeField(&encoded, &spec)) return Corrupt();
    texts[std::string(name)] = std::string(spec);
  }
  if (!encoded.empty() || texts.size() != n) return Corrupt();
  if (!force && !Newer(version, DigestOf(texts))) return false;
  if (absl::Status s = InstallTexts(std::move(texts), version); !s.ok()) return s;
  return true;
}

void ModulePolicies::AuxSave(RedisModuleIO* rdb) {
  const State& s = Global();
  auto put = [&](std::string_view a, std::string_view b) {
    RedisModule_SaveStringBuffer(rdb, a.data(), a.size());
    RedisModule_SaveStringBuffer(rdb, b.data(), b.size());
  };
  if (s.version.counter == 0) {
    RedisModule_SaveUnsigned(rdb, s.runtime.size());
    for (const auto& [name, spec] : s.runtime) put(name, spec);
    return;
  }
  RedisModule_SaveUnsigned(rdb, s.texts.size() + 1);
  put(kVersionEntry, std::to_string(s.version.counter) + " " + s.version.node);
  for (const auto& [name, spec] : s.texts) put(name, spec);
}

int ModulePolicies::AuxLoad(RedisModuleIO* rdb) {
  const uint64_t count = RedisModule_LoadUnsigned(rdb);
  if (RedisModule_IsIOError(rdb)) return REDISMODULE_ERR;
  std::vector<std::pair<std::string, std::string>> entries;
  for (uint64_t i = 0; i < count; ++i) {
    std::string fields[2];
    for (std::string& field : fields) {
      size_t len = 0;
      char* buf = RedisModule_LoadStringBuffer(rdb, &len);
      if (RedisModule_IsIOError(rdb) || buf == nullptr) {
        if (buf != nullptr) RedisModule_Free(buf);
        return REDISMODULE_ERR;
      }
      field.assign(buf, len);
      RedisModule_Free(buf);
    }
    entries.emplace_back(std::move(fields[0]), std::move(fields[1]));
  }
  State& s = Global();
  SetVersion version;
  const bool versioned = !entries.empty() && entries[0].first == kVersionEntry;
  if (versioned) {
    const std::string& v = entries[0].second;
    const size_t space = v.find(' ');
    if (space == std::string::npos ||
        !ToUint(std::string_view(v).substr(0, space), &version.counter)) {
      return REDISMODULE_ERR;
    }
    version.node = v.substr(space + 1);
    entries.erase(entries.begin());
  } else {
    // Unversioned: the RDB carries the whole runtime set (a full resync replaces ours).
    s.version = SetVersion{};
    for (const auto& [name, spec] : s.runtime) s.registry.Delete(name);
    s.runtime.clear();
  }
  Texts whole;
  for (const auto& [name, spec] : entries) {
    absl::StatusOr<Policy> policy =
        ParsePolicy(name, std::string_view(spec), BareDuration::kMilliseconds);
    if (!policy.ok()) {
      RedisModule_LogIOError(rdb, REDISMODULE_LOGLEVEL_WARNING,
                             "rl: skipping stored policy '%s': %s", name.c_str(),
                             std::string(policy.status().message()).c_str());
      continue;
    }
    if (versioned) {
      whole[name] = spec;
    } else {
      SetUnversioned(*std::move(policy)).IgnoreError();
    }
  }
  // A versioned set replaces the POLICIES file's (and whatever this node held).
  if (versioned && !InstallTexts(std::move(whole), version).ok()) return REDISMODULE_ERR;
  return REDISMODULE_OK;
}

void PoliciesAuxSave(RedisModuleIO* rdb, int when) {
  if (when == REDISMODULE_AUX_BEFORE_RDB) Policies().AuxSave(rdb);
}

int PoliciesAuxLoad(RedisModuleIO* rdb, int encver, int when) {
  if (encver < kAuxOldestVersion || encver > kAuxNewestVersion) return REDISMODULE_ERR;
  if (when != REDISMODULE_AUX_BEFORE_RDB) return REDISMODULE_OK;
  return Policies().AuxLoad(rdb);
}

}  // namespace rl::module

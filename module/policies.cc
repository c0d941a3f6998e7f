// rl.so's policies (see policies.h).
#include "policies.h"

#include <map>
#include <mutex>
#include <utility>

#include "rl/command/toml_file.h"
#include "rl/policy_registry.h"

namespace rl::module {
namespace {

// Aux data: a count, then (name, spec) string pairs. Redis tags it with the type's encoding
// version (state_type.cc), 1 or 2; the aux format is the same in both.
constexpr int kAuxOldestVersion = 1;
constexpr int kAuxNewestVersion = 2;

struct State {
  PolicyRegistry registry;
  // Runtime definitions by name (what the RDB carries), kept in name order for stable dumps.
  std::map<std::string, std::string, std::less<>> runtime;
};

State& Global() {
  static State* state = new State();
  return *state;
}

}  // namespace

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
  return absl::OkStatus();
}

absl::Status ModulePolicies::Set(Policy policy) {
  const std::string name = policy.name;
  const std::string spec = FormatPolicy(policy);
  if (absl::Status s = Global().registry.Set(std::move(policy)); !s.ok()) return s;
  Global().runtime[name] = spec;
  return absl::OkStatus();
}

bool ModulePolicies::Delete(std::string_view name) {
  auto it = Global().runtime.find(name);
  if (it != Global().runtime.end()) Global().runtime.erase(it);
  return Global().registry.Delete(name);
}

std::shared_ptr<const Policy> ModulePolicies::Get(std::string_view name) {
  return Global().registry.Get(name);
}

std::vector<std::shared_ptr<const Policy>> ModulePolicies::List() {
  return Global().registry.List();
}

void ModulePolicies::AuxSave(RedisModuleIO* rdb) {
  RedisModule_SaveUnsigned(rdb, Global().runtime.size());
  for (const auto& [name, spec] : Global().runtime) {
    RedisModule_SaveStringBuffer(rdb, name.data(), name.size());
    RedisModule_SaveStringBuffer(rdb, spec.data(), spec.size());
  }
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
  // The RDB carries the whole runtime set (a full resync replaces ours).
  for (const auto& [name, spec] : Global().runtime) Global().registry.Delete(name);
  Global().runtime.clear();
  for (const auto& [name, spec] : entries) {
    // Stored text keeps the meaning it had when it was saved (a bare number was milliseconds).
    absl::StatusOr<Policy> policy =
        ParsePolicy(name, std::string_view(spec), BareDuration::kMilliseconds);
    if (!policy.ok()) {
      RedisModule_LogIOError(rdb, REDISMODULE_LOGLEVEL_WARNING,
                             "rl: skipping stored policy '%s': %s", name.c_str(),
                             std::string(policy.status().message()).c_str());
      continue;
    }
    Set(*std::move(policy)).IgnoreError();
  }
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

// rl.so's named policies: those of a POLICIES file given at load (the same [policies] table as
// rl-server's rl.toml) plus those defined with RL.POLICY SET. Runtime definitions replicate as
// sent (they are deterministic), ride in the RDB as aux data and so survive restarts and reach
// replicas; they are applied after the file's, so a runtime SET of a file's name wins.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "redis_module_api.h"
#include "rl/limit.h"

namespace rl::module {

// The command layer's Registry (rl/command/commands.h) over the module's policies.
class ModulePolicies {
 public:
  // Reads `path`'s [policies] table; all or nothing. Names read this way are "file" policies.
  absl::Status LoadFile(const std::string& path);

  absl::Status Set(Policy policy);
  bool Delete(std::string_view name);
  std::shared_ptr<const Policy> Get(std::string_view name);
  std::vector<std::shared_ptr<const Policy>> List();

  // RDB aux data: the runtime definitions (name, spec) in order.
  void AuxSave(RedisModuleIO* rdb);
  int AuxLoad(RedisModuleIO* rdb);
};

ModulePolicies& Policies();

// The type's aux_save / aux_load callbacks (before the keyspace).
void PoliciesAuxSave(RedisModuleIO* rdb, int when);
int PoliciesAuxLoad(RedisModuleIO* rdb, int encver, int when);

}  // namespace rl::module

// rl.so's commands (rl_module.cc): the handler each RL.* row of the shared table runs, and the
// counters INFO rl shows. registration.cc registers them with Redis at load.
#pragma once

#include <cstdint>

#include "redis_module_api.h"
#include "rl/command/docs.h"

namespace rl::module {

// Counters for INFO rl (module commands run on the main thread; relaxed is plenty).
struct Counters {
  uint64_t checks = 0;
  uint64_t allowed = 0;
  uint64_t denied = 0;
  uint64_t shadow_denied = 0;
  uint64_t writes = 0;
  uint64_t refunds = 0;
  uint64_t charges = 0;
  uint64_t leases_acquired = 0;
  uint64_t leases_released = 0;
};
const Counters& ModuleCounters();

// The handler of a row; null for a container (RL.POLICY), whose subcommands Redis dispatches.
RedisModuleCmdFunc HandlerFor(command::CommandId id);

}  // namespace rl::module

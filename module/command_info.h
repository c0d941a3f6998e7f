// COMMAND INFO / COMMAND DOCS for rl.so's commands, from the command layer's rows (the same rows
// rl-server's COMMAND DOCS come from): summary, arity, key spec and argument docs.
#pragma once

#include "redis_module_api.h"
#include "rl/command/docs.h"

namespace rl::module {

// Calls RedisModule_SetCommandInfo for `command` from `doc`. The structures it builds live for
// the life of the process (the server keeps pointers into them). False if the server refused.
bool SetCommandInfo(RedisModuleCommand* command, const command::CommandDoc& doc);

}  // namespace rl::module

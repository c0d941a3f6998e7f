// rl-server's command rows, gathered from every family; see command_families.h.
#include "command_families.h"

#include "debug_commands.h"
#include "persistence_commands.h"

namespace rl::server {

std::vector<CommandSpec> ServerCommandRows() {
  std::vector<CommandSpec> rows;
  AddConnectionCommands(&rows);
  AddServerCommands(&rows);
  AddTransactionCommands(&rows);
  AddRlCommands(&rows);
  AddPersistenceCommands(&rows);
  AddDebugCommands(&rows);
  return rows;
}

}  // namespace rl::server

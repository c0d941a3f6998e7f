// The persistence commands (SAVE, BGSAVE, LASTSAVE) and INFO's persistence section.
#pragma once

#include <string>
#include <vector>

namespace rl::server {

struct CommandSpec;
struct ServerState;

// INFO's "# Persistence" section (without the trailing blank line).
std::string PersistenceInfo(const ServerState& state);

// SAVE, BGSAVE, LASTSAVE.
void AddPersistenceCommands(std::vector<CommandSpec>* rows);

}  // namespace rl::server

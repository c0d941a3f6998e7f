// The command families of rl-server and the rows of its command table: each family registers
// its rows from its own file (connection_commands.cc, server_commands.cc, rl_commands.cc,
// persistence_commands.cc, debug_commands.cc); the table itself (command_table.h) knows none of
// them.
#pragma once

#include <string_view>
#include <vector>

#include "command_table.h"

namespace rl::server {

// The Redis version HELLO and INFO claim, for clients that check it.
inline constexpr std::string_view kRedisCompatVersion = "7.0.0";

// PING, ECHO, HELLO, AUTH, SELECT, CLIENT, QUIT, RESET.
void AddConnectionCommands(std::vector<CommandSpec>* rows);
// COMMAND, INFO, CONFIG, TIME, DBSIZE.
void AddServerCommands(std::vector<CommandSpec>* rows);
// MULTI, EXEC, DISCARD, WATCH, UNWATCH (transaction.cc).
void AddTransactionCommands(std::vector<CommandSpec>* rows);
// RL.* and CL.THROTTLE, from the command layer's shared docs.
void AddRlCommands(std::vector<CommandSpec>* rows);

// Every family's rows: what rl-server's CommandTable is built from.
std::vector<CommandSpec> ServerCommandRows();

}  // namespace rl::server

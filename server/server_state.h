// What every connection shares: settings, the engine, the policies, the command table and the
// counters. Created once by Server and outlives every connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client_registry.h"
#include "command_clock.h"
#include "command_families.h"
#include "command_table.h"
#include "config.h"
#include "debug_commands.h"
#include "front_end.h"
#include "policies.h"
#include "reload.h"
#include "rl/clock.h"
#include "rl/limiter.h"
#include "stats.h"
#include "transaction.h"

namespace rl::server {

class Snapshotter;

struct ServerState {
  ServerConfig config;
  // The config as the flags and the file gave it, before start adapted it (maxclients lowered to
  // the open-file limit): what a reload compares the file with.
  ServerConfig configured;
  ReloadTracker reloads;  // the last SIGHUP's outcome
  // The only time source of the server (the limiter, uptimes, idle timeouts, CLIENT ages, TIME,
  // snapshot stamps): tests give a ManualClock. Not owned, unless it is debug_clock.
  rl::Clock* clock = rl::SteadyClock::Default();
  // Set only when enable-debug-command is on: `clock` then points to it (InstallDebugClock).
  std::unique_ptr<DebugClock> debug_clock;
  // The limiter's clock when `clock` is the steady clock: `clock` without a second clock read per
  // check (command_clock.h). Null otherwise, and the limiter reads `clock`.
  std::unique_ptr<CommandClock> command_clock;
  // Runs every I/O thread's idle sweep soon, on its own thread (DEBUG SWEEP); set by Server.
  std::function<void()> sweep_idle;
  std::unique_ptr<rl::Limiter> limiter;
  PolicyStore policies;
  CommandTable commands{ServerCommandRows()};
  ClientRegistry clients;  // every connection's session, for CLIENT LIST
  TransactionGate gate;    // one slot per I/O thread (Server::Start)
  WatchRegistry watches;   // WATCHed keys, and when keys become fresh
  GlobalStats global;
  std::vector<std::unique_ptr<WorkerStats>> worker_stats;  // one per I/O thread
  std::atomic<uint64_t> next_client_id{1};
  int port = 0;                        // the port actually bound
  int64_t start_steady_ms = 0;         // clock->NowMs() at start
  std::string run_id;                  // 40 hex chars, as Redis
  Snapshotter* snapshotter = nullptr;  // owned by Server; null until Start
  int metrics_port = 0;                // the Prometheus port actually bound; 0 = off
  // Started front ends beside RESP (front_end.h), in AddFrontEnd order; set by Server::Start.
  std::vector<std::unique_ptr<FrontEnd>> front_ends;
};

// Constant-time comparison of a password guess (time depends only on the guess's length).
bool PasswordMatches(std::string_view guess, std::string_view secret);

}  // namespace rl::server

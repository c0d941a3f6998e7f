// DEBUG's subcommands and the clock they move; see debug_commands.h.
#include "debug_commands.h"

#include <fmt/core.h>

#include "command_table.h"
#include "server_state.h"

namespace rl::server {

bool DebugClock::Advance(int64_t ms) {
  if (ms < 0) return false;
  int64_t offset = offset_ms_.load(std::memory_order_relaxed);
  do {
    if (ms > kMaxOffsetMs - offset) return false;
  } while (!offset_ms_.compare_exchange_weak(offset, offset + ms, std::memory_order_relaxed));
  return true;
}

bool DebugAllowed(const ServerConfig& config, bool peer_is_local) {
  switch (config.enable_debug_command) {
    case DebugCommandMode::kYes:
      return true;
    case DebugCommandMode::kLocal:
      return peer_is_local;
    case DebugCommandMode::kNo:
      break;
  }
  return false;
}

void InstallDebugClock(ServerState* state) {
  if (state->config.enable_debug_command == DebugCommandMode::kNo) return;
  state->debug_clock = std::make_unique<DebugClock>(state->clock);
  state->clock = state->debug_clock.get();
}

namespace {

void ClockAdvance(CommandContext& ctx) {
  DebugClock* clock = ctx.state.debug_clock.get();
  if (clock == nullptr) return ctx.w.Error("ERR the server's clock is not a debug clock");
  int64_t ms = 0;
  if (!ParseInt64(ctx.args[2], &ms)) {
    return ctx.w.Error("ERR value is not an integer or out of range");
  }
  if (ms < 0) return ctx.w.Error("ERR the clock only moves forward: milliseconds must be >= 0");
  if (!clock->Advance(ms)) {
    return ctx.w.Error(fmt::format("ERR the clock may be advanced by at most {} ms in all",
                                   DebugClock::kMaxOffsetMs));
  }
  // The caller is active now, at the new time: its own jump must not make it the idle client
  // the next sweep closes.
  ctx.session.last_active_ms.store(ctx.state.clock->NowMs(), std::memory_order_relaxed);
  ctx.w.SimpleString("OK");
}

void Sweep(CommandContext& ctx) {
  if (!ctx.state.sweep_idle) return ctx.w.Error("ERR no I/O threads to sweep");
  ctx.state.sweep_idle();
  ctx.w.SimpleString("OK");
}

}  // namespace

void AddDebugCommands(std::vector<CommandSpec>* rows) {
  constexpr std::string_view g = "server";
  CommandSpec debug = Row(g, "debug", -2, kCmdAdmin | kCmdProtected | kCmdLoading | kCmdStale,
                          nullptr, "A container for debugging commands.", "1.0.0");
  debug.complexity = "Depends on subcommand.";
  debug.subcommands.push_back(
      Row(g, "debug|clock-advance", 3, kCmdAdmin, ClockAdvance,
          "Moves the server's monotonic clock forward by milliseconds (rate limits, idle timeouts "
          "and snapshot expiries see the jump; wall-clock stamps do not). For tests only.",
          "1.0.0", {Arg("milliseconds", "integer")}));
  debug.subcommands.push_back(Row(g, "debug|sweep", 2, kCmdAdmin, Sweep,
                                  "Queues the idle-client sweep (--timeout) on every I/O thread "
                                  "now instead of at its next tick. For tests only.",
                                  "1.0.0"));
  rows->push_back(std::move(debug));
}

}  // namespace rl::server

// DEBUG, for tests only (Redis 7's enable-debug-command gates it; off by default): DEBUG
// CLOCK-ADVANCE moves the server's clock forward and DEBUG SWEEP runs the idle-client sweep now,
// so process-level tests of time (idle timeouts, state that refills before a restart) move time
// instead of sleeping through it.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "config.h"
#include "rl/clock.h"

namespace rl::server {

struct CommandSpec;
struct ServerState;

// The server's clock while DEBUG is enabled: another clock plus an offset that only grows, so it
// never goes backwards. Only the monotonic time jumps; WallMs() stays the base's, so snapshot
// stamps stay true wall times and a jump before a save makes the saved state older by the jump
// (as if that time had passed before the save), never newer than it is. Thread-safe.
class DebugClock final : public rl::Clock {
 public:
  explicit DebugClock(const rl::Clock* base) : base_(base) {}
  int64_t NowMs() const override {
    return base_->NowMs() + offset_ms_.load(std::memory_order_relaxed);
  }
  int64_t WallMs() const override { return base_->WallMs(); }
  // Moves NowMs() forward by `ms`. False, and nothing moved, when `ms` is negative or the total
  // offset would pass kMaxOffsetMs.
  bool Advance(int64_t ms);
  int64_t offset_ms() const { return offset_ms_.load(std::memory_order_relaxed); }

  // Ten years in all, the longest window (rl::kMaxWindowMs): any state has expired by then, and
  // the engine's times stay far from overflow.
  static constexpr int64_t kMaxOffsetMs = int64_t{10} * 365 * 24 * 3600 * 1000;

 private:
  const rl::Clock* base_;
  std::atomic<int64_t> offset_ms_{0};
};

// Whether a client may run DEBUG under `config`, given whether its peer is on this machine.
bool DebugAllowed(const ServerConfig& config, bool peer_is_local);

// When `state->config` enables DEBUG: wraps `state->clock` (the steady clock, or a test's manual
// clock) in a DebugClock owned by the state. Call before anything reads the clock.
void InstallDebugClock(ServerState* state);

// DEBUG and its subcommands (CLOCK-ADVANCE, SWEEP; HELP is generated).
void AddDebugCommands(std::vector<CommandSpec>* rows);

}  // namespace rl::server

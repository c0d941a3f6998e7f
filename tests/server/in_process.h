// An rl-server with no sockets and no threads, for handler tests: commands run through the real
// command table (Resolve, then the row's handler, as a connection runs them) into a resp::Writer,
// on a limiter driven by a ManualClock, so a test moves time with Advance instead of sleeping
// (Dragonfly's Run({...}) shape). What needs a process (sockets, signals, threads, files) stays
// in the process-level tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "resp_client.h"
#include "rl/clock.h"
#include "rl/limiter.h"
#include "server_state.h"

namespace rl::test {

class InProcessServer {
 public:
  explicit InProcessServer(server::ServerConfig config = {}) {
    state_.config = std::move(config);
    state_.clock = &clock_;
    server::InstallDebugClock(&state_);  // DEBUG CLOCK-ADVANCE then moves an offset over clock_
    rl::LimiterOptions options;
    options.clock = state_.clock;
    options.max_keys = state_.config.max_keys;
    options.max_memory_bytes = state_.config.max_memory;
    options.overflow = state_.config.overflow;
    state_.limiter = std::make_unique<rl::Limiter>(options);
    EXPECT_TRUE(state_.policies.LoadFromConfig(state_.config.policies).ok());
    state_.worker_stats.push_back(std::make_unique<server::WorkerStats>());
    state_.start_steady_ms = state_.clock->NowMs();
    session_.id = state_.next_client_id.fetch_add(1);
    session_.authenticated = state_.config.requirepass.empty();
    session_.debug_allowed = server::DebugAllowed(state_.config, /*peer_is_local=*/true);
    session_.created_ms = state_.clock->NowMs();
    state_.clients.Add(&session_);
  }
  ~InProcessServer() { state_.clients.Remove(&session_); }

  // Runs one command as the connection would and returns its reply.
  Reply Run(const std::vector<std::string>& command) {
    std::vector<std::string_view> args(command.begin(), command.end());
    std::string out;
    resp::Writer w(&out, session_.protocol);
    server::WorkerStats& stats = *state_.worker_stats[0];
    stats.RecordCommand();
    if (const server::CommandSpec* spec = state_.commands.Resolve(args, session_, w)) {
      server::CommandContext ctx{args, w, session_, state_, stats};
      spec->handler(ctx);
    }
    std::string_view in = out;
    Reply r = ParseReply(&in);
    EXPECT_TRUE(in.empty()) << "one command, one reply: " << out;
    return r;
  }

  rl::ManualClock& clock() { return clock_; }
  server::ServerState& state() { return state_; }

 private:
  rl::ManualClock clock_;
  server::ServerState state_;
  server::ClientSession session_;
};

}  // namespace rl::test

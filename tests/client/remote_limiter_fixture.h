// The fixture of the rl::RemoteLimiter tests that run against the real rl-server: it starts the
// server on a free loopback port (and restarts it on the same one), connects limiters on a
// ManualClock (so the reconnect back-off passes without sleeping), and speaks raw RESP to the
// server for what other clients would send. Shared by remote_limiter_test.cc and
// remote_limiter_features_test.cc (one binary: one fixture class).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "resp_client.h"
#include "rl/clock.h"
#include "rl/limit.h"
#include "rl/remote_limiter.h"
#include "server_process.h"
#include "subprocess.h"

namespace rl::remote_test {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Scheduling delay allowed on top of a timeout on a loaded shared machine (148 ms was seen at a
// load average of 10 on 2 cores); still far below a TCP connect timeout or a hung call.
inline constexpr int64_t kSlackMs = 250;

inline std::string ServerPath() {
  // RL_SERVER in the environment points the test at another build of the server.
  const char* env = std::getenv("RL_SERVER");
  return env != nullptr ? env : RL_SERVER_PATH;
}

inline Policy MakePolicy(const std::string& name, const std::string& spec) {
  absl::StatusOr<Policy> policy = ParsePolicy(name, std::string_view(spec));
  EXPECT_TRUE(policy.ok()) << policy.status();
  return *policy;
}

inline int64_t ElapsedMs(steady_clock::time_point since) {
  return std::chrono::duration_cast<milliseconds>(steady_clock::now() - since).count();
}

class RemoteLimiterTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(StartServer()); }

  // The first start binds any free port (--port 0; the server names it on its readiness line),
  // so no other test can take the port between choosing and binding it. A restart binds the same
  // port again, as the limiters under test know only that one.
  bool StartServer(const std::vector<std::string>& extra = {}) {
    server_.Kill();
    std::vector<std::string> flags{"--port", std::to_string(port_), "--bind", "127.0.0.1"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    rl::test::ServerOptions options;
    options.quiet = false;
    const int bound = rl::test::StartRlServer(server_, ServerPath(), flags, options);
    if (bound <= 0 || (port_ != 0 && bound != port_)) return false;
    port_ = bound;
    return true;
  }

  std::unique_ptr<RemoteLimiter> Connect(
      milliseconds timeout = milliseconds(2000), size_t connections = 2, std::string password = "",
      RemoteLimiterOptions::PolicyMode mode = RemoteLimiterOptions::PolicyMode::kInline) {
    RemoteLimiterOptions options;
    options.password = std::move(password);
    options.policy_mode = mode;
    options.clock = &clock_;
    options.port = static_cast<uint16_t>(port_);
    options.timeout = timeout;
    options.connections = connections;
    options.reconnect_backoff = milliseconds(kBackoffMs);
    options.fallback.instances = fallback_instances_;
    options.on_failure = [this](const Policy&, const absl::Status&) { ++failures_reported_; };
    absl::StatusOr<std::unique_ptr<RemoteLimiter>> limiter = RemoteLimiter::Create(options);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }

  // Polls until `limiter` gets an answer from the server again (after a restart / SIGCONT). Each
  // try first moves the manual clock past the reconnect back-off; the sleep between tries waits
  // for the server process, which only real time moves.
  bool WaitForRecovery(RemoteLimiter& limiter, milliseconds within) {
    const auto deadline = steady_clock::now() + within;
    while (steady_clock::now() < deadline) {
      clock_.Advance(kBackoffMs);
      if (limiter.Ping().ok()) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }

  // A raw RESP connection, for what another client (PHP, redis-cli) would send.
  rl::test::Reply Raw(const std::vector<std::string>& args) {
    rl::test::RespClient client(port_);
    EXPECT_TRUE(client.connected());
    return client.Call(args);
  }

  static constexpr int64_t kBackoffMs = 50;
  int64_t fallback_instances_ = 0;  // RemoteLimiterOptions::fallback.instances for Connect
  ManualClock clock_;
  int port_ = 0;
  rl_test::Subprocess server_;
  std::atomic<int> failures_reported_{0};
};

}  // namespace rl::remote_test

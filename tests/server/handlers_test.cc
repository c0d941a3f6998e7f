// Handler tests in-process (in_process.h): commands run through the real command table on a
// ManualClock, so what depends on time passing (retry-after, CL.THROTTLE recovery, lease
// expiry) is tested by moving the clock, never by sleeping. The same commands over sockets and
// under concurrency are the process-level tests' (rl_commands_test.cc, features_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "in_process.h"

namespace rl::test {
namespace {

class SeedRecoveryTest : public ::testing::TestWithParam<const char*> {};

// Limit 5: five allowed, then denials with a positive retry-after; another key is unaffected;
// once the longest retry-after has passed the next call passes (moved from the process-level
// seed scenario, which slept for it).
TEST_P(SeedRecoveryTest, PassesAfterRetryAfter) {
  InProcessServer s;
  const std::string algorithm = GetParam();
  const std::vector<std::string> cmd = {"RL.CHECK", "seed", algorithm, "5", "1s"};
  int allowed = 0;
  int64_t max_retry = 0;
  for (int i = 0; i < 8; ++i) {
    std::vector<int64_t> v = s.Run(cmd).Ints();
    ASSERT_EQ(v.size(), 5u);
    if (v[0] == 1) {
      ++allowed;
    } else {
      EXPECT_GT(v[3], 0) << algorithm << ": a denial carries a positive retry-after";
      max_retry = std::max(max_retry, v[3]);
    }
  }
  EXPECT_EQ(allowed, 5) << algorithm;
  EXPECT_EQ(s.Run({"RL.CHECK", "other", algorithm, "5", "1s"}).Ints()[0], 1);
  s.clock().Advance(max_retry - 1);
  EXPECT_EQ(s.Run(cmd).Ints()[0], 0) << algorithm << ": still denied just before";
  s.clock().Advance(1);
  EXPECT_EQ(s.Run(cmd).Ints()[0], 1) << algorithm << ": passes after retry-after";
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, SeedRecoveryTest,
                         ::testing::Values("TOKEN_BUCKET", "GCRA", "SLIDING_LOG", "SLIDING_WINDOW",
                                           "FIXED_WINDOW", "LEAKY_BUCKET", "ALIGNED_WINDOW"));

// redis-cell's end-to-end test (max_burst 0, one per 2 s): limited, then allowed after
// retry_after (moved from rl_commands_test, which slept two seconds).
TEST(HandlersTest, ClThrottleAllowsAgainAfterRetryAfter) {
  InProcessServer s;
  const std::vector<std::string> cmd = {"CL.THROTTLE", "e2e", "0", "1", "2", "1"};
  EXPECT_EQ(s.Run(cmd).Ints(), (std::vector<int64_t>{0, 1, 0, -1, 2}));
  std::vector<int64_t> limited = s.Run(cmd).Ints();
  EXPECT_EQ(limited, (std::vector<int64_t>{1, 1, 0, 2, 2}));
  s.clock().Advance(limited[3] * 1000);
  EXPECT_EQ(s.Run(cmd).Ints(), (std::vector<int64_t>{0, 1, 0, -1, 2}));
}

// Leases of holders that never release end after their ttl (moved from features_test, which
// slept past it).
TEST(HandlersTest, AbandonedLeasesEndAfterTheirTtl) {
  InProcessServer s;
  const std::vector<std::string> acquire = {"RL.ACQUIRE", "abandoned", "CONCURRENCY",
                                            "2",          "LEASE",     "300ms"};
  ASSERT_EQ(s.Run(acquire).elements[0].integer, 1);
  ASSERT_EQ(s.Run(acquire).elements[0].integer, 1);
  EXPECT_EQ(s.Run(acquire).elements[0].integer, 0);
  s.clock().Advance(299);
  EXPECT_EQ(s.Run(acquire).elements[0].integer, 0) << "the leases still hold";
  s.clock().Advance(2);
  EXPECT_EQ(s.Run(acquire).elements[0].integer, 1) << "the holders died; their leases ended";
}

// The fixture runs what a connection runs: the table's errors, arity and subcommands included.
TEST(HandlersTest, RunsThroughTheCommandTable) {
  InProcessServer s;
  EXPECT_EQ(s.Run({"PING"}).str, "PONG");
  EXPECT_EQ(s.Run({"NOPE", "x"}).str, "ERR unknown command 'NOPE', with args beginning with: 'x' ");
  EXPECT_EQ(s.Run({"RL.CHECK", "k"}).str, "ERR wrong number of arguments for 'rl.check' command");
  EXPECT_EQ(s.Run({"RL.POLICY", "SET", "p", "GCRA", "1", "1m"}).str, "OK");
  EXPECT_EQ(s.Run({"RL.POLICY", "GET", "p"}).str, "GCRA 1 1m");
  EXPECT_EQ(s.Run({"CLIENT", "NOPE"}).str, "ERR unknown subcommand 'NOPE'. Try CLIENT HELP.");
  EXPECT_EQ(s.Run({"DBSIZE"}).integer, 0);
  s.Run({"RL.CHECK", "k", "POLICY", "p"});
  EXPECT_EQ(s.Run({"DBSIZE"}).integer, 1);
  EXPECT_EQ(s.Run({"HELLO", "3"}).type, '%');
  EXPECT_EQ(s.Run({"RL.CHECK", "k", "POLICY", "p"}).type, '%') << "RESP3 after HELLO 3";
  // Time for the server is the injected clock's: INFO's uptime moves with it.
  s.clock().Advance(5000);
  EXPECT_NE(s.Run({"INFO", "server"}).str.find("uptime_in_seconds:5\r\n"), std::string::npos);
}

// DEBUG (enable-debug-command): what the process-level tests use instead of sleeping.
constexpr std::string_view kDebugRefused =
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you "
    "can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.";

server::ServerConfig DebugOn(server::DebugCommandMode mode = server::DebugCommandMode::kYes) {
  server::ServerConfig config;
  config.enable_debug_command = mode;
  return config;
}

// Off by default: refused with Redis's text (after arity, before authentication, as Redis), and
// COMMAND shows no trace of it; on, COMMAND lists it.
TEST(DebugCommandTest, RefusedUnlessEnabledAndHiddenFromCommand) {
  InProcessServer off;
  EXPECT_EQ(off.Run({"DEBUG", "CLOCK-ADVANCE", "1"}).str, kDebugRefused);
  EXPECT_EQ(off.Run({"debug", "sweep"}).str, kDebugRefused);
  EXPECT_EQ(off.Run({"DEBUG"}).str, "ERR wrong number of arguments for 'debug' command");
  EXPECT_TRUE(off.Run({"COMMAND", "INFO", "debug"}).elements.at(0).is_null());
  EXPECT_TRUE(off.Run({"COMMAND", "DOCS", "debug"}).elements.empty());
  const Reply names = off.Run({"COMMAND", "LIST"});
  for (const Reply& name : names.elements) EXPECT_NE(name.str, "debug");
  server::ServerConfig locked;
  locked.requirepass = "pw";
  InProcessServer unauthenticated(locked);
  EXPECT_EQ(unauthenticated.Run({"DEBUG", "SWEEP"}).str, kDebugRefused);

  InProcessServer on(DebugOn(server::DebugCommandMode::kLocal));  // in-process counts as local
  EXPECT_EQ(on.Run({"COMMAND", "COUNT"}).integer, off.Run({"COMMAND", "COUNT"}).integer + 1);
  EXPECT_EQ(on.Run({"COMMAND", "INFO", "debug"}).elements.at(0).elements.at(0).str, "debug");
  EXPECT_EQ(on.Run({"COMMAND", "DOCS", "debug"}).elements.size(), 2u);
  EXPECT_EQ(on.Run({"DEBUG", "CLOCK-ADVANCE", "0"}).str, "OK");
  EXPECT_EQ(on.Run({"DEBUG", "NOPE"}).str, "ERR unknown subcommand 'NOPE'. Try DEBUG HELP.");
  Reply help = on.Run({"DEBUG", "HELP"});
  ASSERT_GE(help.elements.size(), 3u);
  EXPECT_EQ(help.elements[1].str, "CLOCK-ADVANCE <milliseconds>");
}

// DEBUG CLOCK-ADVANCE moves the clock every part of the server reads (the limiter, uptime), only
// forward, and within bounds; the wall clock does not move.
TEST(DebugCommandTest, ClockAdvanceMovesTheServersClockForwardOnly) {
  InProcessServer s(DebugOn());
  const std::vector<std::string> check = {"RL.CHECK", "hourly", "GCRA", "1", "1h"};
  EXPECT_EQ(s.Run(check).Ints()[0], 1);
  EXPECT_EQ(s.Run(check).Ints()[0], 0) << "denied for an hour";
  const int64_t now = s.state().clock->NowMs();
  const int64_t wall = s.state().clock->WallMs();
  EXPECT_EQ(s.Run({"DEBUG", "CLOCK-ADVANCE", "3600000"}).str, "OK");
  EXPECT_EQ(s.state().clock->NowMs(), now + 3'600'000);
  EXPECT_EQ(s.state().clock->WallMs(), wall) << "snapshot stamps stay true wall times";
  EXPECT_EQ(s.Run(check).Ints()[0], 1) << "the limiter saw the hour pass";
  EXPECT_NE(s.Run({"INFO", "server"}).str.find("uptime_in_seconds:3600\r\n"), std::string::npos);
  s.clock().Advance(5);  // the test's own clock still drives the server under the offset
  EXPECT_EQ(s.state().clock->NowMs(), now + 3'600'005);

  const int64_t max = server::DebugClock::kMaxOffsetMs;
  const std::vector<std::string> bad_args = {
      "-1", "abc", "1.5", "", " 1", "+1", "99999999999999999999", std::to_string(max)};
  for (const std::string& bad : bad_args) {
    EXPECT_TRUE(s.Run({"DEBUG", "CLOCK-ADVANCE", bad}).is_error()) << "'" << bad << "'";
  }
  EXPECT_EQ(s.Run({"DEBUG", "CLOCK-ADVANCE", "-1"}).str,
            "ERR the clock only moves forward: milliseconds must be >= 0");
  EXPECT_EQ(s.Run({"DEBUG", "CLOCK-ADVANCE", "x"}).str,
            "ERR value is not an integer or out of range");
  EXPECT_EQ(s.state().clock->NowMs(), now + 3'600'005) << "refused advances move nothing";
  EXPECT_EQ(s.Run({"DEBUG", "CLOCK-ADVANCE", std::to_string(max - 3'600'000)}).str, "OK");
  EXPECT_TRUE(s.Run({"DEBUG", "CLOCK-ADVANCE", "1"}).is_error()) << "ten years in all";
  EXPECT_EQ(s.Run({"DEBUG", "CLOCK-ADVANCE", "0"}).str, "OK");
  EXPECT_EQ(s.state().clock->NowMs(), now + 5 + max);
}

// DEBUG SWEEP runs the sweep hook the server installs (every I/O thread's idle sweep).
TEST(DebugCommandTest, SweepRunsTheServersHook) {
  InProcessServer s(DebugOn());
  EXPECT_EQ(s.Run({"DEBUG", "SWEEP"}).str, "ERR no I/O threads to sweep");
  int sweeps = 0;
  s.state().sweep_idle = [&sweeps] { ++sweeps; };
  EXPECT_EQ(s.Run({"DEBUG", "SWEEP"}).str, "OK");
  EXPECT_EQ(sweeps, 1);
}

// CONFIG GET reports the debug gate as Redis 7 does ("no", "yes" or "local"), so a client can
// tell whether DEBUG CLOCK-ADVANCE will be refused before it sends one.
TEST(DebugCommandTest, ConfigGetReportsTheGate) {
  const auto gate = [](server::ServerConfig config) {
    InProcessServer s(std::move(config));
    Reply r = s.Run({"CONFIG", "GET", "enable-debug-command"});
    return r.elements.size() == 2 ? r.elements[0].str + "=" + r.elements[1].str : "?" + r.str;
  };
  EXPECT_EQ(gate({}), "enable-debug-command=no");
  EXPECT_EQ(gate(DebugOn()), "enable-debug-command=yes");
  EXPECT_EQ(gate(DebugOn(server::DebugCommandMode::kLocal)), "enable-debug-command=local");
}

}  // namespace
}  // namespace rl::test

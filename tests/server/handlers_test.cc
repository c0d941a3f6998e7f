// Handler tests in-process (in_process.h): commands run through the real command table on a
// ManualClock, so what depends on time passing (retry-after, CL.THROTTLE recovery, lease
// expiry) is tested by moving the clock, never by sleeping. The same commands over sockets and
// under concurrency are the process-level tests' (rl_commands_test.cc, features_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
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
                                           "FIXED_WINDOW", "LEAKY_BUCKET"));

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

}  // namespace
}  // namespace rl::test

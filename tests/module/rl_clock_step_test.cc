// rl.so on a clock that is behind the one that wrote its state (a VM restored from a snapshot, a
// service started before time sync): a restart from an RDB saved a day ahead, and RESTORE of a
// DUMP taken a day ahead, must leave no key waiting longer than its own limit, charges, block or
// lease; so must an AOF written a day ahead. A replica keeps its primary's times as they are. The
// clock ahead is redis-server under an LD_PRELOAD shim that shifts its wall clock
// (tests/support/wall_shift.cc). A forward step while running makes Redis expire keys early,
// which rl.so cannot prevent: it counts and logs the step.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

using Cmd = std::vector<std::string>;
constexpr int64_t kDayMs = int64_t{24} * 3600 * 1000;

// Starts `server` with its wall clock `shift_ms` ahead (the child inherits the variables).
::testing::AssertionResult StartShifted(RedisServer& server, int64_t shift_ms) {
  setenv("LD_PRELOAD", RL_WALL_SHIFT_PATH, 1);
  setenv("RL_TEST_WALL_SHIFT_MS", std::to_string(shift_ms).c_str(), 1);
  ::testing::AssertionResult started = server.Start();
  unsetenv("LD_PRELOAD");
  unsetenv("RL_TEST_WALL_SHIFT_MS");
  if (!started) return started;
  const int64_t ahead_s = TimeMs(server.Call({"TIME"})) / 1000 - std::time(nullptr);
  if (ahead_s < shift_ms / 1000 - 60) {
    return ::testing::AssertionFailure() << "the wall-clock shim is not active";
  }
  return ::testing::AssertionSuccess();
}

// A key per kind of stored time, each at its limit: the check that is denied now, and the most
// it may ever wait for.
struct Limited {
  Cmd check;
  int64_t most_ms;
};
const Limited kLimited[] = {
    {{"RL.CHECK", "tb", "TOKEN_BUCKET", "2", "1m"}, 60000},
    {{"RL.CHECK", "gcra", "GCRA", "2", "1m"}, 60000},
    {{"RL.CHECK", "lb", "LEAKY_BUCKET", "2", "1m"}, 60000},
    {{"RL.CHECK", "log", "SLIDING_LOG", "2", "1m"}, 60000},
    // The previous window's weight may keep a sliding window denied into the next one.
    {{"RL.CHECK", "sw", "SLIDING_WINDOW", "2", "1m"}, 2 * 60000},
    {{"RL.CHECK", "fw", "FIXED_WINDOW", "2", "1m"}, 60000},
    {{"RL.CHECK", "aw", "ALIGNED_WINDOW", "2", "1m"}, 60000},
    {{"RL.CHECK", "blk", "SLIDING_LOG", "1", "1m", "BLOCK", "5m"}, 5 * 60000},
    {{"RL.ACQUIRE", "lease", "CONCURRENCY", "1", "LEASE", "1m"}, 60000},
};
// Charged into debt: ten against two a minute waits about five minutes.
const Cmd kDebtCharge = {"RL.CHARGE", "debt", "TOKEN_BUCKET", "2", "1m", "COST", "10"};
const Cmd kDebtCheck = {"RL.CHECK", "debt", "TOKEN_BUCKET", "2", "1m"};
constexpr int64_t kDebtMostMs = 5 * 60000;

void Exhaust(RedisServer& server) {
  for (const Limited& l : kLimited) {
    std::vector<int64_t> d;
    for (int i = 0; i < 10; ++i) {
      d = DecisionOf(server.Call(l.check));
      if (d.size() == 5 && d[0] == 0) break;
    }
    ASSERT_EQ(d.size(), 5u) << l.check[1];
    ASSERT_EQ(d[0], 0) << l.check[1] << " never denied";
  }
  ASSERT_EQ(DecisionOf(server.Call(kDebtCharge)).size(), 5u);  // into debt
  const std::vector<int64_t> d = DecisionOf(server.Call(kDebtCheck));
  ASSERT_EQ(d.at(0), 0);
  ASSERT_GT(d.at(3), 60000) << "debt is minutes of waiting";
}

// Every key still denied (nothing was forgotten), none for longer than its own limit explains.
void ExpectBounded(RedisServer& server, const std::string& prefix, const std::string& when) {
  auto expect = [&](Cmd cmd, int64_t most) {
    cmd[1] = prefix + cmd[1];
    const Reply r = server.Call(cmd);
    const std::vector<int64_t> d = DecisionOf(r);
    ASSERT_EQ(d.size(), 5u) << when << " " << cmd[1] << ": " << Show(r);
    EXPECT_EQ(d[0], 0) << when << " " << cmd[1] << ": the state must still hold";
    EXPECT_GT(d[3], 0) << when << " " << cmd[1];
    EXPECT_LE(d[3], most) << when << " " << cmd[1] << " waits longer than its own limit";
    std::printf("%s %s: retry_after_ms %lld\n", when.c_str(), cmd[1].c_str(),
                static_cast<long long>(d[3]));
  };
  for (const Limited& l : kLimited) expect(l.check, l.most_ms);
  expect(kDebtCheck, kDebtMostMs);
}

class RlClockStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  }
};

TEST_F(RlClockStepTest, RestartFromAnRdbSavedADayAheadWaitsNoLongerThanItsLimits) {
  RedisServer server(RlOptions());
  ASSERT_TRUE(StartShifted(server, kDayMs));
  Exhaust(server);
  ASSERT_TRUE(server.Stop(RedisServer::Shutdown::kSave));
  ASSERT_TRUE(server.Start());  // the true clock: a day behind the file
  ExpectBounded(server, "", "restart");
  // And through DEBUG RELOAD on this clock: the file it writes now carries this node's times.
  ASSERT_EQ(server.Call({"DEBUG", "RELOAD"}).str, "OK");
  ExpectBounded(server, "", "DEBUG RELOAD");
}

// The AOF written a day ahead, replayed on the true clock: its RL.SETSTATE commands carry their
// writer's time, both those a check appended and those an AOF rewrite without the RDB preamble
// wrote.
TEST_F(RlClockStepTest, AofReplayedADayBehindWaitsNoLongerThanItsLimits) {
  for (const bool rewrite : {false, true}) {
    const std::string when = rewrite ? "AOF rewritten without preamble" : "AOF";
    RedisServer server(RlOptions().With("appendonly yes").With("appendfsync always"));
    ASSERT_TRUE(StartShifted(server, kDayMs));
    Exhaust(server);
    if (rewrite) {
      ASSERT_EQ(server.Call({"CONFIG", "SET", "aof-use-rdb-preamble", "no"}).str, "OK");
      ASSERT_EQ(server.Call({"BGREWRITEAOF"}).type, '+');
      ASSERT_TRUE(WaitUntil(
          [&] {
            return server.InfoField("persistence", "aof_rewrite_in_progress") == "0" &&
                   server.InfoField("persistence", "aof_rewrite_scheduled") == "0";
          },
          std::chrono::seconds(30)));
      ASSERT_EQ(server.InfoField("persistence", "aof_last_bgrewrite_status"), "ok");
    }
    server.Kill9();  // no RDB: the AOF alone
    ASSERT_TRUE(server.Start());
    ExpectBounded(server, "", when);
  }
}

// RL.SETSTATE's writer time, as an AOF carries it: a GCRA 2 1m state at its limit on a clock a
// day ahead loads a day earlier; without the time it is taken as it is; a bad time is refused.
TEST_F(RlClockStepTest, SetStateWithAWriterTimeAheadMovesTheState) {
  RedisServer server(RlOptions());
  ASSERT_TRUE(server.Start());
  const int64_t ahead_ms = TimeMs(server.Call({"TIME"})) + kDayMs;
  EncodedEntry gcra;
  gcra.algorithm = 1;  // GCRA
  gcra.window_ms = 60000;
  gcra.expiry_ms = ahead_ms + 60000;
  gcra.words = {ahead_ms + 60000, 0};  // the theoretical arrival time: two a minute, both taken
  const std::string state = EncodeState({gcra});
  const Cmd peek = {"RL.PEEK", "k", "GCRA", "2", "1m"};
  ASSERT_EQ(server.Call({"RL.SETSTATE", "k", state, std::to_string(ahead_ms)}).str, "OK");
  std::vector<int64_t> d = DecisionOf(server.Call(peek));
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0], 0);
  EXPECT_GT(d[3], 0);
  EXPECT_LE(d[3], 60000) << "the writer's day ahead was not taken off";
  ASSERT_EQ(server.Call({"RL.SETSTATE", "k", state}).str, "OK");
  EXPECT_GT(DecisionOf(server.Call(peek)).at(3), kDayMs) << "without a writer time, as stored";
  EXPECT_EQ(server.Call({"RL.SETSTATE", "k", state, "soon"}).str, "ERR invalid writer time");
  EXPECT_EQ(server.Call({"RL.SETSTATE", "k", state, "1", "2"}).str,
            "ERR wrong number of arguments for 'rl.setstate' command");
}

TEST_F(RlClockStepTest, RestoreOfADumpTakenADayAheadWaitsNoLongerThanItsLimits) {
  RedisServer ahead(RlOptions());
  RedisServer server(RlOptions());
  ASSERT_TRUE(StartShifted(ahead, kDayMs));
  ASSERT_TRUE(server.Start());
  Exhaust(ahead);
  std::vector<std::string> keys = {"debt"};
  for (const Limited& l : kLimited) keys.push_back(l.check[1]);
  for (const std::string& key : keys) {
    const std::string payload = ahead.Call({"DUMP", key}).str;
    ASSERT_FALSE(payload.empty()) << key;
    ASSERT_EQ(server.Call({"RESTORE", "r:" + key, "0", payload}).str, "OK") << key;
  }
  ExpectBounded(server, "r:", "RESTORE");
}

TEST_F(RlClockStepTest, AReplicaKeepsItsPrimarysTimes) {
  RedisServer primary(RlOptions());
  RedisServer replica(RlOptions());
  ASSERT_TRUE(StartShifted(primary, kDayMs));
  ASSERT_TRUE(replica.Start());
  Exhaust(primary);
  ASSERT_TRUE(StartReplication(primary, replica));  // a full resync: the primary's RDB
  for (const std::string key : {"tb", "lb", "blk", "lease", "debt"}) {
    EXPECT_EQ(replica.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str,
              primary.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str)
        << key << ": the replica moved its primary's times";
  }
}

// A running server's wall clock steps two hours forward: Redis expires the key of a SLIDING_LOG
// 5 1h at its limit at once (its TTL is under an hour), which rl.so cannot veto (5 more allowed:
// the limitation, shown), and rl.so counts the step in INFO rl and logs it.
TEST_F(RlClockStepTest, AForwardStepWhileRunningIsCountedAndLogged) {
  TempFile shift_file{std::string(8, '\0')};
  const auto set_shift = [&](int64_t ms) {
    const int fd = ::open(shift_file.path().c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, &ms, sizeof(ms), 0), static_cast<ssize_t>(sizeof(ms)));
    ::close(fd);
  };
  RedisServer server(RlOptions());
  setenv("LD_PRELOAD", RL_WALL_SHIFT_PATH, 1);
  setenv("RL_TEST_WALL_SHIFT_FILE", shift_file.path().c_str(), 1);
  ::testing::AssertionResult started = server.Start();
  unsetenv("LD_PRELOAD");
  unsetenv("RL_TEST_WALL_SHIFT_FILE");
  ASSERT_TRUE(started);
  const Cmd check = {"RL.CHECK", "s", "SLIDING_LOG", "5", "1h"};
  for (int i = 0; i < 6; ++i) ASSERT_EQ(DecisionOf(server.Call(check)).at(0), i < 5 ? 1 : 0) << i;
  EXPECT_EQ(RlStat(server, "wall_clock_steps"), 0);

  const int64_t before_ms = TimeMs(server.Call({"TIME"}));
  constexpr int64_t kStepMs = int64_t{2} * 3600 * 1000;
  set_shift(kStepMs);
  ASSERT_GE(TimeMs(server.Call({"TIME"})) - before_ms, kStepMs) << "the shim did not step";
  int allowed = 0;
  for (int i = 0; i < 6; ++i) allowed += static_cast<int>(DecisionOf(server.Call(check)).at(0));
  std::printf("allowed after a +2 h wall-clock step: %d of 6 (SLIDING_LOG 5 1h at its limit)\n",
              allowed);
  EXPECT_EQ(allowed, 5) << "Redis's wall-clock expiry ended the key (if this changes, say so in "
                           "the README)";
  EXPECT_EQ(RlStat(server, "wall_clock_steps"), 1);
  EXPECT_GE(RlStat(server, "wall_clock_step_ms"), kStepMs - 1000);
  EXPECT_LE(RlStat(server, "wall_clock_step_ms"), kStepMs + 60000);
  EXPECT_NE(server.ReadLog().find("the wall clock stepped forward"), std::string::npos);
}

// ALIGNED_WINDOW takes the grid of the node's wall clock when rl.so loads and keeps it when that
// clock steps later (rl.so's node clock is anchored once, as rl-server's). The step stays inside
// the key's window: Redis expires keys by the wall clock, which a longer step would cross (the
// limitation AForwardStepWhileRunningIsCountedAndLogged shows).
TEST_F(RlClockStepTest, AlignedWindowsTakeTheWallClocksGridAtLoadAndKeepItThroughASteps) {
  constexpr int64_t kDayMs = int64_t{24} * 3'600'000;
  const auto off_the_day_grid = [](int64_t reset_after_ms, int64_t wall_ms) {
    int64_t d = (reset_after_ms - (kDayMs - wall_ms % kDayMs)) % kDayMs;
    if (d > kDayMs / 2) d -= kDayMs;
    if (d <= -kDayMs / 2) d += kDayMs;
    return d;
  };
  TempFile shift_file{std::string(8, '\0')};
  const auto set_shift = [&](int64_t ms) {
    const int fd = ::open(shift_file.path().c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, &ms, sizeof(ms), 0), static_cast<ssize_t>(sizeof(ms)));
    ::close(fd);
  };
  constexpr int64_t kAheadMs = 22 * 60'000 + 17'345;  // the node's days start 22 min early
  set_shift(kAheadMs);
  RedisServer server(RlOptions());
  setenv("LD_PRELOAD", RL_WALL_SHIFT_PATH, 1);
  setenv("RL_TEST_WALL_SHIFT_FILE", shift_file.path().c_str(), 1);
  ::testing::AssertionResult started = server.Start();
  unsetenv("LD_PRELOAD");
  unsetenv("RL_TEST_WALL_SHIFT_FILE");
  ASSERT_TRUE(started);
  const int64_t wall = TimeMs(server.Call({"TIME"}));
  ASSERT_GT(wall / 1000 - std::time(nullptr), kAheadMs / 1000 - 30) << "the shim is not active";
  const Cmd check = {"RL.CHECK", "a", "ALIGNED_WINDOW", "5", "1d"};
  const std::vector<int64_t> first = DecisionOf(server.Call(check));
  ASSERT_EQ(first.size(), 5u);
  EXPECT_EQ(first[2], 4);
  EXPECT_LE(std::llabs(off_the_day_grid(first[4], wall)), 5'000)
      << "reset_after_ms " << first[4] << " at node wall time " << wall;
  // Half of what is left of the day: a window that moved with the clock would end that much
  // sooner (hours, except in the last minutes of a UTC day).
  const int64_t step = first[4] / 2;
  set_shift(kAheadMs + step);
  ASSERT_GE(TimeMs(server.Call({"TIME"})) - wall, step) << "the shim did not step";
  const std::vector<int64_t> second = DecisionOf(server.Call(check));
  ASSERT_EQ(second.size(), 5u);
  EXPECT_EQ(second[2], 3) << "the same window counts on";
  EXPECT_LE(second[4], first[4]);
  EXPECT_GE(second[4], first[4] - 30'000);
}

}  // namespace
}  // namespace rl::test

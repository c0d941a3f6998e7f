// ALIGNED_WINDOW, the one window wall time decides, takes the grid of the server's wall clock at
// start and keeps it when that clock steps later (core/include/rl/clock.h).
//
// rl-server restarted on a snapshot written by a wall clock a day ahead (a VM restored from a
// snapshot, a service started before time sync, seen from the other side): no state may then wait
// longer than its own limit, charges, block or lease would. The writer runs under an LD_PRELOAD
// shim that shifts its wall clock (tests/support/wall_shift.cc); the reader runs on the true one.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "resp_client.h"
#include "server_process.h"
#include "test_files.h"

namespace rl::test {
namespace {

using Cmd = std::vector<std::string>;
constexpr int64_t kDayMs = int64_t{24} * 3600 * 1000;

// Starts rl-server with its wall clock shifted by `shift_ms` (the child inherits the variables).
std::unique_ptr<ServerProcess> StartShifted(const std::vector<std::string>& flags,
                                            int64_t shift_ms) {
  setenv("LD_PRELOAD", RL_WALL_SHIFT_PATH, 1);
  setenv("RL_TEST_WALL_SHIFT_MS", std::to_string(shift_ms).c_str(), 1);
  auto server = std::make_unique<ServerProcess>(flags);
  unsetenv("LD_PRELOAD");
  unsetenv("RL_TEST_WALL_SHIFT_MS");
  return server;
}

// The first denial of `cmd` within 10 calls: its reply.
Reply FirstDenial(RespClient& c, const Cmd& cmd) {
  Reply r;
  for (int n = 0; n < 10; ++n) {
    r = c.Call(cmd);
    if (r.elements.size() >= 5 && r.elements[0].integer == 0) break;
  }
  return r;
}

TEST(ClockStepTest, SnapshotFromAClockADayAheadWaitsNoLongerThanItsLimits) {
  const rl_test::TempDir temp("rl-clock-step-test");
  ASSERT_FALSE(temp.path().empty());
  const std::string dir = temp.path();
  const std::vector<std::string> flags = {"--snapshot", dir + "/state.rlsnap", "--threads", "2"};

  const Cmd bucket = {"RL.CHECK", "tb", "TOKEN_BUCKET", "2", "1m"};
  const Cmd leaky = {"RL.CHECK", "lb", "LEAKY_BUCKET", "2", "1m"};
  const Cmd blocked = {"RL.CHECK", "blk", "SLIDING_LOG", "1", "1m", "BLOCK", "5m"};
  const Cmd debt = {"RL.CHECK", "debt", "TOKEN_BUCKET", "2", "1m"};
  const Cmd lease = {"RL.ACQUIRE", "lease", "CONCURRENCY", "1", "LEASE", "1m"};
  int64_t debt_retry = 0;
  {
    std::unique_ptr<ServerProcess> ahead = StartShifted(flags, kDayMs);
    ASSERT_GT(ahead->port(), 0);
    RespClient c(ahead->port());
    // The shim works: the server's TIME is a day ahead of ours.
    const int64_t server_s = std::stoll(c.Call({"TIME"}).elements.at(0).str);
    ASSERT_GT(server_s - time(nullptr), kDayMs / 1000 - 60) << "the wall-clock shim is not active";
    ASSERT_EQ(FirstDenial(c, bucket).elements.at(0).integer, 0);
    ASSERT_EQ(FirstDenial(c, leaky).elements.at(0).integer, 0);
    ASSERT_EQ(FirstDenial(c, blocked).elements.at(0).integer, 0);
    ASSERT_EQ(
        c.Call({"RL.CHARGE", "debt", "TOKEN_BUCKET", "2", "1m", "COST", "10"}).elements.size(),
        5u);  // into debt
    const Reply d = c.Call(debt);
    ASSERT_EQ(d.elements.at(0).integer, 0);
    debt_retry = d.elements.at(3).integer;
    ASSERT_GT(debt_retry, 60000) << "ten charged against two a minute is minutes of debt";
    ASSERT_EQ(c.Call(lease).elements.at(0).integer, 1);
    ASSERT_EQ(ahead->Terminate(), 0);  // saves
  }
  ServerOptions logged;
  logged.quiet = false;
  logged.stderr_path = dir + "/log";
  ServerProcess server(flags, logged);
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  const auto expect_wait = [&](const Cmd& cmd, int64_t most, const char* what) {
    const Reply r = c.Call(cmd);
    ASSERT_GE(r.elements.size(), 5u) << what << ": " << r.str;
    EXPECT_EQ(r.elements[0].integer, 0) << what << ": the saved state must still hold";
    EXPECT_GT(r.elements[3].integer, 0) << what;
    EXPECT_LE(r.elements[3].integer, most) << what << ": waits longer than its own limit";
    std::printf("after the restart, %s: retry_after_ms %lld\n", what,
                static_cast<long long>(r.elements[3].integer));
  };
  expect_wait(bucket, 60000, "TOKEN_BUCKET 2 1m");
  expect_wait(leaky, 60000, "LEAKY_BUCKET 2 1m");
  expect_wait(blocked, 5 * 60000, "BLOCK 5m");
  expect_wait(debt, debt_retry, "debt charged before the restart");
  expect_wait(lease, 60000, "LEASE 1m");
  std::ifstream log_file(dir + "/log");
  const std::string log((std::istreambuf_iterator<char>(log_file)), {});
  EXPECT_NE(log.find("ahead of this wall clock"), std::string::npos) << log;
}

// The periodic save waits on the steady clock. Debian's abseil times its waits by a wall-clock
// deadline the kernel measures, so a process whose wall clock is a day ahead of the kernel's (the
// shim here; on a real machine, a step of the clock back while the thread waits) would have saved
// again only a day later, and a crash meanwhile lost everything since.
TEST(ClockStepTest, PeriodicSavesKeepTheirIntervalWhateverTheWallClock) {
  char tmpl[] = "/tmp/rl-clock-step-saves-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::unique_ptr<ServerProcess> server =
      StartShifted({"--snapshot", dir + "/state.rlsnap", "--snapshot-interval", "100ms"}, kDayMs);
  ASSERT_GT(server->port(), 0);
  RespClient c(server->port());
  int64_t saves = 0;
  // Up to 10 s for two saves 100 ms apart; each round changes a key so a save is due.
  for (int i = 0; i < 200 && saves < 2; ++i) {
    c.Call({"RL.CHECK", "k" + std::to_string(i), "TOKEN_BUCKET", "10", "1m"});
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string info = c.Call({"INFO", "persistence"}).str;
    const size_t at = info.find("snapshot_saves:");
    if (at != std::string::npos) saves = std::stoll(info.substr(at + 15));
  }
  EXPECT_GE(saves, 2) << "periodic saves stopped under a wall clock a day ahead of the kernel's";
  server.reset();
  std::filesystem::remove_all(dir);
}

constexpr int64_t kHourMs = 3'600'000;

// How far `reset_after_ms` is from the end of the wall clock's hour at `wall_ms`, folded into
// (-30 min, 30 min]: near 0 when the window is the clock's hour.
int64_t OffTheHourGrid(int64_t reset_after_ms, int64_t wall_ms) {
  int64_t d = (reset_after_ms - (kHourMs - wall_ms % kHourMs)) % kHourMs;
  if (d > kHourMs / 2) d -= kHourMs;
  if (d <= -kHourMs / 2) d += kHourMs;
  return d;
}

int64_t TimeMs(RespClient& c) {
  const Reply t = c.Call({"TIME"});
  return std::stoll(t.elements.at(0).str) * 1000 + std::stoll(t.elements.at(1).str) / 1000;
}

TEST(ClockStepTest, AlignedWindowsTakeTheWallClocksGridAtStartAndKeepItThroughASteps) {
  char path[] = "/tmp/rl-aligned-shift-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const auto set_shift = [&](int64_t ms) {
    ASSERT_EQ(::pwrite(fd, &ms, sizeof(ms), 0), static_cast<ssize_t>(sizeof(ms)));
  };
  // 22 min 17.345 s ahead: the server's hours start 22 min before ours do.
  constexpr int64_t kAheadMs = 22 * 60'000 + 17'345;
  set_shift(kAheadMs);
  setenv("LD_PRELOAD", RL_WALL_SHIFT_PATH, 1);
  setenv("RL_TEST_WALL_SHIFT_FILE", path, 1);
  auto server = std::make_unique<ServerProcess>(std::vector<std::string>{});
  unsetenv("LD_PRELOAD");
  unsetenv("RL_TEST_WALL_SHIFT_FILE");
  ASSERT_GT(server->port(), 0);
  RespClient c(server->port());
  const int64_t wall = TimeMs(c);
  ASSERT_GT(wall / 1000 - time(nullptr), kAheadMs / 1000 - 30)
      << "the wall-clock shim is not active";
  const Cmd check = {"RL.CHECK", "a", "ALIGNED_WINDOW", "5", "1h"};
  const Reply first = c.Call(check);
  ASSERT_EQ(first.elements.size(), 5u) << first.str;
  EXPECT_EQ(first.elements[2].integer, 4);
  // Calls a few ms apart on an idle machine; seconds at most on a loaded one, minutes never.
  EXPECT_LE(std::llabs(OffTheHourGrid(first.elements[4].integer, wall)), 5'000)
      << "reset_after_ms " << first.elements[4].integer << " at server wall time " << wall;

  // The wall clock steps 30 minutes forward: the window stays where it was.
  set_shift(kAheadMs + 30 * 60'000);
  ASSERT_GE(TimeMs(c) - wall, 30 * 60'000) << "the shim did not step";
  const Reply second = c.Call(check);
  ASSERT_EQ(second.elements.size(), 5u) << second.str;
  EXPECT_EQ(second.elements[2].integer, 3) << "the same window counts on";
  EXPECT_LE(second.elements[4].integer, first.elements[4].integer);
  EXPECT_GE(second.elements[4].integer, first.elements[4].integer - 30'000);
  server.reset();
  ::close(fd);
  ::unlink(path);
}

}  // namespace
}  // namespace rl::test

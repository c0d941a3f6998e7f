// CommandClock (server/command_clock.h): the limiter's `now` while a command runs is the time its
// I/O thread already read; anywhere else, and on any other thread, the base clock answers.
#include "command_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "rl/clock.h"

namespace rl::server {
namespace {

TEST(CommandClockTest, TheCommandsTimeWhileItRunsTheBaseClockElsewhere) {
  rl::ManualClock base(5'000, 1'700'000'000'000);
  CommandClock clock(&base);
  // A command's reading is steady_clock's, which SteadyClock anchors to Unix time.
  const int64_t shift = rl::SteadyClock::SteadyToNowMs();
  EXPECT_EQ(clock.NowMs(), 5'000);
  {
    CommandClock::Scope now(
        7'250'999'999);  // ns: 7250.999999 ms, whole milliseconds as SteadyClock
    EXPECT_EQ(clock.NowMs(), 7'250 + shift);
    base.Advance(100);  // the command's time stands while it runs
    EXPECT_EQ(clock.NowMs(), 7'250 + shift);
    int64_t other_thread = 0;
    std::thread([&] { other_thread = clock.NowMs(); }).join();
    EXPECT_EQ(other_thread, 5'100);
    {
      CommandClock::Scope nested(9'000'000'000);
      EXPECT_EQ(clock.NowMs(), 9'000 + shift);
    }
    EXPECT_EQ(clock.NowMs(), 7'250 + shift);
    EXPECT_EQ(clock.WallMs(), base.WallMs());  // wall time is never cached
  }
  EXPECT_EQ(clock.NowMs(), 5'100);
  {
    CommandClock::Scope none(0);  // no reading: the base clock stays in charge
    EXPECT_EQ(clock.NowMs(), 5'100);
  }
}

TEST(CommandClockTest, AgreesWithTheSteadyClock) {
  CommandClock clock(rl::SteadyClock::Default());
  const int64_t before = rl::SteadyClock::Default()->NowMs();
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count();
  const int64_t after = rl::SteadyClock::Default()->NowMs();
  CommandClock::Scope now(ns);
  EXPECT_GE(clock.NowMs(), before);
  EXPECT_LE(clock.NowMs(), after);
}

}  // namespace
}  // namespace rl::server

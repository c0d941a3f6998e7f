// The limiter's clock on rl-server: while a command runs on an I/O thread, `now` is the steady
// time that thread has just read for its command latency (the end of the previous command or the
// start of the batch: at most this command's parsing earlier), so a pipelined RL.CHECK does not
// read the clock a second time (a clock read is a visible share of a check's server CPU; PING
// pays only the latency one). Anywhere else (timers, sweeps, other threads) it reads its base
// clock. Only over rl::SteadyClock, whose time is the same std::chrono::steady_clock the latency
// histogram reads; a test's ManualClock or the DEBUG clock is used as it is (InstallCommandClock).
#pragma once

#include <cstdint>

#include "rl/clock.h"

namespace rl::server {

class CommandClock final : public rl::Clock {
 public:
  explicit CommandClock(const rl::Clock* base) : base_(base) {}

  int64_t NowMs() const override {
    const int64_t now = now_ms_;
    return now >= 0 ? now : base_->NowMs();
  }
  int64_t WallMs() const override { return base_->WallMs(); }

  // While alive, NowMs() on this thread answers `steady_ns` (std::chrono::steady_clock
  // nanoseconds since its epoch, as read by the thread) in whole milliseconds, as SteadyClock
  // would have at that instant. A value <= 0 (no reading) leaves the base clock in charge.
  class Scope {
   public:
    explicit Scope(int64_t steady_ns) : saved_(now_ms_) {
      if (steady_ns > 0) now_ms_ = steady_ns / 1'000'000 + rl::SteadyClock::SteadyToNowMs();
    }
    ~Scope() { now_ms_ = saved_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    int64_t saved_;
  };

 private:
  static thread_local int64_t now_ms_;  // -1: no command running on this thread
  const rl::Clock* base_;
};

}  // namespace rl::server

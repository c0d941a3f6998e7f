// Time sources. The engine reads one monotonic `now` per check from an injected Clock; wall-clock
// time is used only to print reset timestamps (X-RateLimit-Reset) and to carry snapshots across
// restarts, with one exception: ALIGNED_WINDOW puts its windows on the Unix clock's grid (a minute
// is the clock's minute). It reads `now` as Unix time, which SteadyClock's (and rl.so's) is: a
// monotonic clock anchored once to the wall clock, so a step of the wall clock later moves no
// window (windows keep the grid of the anchor until the process restarts) and never moves `now`
// back.
#pragma once

#include <atomic>
#include <cstdint>

namespace rl {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic milliseconds; never goes backwards. Its epoch is the clock's own; ALIGNED_WINDOW's
  // grid counts from it, so a clock whose windows should match the wall clock's counts from the
  // Unix epoch (SteadyClock does).
  virtual int64_t NowMs() const = 0;
  // Unix time in milliseconds (may jump); only for printing and snapshots.
  virtual int64_t WallMs() const = 0;
};

// std::chrono::steady_clock and system_clock. NowMs() is steady_clock anchored to Unix time: the
// system clock's reading at the anchor (the process's first use of any SteadyClock) plus the
// steady time elapsed since.
class SteadyClock final : public Clock {
 public:
  int64_t NowMs() const override;
  int64_t WallMs() const override;
  static SteadyClock* Default();
  // What NowMs() adds to steady_clock's milliseconds: for code that read steady_clock itself and
  // wants the same `now` (rl-server's command clock).
  static int64_t SteadyToNowMs();
};

// A clock that moves only when told to: for tests and simulations. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t now_ms = 0, int64_t wall_ms = 1'700'000'000'000)
      : now_ms_(now_ms), wall_offset_ms_(wall_ms - now_ms) {}
  int64_t NowMs() const override { return now_ms_.load(std::memory_order_relaxed); }
  int64_t WallMs() const override { return NowMs() + wall_offset_ms_; }
  void Advance(int64_t ms) { now_ms_.fetch_add(ms, std::memory_order_relaxed); }
  void Set(int64_t now_ms) { now_ms_.store(now_ms, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_ms_;
  int64_t wall_offset_ms_;
};

}  // namespace rl

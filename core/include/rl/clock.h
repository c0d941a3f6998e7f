// Time sources. The engine reads one monotonic `now` per check from an injected Clock; wall-clock
// time is used only to print reset timestamps (X-RateLimit-Reset) and to carry snapshots across
// restarts.
#pragma once

#include <atomic>
#include <cstdint>

namespace rl {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic milliseconds since an arbitrary epoch; never goes backwards.
  virtual int64_t NowMs() const = 0;
  // Unix time in milliseconds (may jump); only for printing and snapshots.
  virtual int64_t WallMs() const = 0;
};

// std::chrono::steady_clock and system_clock.
class SteadyClock final : public Clock {
 public:
  int64_t NowMs() const override;
  int64_t WallMs() const override;
  static SteadyClock* Default();
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

// Steady and wall clocks behind the Clock interface.
#include "rl/clock.h"

#include <chrono>

namespace rl {

namespace {

int64_t SteadyMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int64_t SteadyClock::SteadyToNowMs() {
  // Read once (thread-safe static): later wall-clock steps never move `now`.
  static const int64_t shift = SteadyClock().WallMs() - SteadyMs();
  return shift;
}

int64_t SteadyClock::NowMs() const { return SteadyMs() + SteadyToNowMs(); }

int64_t SteadyClock::WallMs() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

SteadyClock* SteadyClock::Default() {
  static SteadyClock clock;
  return &clock;
}

}  // namespace rl

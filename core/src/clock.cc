// Steady and wall clocks behind the Clock interface.
#include "rl/clock.h"

#include <chrono>

namespace rl {

int64_t SteadyClock::NowMs() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

int64_t SteadyClock::WallMs() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

SteadyClock* SteadyClock::Default() {
  static SteadyClock clock;
  return &clock;
}

}  // namespace rl

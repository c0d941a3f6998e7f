// The per-thread command time of CommandClock; see command_clock.h.
#include "command_clock.h"

namespace rl::server {

thread_local int64_t CommandClock::now_ms_ = -1;

}  // namespace rl::server

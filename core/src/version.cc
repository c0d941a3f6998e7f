// The version the library was built as (see rl/version.h).
#include "rl/version.h"

namespace rl {

std::string_view Version() { return RL_VERSION_STRING; }

}  // namespace rl

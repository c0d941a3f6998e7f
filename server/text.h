// Text at rl-server's boundaries: abseil's string_view (a distinct type in Debian's abseil, not an
// alias of std::string_view) turned into the standard one that fmt and our code take.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace rl::server {

inline std::string_view ToStd(absl::string_view s) { return std::string_view(s.data(), s.size()); }

}  // namespace rl::server

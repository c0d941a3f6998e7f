// HTTP header values from a decision, computed server-side so every client prints the same:
// X-RateLimit-Limit/-Remaining/-Reset (Unix seconds), Retry-After (seconds, rounded up, only when
// denied) and the IETF draft fields RateLimit-Policy ("name";q=100;w=60) and RateLimit
// ("name";r=42;t=17, t rounded up), several limits comma-separated.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rl/decision.h"

namespace rl {

struct HeaderField {
  std::string name;
  std::string value;
};

// `policy_name` names the draft fields' entries (a limit of a multi-limit policy gets the
// window appended, e.g. "api-1m"); `wall_now_ms` is Unix time in ms for X-RateLimit-Reset.
// A decision made by a failure mode (DecidedBy::kFailOpen / kFailClosed: no limit evaluated)
// gets no rate-limit fields: nothing when allowed, only Retry-After when denied.
std::vector<HeaderField> HeaderValues(const Decision& decision, std::string_view policy_name,
                                      int64_t wall_now_ms);

// The draft fields' name of decision.limits[index] (index < decision.count), as HeaderValues
// prints it: the policy name ("default" when empty), and for a multi-limit decision its window
// appended ("api-1m"), then its 1-based position when two limits share that window ("api-1m-2").
std::string HeaderEntryName(const Decision& decision, size_t index, std::string_view policy_name);

}  // namespace rl

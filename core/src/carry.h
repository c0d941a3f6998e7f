// How a policy's states follow it to a new window (Policy::carried_from), once for both stores
// (rl::Limiter and rl::KeyState): a state lives under its algorithm and window, so a policy whose
// window changed would otherwise find no state and hand every key a fresh allowance.
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/status/statusor.h"
#include "algorithms.h"
#include "rl/decision.h"
#include "rl/limit.h"

namespace rl::internal {

// For each (i, old limit) of policy.carried_from: the share of the old limit's allowance the key
// had used (what a cost-0 peek of it leaves), rounded up to the new limit's units, is charged to
// limit i, then the old state is removed. A key at its limit (or blocked, or in debt) is at the
// new limit's too; a fresh one is left alone. Charging first and removing after means that two
// concurrent first checks can count the old use twice but never zero times. `peek(limit)`,
// `charge(limit, amount)` and `reset(limit)` act on one limit of the policy's scope and key.
// Returns whether anything moved.
template <class Peek, class Charge, class Reset>
bool CarryOver(const Policy& policy, Peek peek, Charge charge, Reset reset) {
  bool moved = false;
  for (const auto& [index, from] : policy.carried_from) {
    if (index >= policy.limits.size()) continue;
    const Limit& to = policy.limits[index];
    absl::StatusOr<Decision> d = peek(from);
    if (!d.ok()) continue;
    const LimitResult& r = d->limits[0];
    const int64_t old_capacity = from.capacity();
    const int64_t used = old_capacity - std::clamp<int64_t>(r.remaining, 0, old_capacity);
    if (used <= 0 && r.allowed) continue;  // fresh (or nothing stored): nothing to carry
    const int64_t share =
        used <= 0 ? to.capacity()  // denied with room left: count it as full
                  : static_cast<int64_t>((int128{used} * to.capacity() + old_capacity - 1) /
                                         old_capacity);
    charge(to, std::min(share, to.capacity()));
    reset(from);
    moved = true;
  }
  return moved;
}

}  // namespace rl::internal

// The smallest program a service author writes against an installed rl: parse a policy from its
// spec, check it three times under a limit of 2, and print the header values. Exits non-zero when
// the engine answers anything else, so the install test also proves the library works.
#include <cstdio>

#include "rl/headers.h"
#include "rl/limit.h"
#include "rl/limiter.h"

int main() {
  absl::StatusOr<rl::Policy> policy = rl::ParsePolicy("consumer", "SLIDING_LOG 2 1m");
  if (!policy.ok()) {
    std::fprintf(stderr, "ParsePolicy: %s\n", policy.status().ToString().c_str());
    return 1;
  }
  rl::Limiter limiter;
  const bool expected[] = {true, true, false};
  for (bool want : expected) {
    absl::StatusOr<rl::Decision> decision = limiter.Check(*policy, "tenant-1");
    if (!decision.ok() || decision->allowed != want) {
      std::fprintf(stderr, "unexpected decision\n");
      return 1;
    }
    if (!decision->allowed) {
      for (const rl::HeaderField& field :
           rl::HeaderValues(*decision, policy->name, limiter.clock().WallMs())) {
        std::printf("%s: %s\n", field.name.c_str(), field.value.c_str());
      }
    }
  }
  std::printf("consumer ok\n");
  return 0;
}

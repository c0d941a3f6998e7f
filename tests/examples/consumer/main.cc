// The smallest program a service author writes against an installed rl: parse a policy from its
// spec, check it three times under a limit of 2, and print the header values; then create a
// RemoteLimiter (no server needed: it connects lazily) behind the shared interface. Exits
// non-zero when anything answers unexpectedly, so the install test also proves the libraries work.
#include <cstdio>

#include "rl/headers.h"
#include "rl/limit.h"
#include "rl/limiter.h"
#include "rl/rate_limiter.h"
#include "rl/remote_limiter.h"

int main() {
  absl::StatusOr<rl::Policy> policy = rl::ParsePolicy("consumer", "SLIDING_LOG 2 1m");
  if (!policy.ok()) {
    std::fprintf(stderr, "ParsePolicy: %s\n", policy.status().ToString().c_str());
    return 1;
  }
  rl::Limiter engine;
  rl::LocalRateLimiter limiter(&engine);
  const bool expected[] = {true, true, false};
  for (bool want : expected) {
    absl::StatusOr<rl::Decision> decision = limiter.Check(*policy, "tenant-1");
    if (!decision.ok() || decision->allowed != want) {
      std::fprintf(stderr, "unexpected decision\n");
      return 1;
    }
    if (!decision->allowed) {
      for (const rl::HeaderField& field :
           rl::HeaderValues(*decision, policy->name, limiter.WallNowMs())) {
        std::printf("%s: %s\n", field.name.c_str(), field.value.c_str());
      }
    }
  }
  absl::StatusOr<std::unique_ptr<rl::RemoteLimiter>> remote =
      rl::RemoteLimiter::Create(rl::RemoteLimiterOptions{});
  if (!remote.ok() || !(*remote)->FailureDecision(*policy).allowed) {
    std::fprintf(stderr, "RemoteLimiter\n");
    return 1;
  }
  std::printf("consumer ok\n");
  return 0;
}

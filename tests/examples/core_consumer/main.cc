// The in-process use of rl with nothing but rl::core: a policy parsed from its spec, checked
// through rl::LocalRateLimiter (the interface rl::RemoteLimiter shares) on a manual clock, and the
// header values of the denial. Exits non-zero when anything answers unexpectedly.
#include <cstdio>

#include "rl/clock.h"
#include "rl/headers.h"
#include "rl/limit.h"
#include "rl/limiter.h"
#include "rl/rate_limiter.h"
#include "rl/version.h"

int main() {
  // The installed header and the installed library agree on the version they were built as.
  if (rl::Version() != RL_VERSION_STRING || RL_VERSION_NUMBER < 300) {
    std::fprintf(stderr, "version mismatch: header %s, library %.*s\n", RL_VERSION_STRING,
                 static_cast<int>(rl::Version().size()), rl::Version().data());
    return 1;
  }
  absl::StatusOr<rl::Policy> policy = rl::ParsePolicy("core-consumer", "SLIDING_LOG 2 1m");
  if (!policy.ok()) {
    std::fprintf(stderr, "ParsePolicy: %s\n", policy.status().ToString().c_str());
    return 1;
  }
  rl::ManualClock clock;
  rl::LimiterOptions options;
  options.clock = &clock;
  options.sweep_interval_ms = 0;
  rl::Limiter engine(options);
  rl::LocalRateLimiter local(&engine);
  rl::RateLimiter& limiter = local;
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
  clock.Advance(60'000);  // the log's oldest entry has left the window
  absl::StatusOr<rl::Decision> later = limiter.Check(*policy, "tenant-1");
  if (!later.ok() || !later->allowed) {
    std::fprintf(stderr, "still denied a window later\n");
    return 1;
  }
  std::printf("core consumer ok\n");
  return 0;
}

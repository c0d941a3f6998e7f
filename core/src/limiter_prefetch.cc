// Limiter::Prefetch (see limiter.h): the table lines of a coming check, requested early. Kept apart
// from the check path so that it stays a hint: it reads the store's tables and writes nothing.
#include <algorithm>

#include "check_steps.h"
#include "limiter_impl.h"
#include "registry.h"
#include "rl/limiter.h"
#include "step.h"

namespace rl {

void Limiter::Prefetch(std::string_view scope, std::string_view key,
                       absl::Span<const Limit> limits) {
  const internal::sharded::KeyHasher hasher(scope, key, impl_->seed_);
  for (size_t i = 0, n = std::min<size_t>(limits.size(), 2); i < n; ++i) {
    const Limit& limit = limits[i];
    // An invalid limit has no table (its check fails first); CONCURRENCY keeps leases, keyed apart.
    if (!internal::RateLimitValid(limit)) continue;
    const uint64_t k = hasher.For(limit);
    internal::Shard& shard = impl_->shards_[impl_->ShardOf(k)];
    // absl's prefetch reads the table's pointers and capacity, which a thread inserting into the
    // shard may be replacing: under the lock. The lines themselves load after it is released.
    internal::ShardLock lock(shard.mu);
    switch (internal::ShapeOf(limit.algorithm)) {
      case internal::StateShape::kTwoWord:
        shard.two.prefetch(k);
        break;
      case internal::StateShape::kThreeWord:
        shard.three.prefetch(k);
        break;
      case internal::StateShape::kLog:
        shard.logs.prefetch(k);
        break;
      case internal::StateShape::kLeases:  // not a rate limit: skipped above
        break;
    }
  }
}

}  // namespace rl

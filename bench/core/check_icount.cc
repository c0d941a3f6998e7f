// Instructions per check for valgrind --tool=callgrind, which counts instructions independently
// of machine load: RunChecks does `iterations` token-bucket checks over `keys` 40-byte keys (the
// core_bench visiting order) and RunBare the bare absl::flat_hash_map find + update on the same
// keys, and RunBareLocked the same under a sharded mutex (the locked floor). icount.sh divides each
// function's inclusive instruction count by the iterations. A third
// argument of 2 checks two limits per call (the token bucket and a one-day fixed window) for the
// two-limit / one-limit ratio; a third argument of `log` checks a sliding log (1000 a second)
// instead of the token bucket. A fourth argument of `nohot` runs without the hot-key path.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "bench_keys.h"
#include "rl/limiter.h"

namespace {

using rl::bench::BareState;
using rl::bench::Index;
using rl::bench::MakeKeys;

__attribute__((noinline)) int64_t RunChecks(rl::Limiter& limiter, rl::ManualClock& clock,
                                            const std::vector<std::string>& keys,
                                            absl::Span<const rl::Limit> limits, size_t iterations) {
  int64_t allowed = 0;
  for (size_t i = 0; i < iterations; ++i) {
    absl::StatusOr<rl::Decision> d = limiter.Check("", keys[Index(i, keys.size())], limits);
    allowed += d->allowed;
    if ((i & 1023) == 1023) clock.Advance(1);
  }
  return allowed;
}

__attribute__((noinline)) int64_t RunBare(absl::flat_hash_map<std::string, BareState>& bare,
                                          const std::vector<std::string>& keys, size_t iterations) {
  int64_t sum = 0;
  for (size_t i = 0; i < iterations; ++i) {
    auto it = bare.find(keys[Index(i, keys.size())]);
    it->second.a += 1;
    it->second.b = static_cast<int64_t>(i);
    sum += it->second.a;
  }
  return sum;
}

// The locked floor (core_bench's BM_ShardLockedMap): the same find + update on 256 map shards,
// each under its own uncontended std::mutex, the hash computed once.
__attribute__((noinline)) int64_t RunBareLocked(rl::bench::LockedShard* shards,
                                                const std::vector<std::string>& keys,
                                                size_t iterations) {
  int64_t sum = 0;
  for (size_t i = 0; i < iterations; ++i) {
    sum += rl::bench::LockedFloorUpdate(shards, keys[Index(i, keys.size())], i).a;
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000;
  const size_t iterations = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 100000;
  const std::vector<std::string> keys = MakeKeys(n);
  rl::ManualClock clock(0);
  // A fourth argument `nohot` turns the lock-free hot-key path off (LimiterOptions::hot_keys),
  // to count what its checks cost a check that never takes it.
  rl::LimiterOptions options{.sweep_interval_ms = 0, .clock = &clock};
  options.hot_keys = !(argc > 4 && std::string(argv[4]) == "nohot");
  rl::Limiter limiter(options);
  const bool log = argc > 3 && std::string(argv[3]) == "log";
  const size_t limit_count = argc > 3 && std::strtoull(argv[3], nullptr, 10) == 2 ? 2 : 1;
  const rl::Limit limits[] = {
      {log ? rl::Algorithm::kSlidingLog : rl::Algorithm::kTokenBucket, 1000, 1000},
      {rl::Algorithm::kFixedWindow, 100000000, 86400000}};
  const absl::Span<const rl::Limit> checked(limits, limit_count);
  for (const std::string& k : keys) (void)limiter.Check("", k, checked);
  absl::flat_hash_map<std::string, BareState> bare;
  for (const std::string& k : keys) bare[k] = BareState{};
  const int64_t allowed = RunChecks(limiter, clock, keys, checked, iterations);
  const int64_t sum = RunBare(bare, keys, iterations);
  const auto shards = rl::bench::MakeLockedFloor(keys);
  const int64_t locked_sum = RunBareLocked(shards.get(), keys, iterations);
  std::printf("keys %zu iterations %zu limits %zu allowed %lld checksum %lld\n", n, iterations,
              limit_count, static_cast<long long>(allowed),
              static_cast<long long>(sum + locked_sum));
  return 0;
}

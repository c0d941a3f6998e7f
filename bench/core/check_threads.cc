// A fixed number of token-bucket checks from each of `threads` threads, on one hot key (keys = 1)
// or on `keys` distinct 40-byte keys per thread, for counting what a check costs beyond
// instructions with `perf stat` (cores.sh: futex system calls per check). The limit is large
// enough that nearly every check is allowed and writes its state back, the contended case.
// Usage: check_threads [threads] [keys] [checks per thread]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_keys.h"
#include "rl/limiter.h"

int main(int argc, char** argv) {
  const size_t threads = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2;
  const size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  const size_t checks = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 2'000'000;
  rl::Limiter limiter(rl::LimiterOptions{.sweep_interval_ms = 0});
  const rl::Limit limit{rl::Algorithm::kTokenBucket, 1'000'000'000, 1000};
  std::vector<std::vector<std::string>> keys(threads);
  for (size_t t = 0; t < threads; ++t) {
    // One shared key, or each thread its own set (as core_bench's distinct-key rows).
    keys[t] = rl::bench::MakeKeys(n == 1 ? 1 : n * (t + 1));
    if (n > 1) keys[t].erase(keys[t].begin(), keys[t].begin() + static_cast<ptrdiff_t>(n * t));
    for (const std::string& k : keys[t]) (void)limiter.Check("", k, {limit});
  }
  std::vector<int64_t> allowed(threads, 0);
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const std::vector<std::string>& mine = keys[t];
      int64_t a = 0;
      for (size_t i = 0; i < checks; ++i) {
        a += limiter.Check("", mine[rl::bench::Index(i, mine.size())], {limit})->allowed;
      }
      allowed[t] = a;
    });
  }
  int64_t total = 0;
  for (size_t t = 0; t < threads; ++t) {
    pool[t].join();
    total += allowed[t];
  }
  std::printf("threads %zu keys %zu checks %zu allowed %lld\n", threads, n, threads * checks,
              static_cast<long long>(total));
  return 0;
}

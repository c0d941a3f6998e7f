// A fixed number of token-bucket checks from each of `threads` threads, on one hot key (keys = 1)
// or on `keys` distinct 40-byte keys per thread, for counting what a check costs beyond
// instructions with `perf stat` (cores.sh: futex system calls per check). The limit is large
// enough that nearly every check is allowed and writes its state back, the contended case.
// A fourth argument picks the limit and path: `tb` (the default; an existing hot key takes the
// lock-free path), `gcra` a GCRA limit (the same), and `tb-locked` / `gcra-locked` the same with
// LimiterOptions::hot_keys off (every check under the shard lock). A mode with `denied` in it
// (`tb-denied`, `tb-denied-locked`, `gcra-denied`...) checks a limit of 1 per hour instead, used
// up by the setup, so every timed check is denied and writes nothing: a service-wide limit over
// its rate, the usual state of a hot key at millions of checks a second. Prints the checks per
// second of the timed part (the threads' checks, after the keys exist) and the process's CPU time
// (user + system) per check over it, which a busy machine's time slicing does not inflate as it
// does the wall time; the checks run in
// RunChecks, which callgrind can count (hotkey.sh).
// Usage: check_threads [threads] [keys] [checks per thread] [tb|gcra][-denied][-locked]
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_keys.h"
#include "rl/limiter.h"

__attribute__((noinline)) int64_t RunChecks(rl::Limiter& limiter, const rl::Limit& limit,
                                            const std::vector<std::string>& keys, size_t checks) {
  int64_t a = 0;
  for (size_t i = 0; i < checks; ++i) {
    a += limiter.Check("", keys[rl::bench::Index(i, keys.size())], {limit})->allowed;
  }
  return a;
}

int main(int argc, char** argv) {
  const size_t threads = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2;
  const size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  const size_t checks = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 2'000'000;
  const std::string mode = argc > 4 ? argv[4] : "tb";
  const bool locked = mode.size() > 7 && mode.compare(mode.size() - 7, 7, "-locked") == 0;
  rl::Limiter limiter(rl::LimiterOptions{.sweep_interval_ms = 0, .hot_keys = !locked});
  const bool denied = mode.find("denied") != std::string::npos;
  const rl::Limit limit{
      mode.rfind("tb", 0) == 0 ? rl::Algorithm::kTokenBucket : rl::Algorithm::kGcra,
      denied ? 1 : 1'000'000'000, denied ? 3'600'000 : 1000};
  std::vector<std::vector<std::string>> keys(threads);
  for (size_t t = 0; t < threads; ++t) {
    // One shared key, or each thread its own set (as core_bench's distinct-key rows).
    keys[t] = rl::bench::MakeKeys(n == 1 ? 1 : n * (t + 1));
    if (n > 1) keys[t].erase(keys[t].begin(), keys[t].begin() + static_cast<ptrdiff_t>(n * t));
    // Twice: the second check of an existing key is what binds it to its hot entry.
    for (int pass = 0; pass < 2; ++pass) {
      for (const std::string& k : keys[t]) (void)limiter.Check("", k, {limit});
    }
  }
  std::vector<int64_t> allowed(threads, 0);
  std::vector<std::thread> pool;
  std::atomic<size_t> ready{0};
  std::atomic<bool> go{false};
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ++ready;
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      allowed[t] = RunChecks(limiter, limit, keys[t], checks);
    });
  }
  while (ready.load() != threads) std::this_thread::yield();
  auto cpu_ns = [] {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e9 +
           (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e3;
  };
  const double cpu_start = cpu_ns();
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  int64_t total = 0;
  for (size_t t = 0; t < threads; ++t) {
    pool[t].join();
    total += allowed[t];
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu_per_check = (cpu_ns() - cpu_start) / static_cast<double>(threads * checks);
  std::printf("threads %zu keys %zu checks %zu allowed %lld cpu_ns %.1f per_s %.0f\n", threads, n,
              threads * checks, static_cast<long long>(total), cpu_per_check,
              static_cast<double>(threads * checks) / secs);
  return 0;
}

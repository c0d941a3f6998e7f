// Engine micro-benchmarks: the cost of one Limiter::Check per algorithm at 1 k, 100 k and 1 M keys
// with 1 and 2 threads (each thread on its own keys), next to a bare absl::flat_hash_map find +
// update on the same 40-byte keys in the same order; a two-limit check (TOKEN_BUCKET +
// FIXED_WINDOW); one hot key checked by 1 and 2 threads (TOKEN_BUCKET_HOT_KEY, one shard lock
// taken in turns) beside the bare map under a mutex; plus the memory held per key (token bucket
// and sliding window) and per logged request (sliding log). ratios.sh turns the output into ratios.
//
// The limiter runs on a ManualClock that thread 0 advances by 1 ms every 1024 checks, so the
// figures are the engine's cost; a SteadyClock variant shows what reading the real clock adds.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "bench_keys.h"
#include "rl/limiter.h"

namespace rl {
namespace {

// 40-byte keys, as in the memory target ("a token-bucket state <= 64 bytes including a 40-byte
// key"), shared with check_icount.
using bench::BareState;
using bench::CasState;
using bench::Index;
using bench::LockedShard;
using bench::MakeKeys;

// One fixture alive at a time (1 M-key limiters are big); built by the first thread that asks.
struct Fixture {
  std::string name;
  std::vector<std::string> keys;
  std::unique_ptr<ManualClock> clock;
  std::unique_ptr<Limiter> limiter;
  absl::flat_hash_map<std::string, BareState> bare;
};

absl::Mutex fixture_mu;
std::unique_ptr<Fixture> fixture ABSL_GUARDED_BY(fixture_mu);

Limit LimitFor(Algorithm a, bool hot) {
  // Generous enough that steady traffic stays mostly allowed: the common case. A hot key takes
  // ~1000 checks per ms, so it gets a limit that still allows (and writes back) nearly all.
  return hot ? Limit{a, 1'000'000'000, 1000} : Limit{a, 1000, 1000};
}

// Issue 15's two-limit check: a token bucket and a day quota on every key (two states, all or
// nothing), the in-process form of bench/run's two-window RL.CHECK.
constexpr int kTwoLimits = 100;
std::vector<Limit> LimitsFor(int algorithm, bool hot) {
  if (algorithm == kTwoLimits) {
    return {LimitFor(Algorithm::kTokenBucket, false),
            Limit{Algorithm::kFixedWindow, 1'000'000'000, 24 * 3600 * 1000}};
  }
  return {LimitFor(static_cast<Algorithm>(algorithm), hot)};
}

Fixture* GetFixture(const std::string& name, size_t n, int algorithm, bool steady, bool hot) {
  absl::MutexLock lock(&fixture_mu);
  if (fixture != nullptr && fixture->name == name) return fixture.get();
  fixture.reset();
  auto f = std::make_unique<Fixture>();
  f->name = name;
  f->keys = MakeKeys(n);
  if (algorithm < 0) {
    f->bare.reserve(0);
    for (const std::string& k : f->keys) f->bare[k] = BareState{};
  } else {
    f->clock = std::make_unique<ManualClock>(0);
    f->limiter = std::make_unique<Limiter>(
        LimiterOptions{.sweep_interval_ms = 0, .clock = steady ? nullptr : f->clock.get()});
    const std::vector<Limit> limits = LimitsFor(algorithm, hot);
    for (const std::string& k : f->keys) (void)f->limiter->Check("", k, limits);
  }
  fixture = std::move(f);
  return fixture.get();
}

// Runs `update(i)` once per iteration; thread t takes the key indices t, t + threads, ... so
// that the threads never share a key.
template <class Update>
void OnThreadsKeys(benchmark::State& state, Update&& update) {
  const size_t threads = state.threads();
  size_t i = state.thread_index();
  for (auto _ : state) {
    update(i);
    i += threads;
  }
  state.SetItemsProcessed(state.iterations());
}

// The bare map's update of the i-th key: a find and two plain writes.
void BareUpdate(Fixture* f, size_t n, size_t i) {
  auto it = f->bare.find(f->keys[Index(i, n)]);
  it->second.a += 1;
  it->second.b = static_cast<int64_t>(i);
  benchmark::DoNotOptimize(it->second);
}

void BM_BareMap(benchmark::State& state) {
  const size_t n = state.range(0);
  Fixture* f = GetFixture("bare/" + std::to_string(n), n, -1, false, false);
  OnThreadsKeys(state, [&](size_t i) { BareUpdate(f, n, i); });
}

// The hot key's reference: the cheapest correct shared update, the bare map's find + update under
// a std::mutex. With two threads its lock and entry move between the cores on every handover, as
// the limiter's do, so its 2-thread/1-thread ratio is what the machine allows for one hot key.
std::mutex bare_mu;
void BM_BareMapLocked(benchmark::State& state) {
  const size_t n = state.range(0);
  Fixture* f = GetFixture("bare/" + std::to_string(n), n, -1, false, false);
  OnThreadsKeys(state, [&](size_t i) {
    std::lock_guard<std::mutex> lock(bare_mu);
    BareUpdate(f, n, i);
  });
}

// Floors for a check of distinct keys: the bare map's find + update made safe for concurrent
// threads in the two cheapest ways, each thread on its own keys as in BM_Check. No check can cost
// less than the synchronized update it makes, so check / these is what is left to cut.
//  - BM_ShardLockedMap: the keys spread over 256 maps by their hash's top byte, each map under its
//    own std::mutex on its own cache line, taken uncontended (the limiter's shape: an atomic
//    read-modify-write to lock and another to unlock). The hash is computed once and reused by
//    the map's find (a transparent hasher), so the floor pays for the lock and nothing else.
//  - BM_CasMap: the bare map with the first word updated by one compare-and-swap (no lock; the
//    map is never resized while the threads run): the floor of a lock-free update.
// Named without "bare" so bench/run keeps BM_BareMap as every row's baseline.
//
// Floors holds both maps for one key count at a time (built by the first thread that asks).
struct Floors {
  std::vector<std::string> keys;
  std::unique_ptr<LockedShard[]> locked;
  absl::flat_hash_map<std::string, CasState> cas;
};
absl::Mutex floor_mu;
std::unique_ptr<Floors> floors ABSL_GUARDED_BY(floor_mu);

Floors* GetFloors(size_t n) {
  absl::MutexLock lock(&floor_mu);
  if (floors != nullptr && floors->keys.size() == n) return floors.get();
  floors.reset();
  auto f = std::make_unique<Floors>();
  f->keys = MakeKeys(n);
  f->locked = bench::MakeLockedFloor(f->keys);
  for (const std::string& k : f->keys) f->cas[k] = CasState{};
  floors = std::move(f);
  return floors.get();
}

void BM_ShardLockedMap(benchmark::State& state) {
  const size_t n = state.range(0);
  Floors* f = GetFloors(n);
  OnThreadsKeys(state, [&](size_t i) {
    benchmark::DoNotOptimize(bench::LockedFloorUpdate(f->locked.get(), f->keys[Index(i, n)], i));
  });
}

void BM_CasMap(benchmark::State& state) {
  const size_t n = state.range(0);
  Floors* f = GetFloors(n);
  OnThreadsKeys(state, [&](size_t i) {
    auto it = f->cas.find(f->keys[Index(i, n)]);
    int64_t a = it->second.a.load(std::memory_order_relaxed);
    while (!it->second.a.compare_exchange_weak(a, a + 1, std::memory_order_acq_rel,
                                               std::memory_order_relaxed)) {
    }
    benchmark::DoNotOptimize(it->second);
  });
}

void RunChecks(benchmark::State& state, const std::string& name, int algorithm, bool steady,
               bool hot) {
  const size_t n = state.range(0);
  Fixture* f =
      GetFixture(name + (steady ? "/steady/" : "/") + (hot ? "hot/" : "") + std::to_string(n), n,
                 algorithm, steady, hot);
  const std::vector<Limit> limits = LimitsFor(algorithm, hot);
  const size_t threads = state.threads();
  size_t i = state.thread_index();
  int64_t allowed = 0;
  for (auto _ : state) {
    absl::StatusOr<Decision> d = f->limiter->Check("", f->keys[Index(i, n)], limits);
    allowed += d->allowed;
    i += threads;
    if (state.thread_index() == 0 && (i & 1023) == 0) f->clock->Advance(1);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["allowed"] =
      benchmark::Counter(static_cast<double>(allowed) / std::max<int64_t>(1, state.iterations()));
}

void BM_Check(benchmark::State& state, Algorithm algorithm, bool steady, bool hot = false) {
  RunChecks(state, std::string(AlgorithmName(algorithm)), static_cast<int>(algorithm), steady, hot);
}

void BM_CheckTwoLimits(benchmark::State& state) {
  RunChecks(state, "two-limits", kTwoLimits, false, false);
}

void KeyArgs(benchmark::internal::Benchmark* b) {
  for (int64_t n : {1000, 100000, 1000000}) b->Arg(n);
  b->Threads(1)->Threads(2)->UseRealTime();
}

BENCHMARK(BM_BareMap)->Apply(KeyArgs);
BENCHMARK(BM_ShardLockedMap)->Apply(KeyArgs);
BENCHMARK(BM_CasMap)->Apply(KeyArgs);
BENCHMARK_CAPTURE(BM_Check, TOKEN_BUCKET, Algorithm::kTokenBucket, false)->Apply(KeyArgs);
BENCHMARK_CAPTURE(BM_Check, GCRA, Algorithm::kGcra, false)->Apply(KeyArgs);
BENCHMARK_CAPTURE(BM_Check, SLIDING_LOG, Algorithm::kSlidingLog, false)->Apply(KeyArgs);
BENCHMARK_CAPTURE(BM_Check, SLIDING_WINDOW, Algorithm::kSlidingWindow, false)->Apply(KeyArgs);
BENCHMARK_CAPTURE(BM_Check, FIXED_WINDOW, Algorithm::kFixedWindow, false)->Apply(KeyArgs);
BENCHMARK_CAPTURE(BM_Check, LEAKY_BUCKET, Algorithm::kLeakyBucket, false)->Apply(KeyArgs);
// Named like a BM_Check capture so ratios.sh and bench/run put it in the same table.
BENCHMARK(BM_CheckTwoLimits)->Name("BM_Check/TOKEN_BUCKET+FIXED_WINDOW")->Apply(KeyArgs);
BENCHMARK_CAPTURE(BM_Check, TOKEN_BUCKET_STEADY_CLOCK, Algorithm::kTokenBucket, true)
    ->Arg(100000)
    ->Threads(1)
    ->UseRealTime();
// One key (issue 15: two threads on it keep >= 0.5x of one thread's checks per second), beside
// the bare map under a mutex (two threads updating one entry without a lock would be a race).
BENCHMARK(BM_BareMapLocked)->Arg(1)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_Check, TOKEN_BUCKET_HOT_KEY, Algorithm::kTokenBucket, false, true)
    ->Arg(1)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

// Snapshot load: 125,000 keys x 8 limits (every algorithm, sliding logs included) = 1 M states,
// the mix of the server's 1 M-state load test, imported into a fresh limiter per iteration.
// Building and destroying the limiters is not timed.
void BM_ImportState(benchmark::State& state) {
  const size_t keys_n = state.range(0);
  {
    absl::MutexLock lock(&fixture_mu);
    fixture.reset();
  }
  const std::vector<Limit> limits = {
      {Algorithm::kTokenBucket, 10, 3600000}, {Algorithm::kGcra, 10, 3600000},
      {Algorithm::kSlidingLog, 10, 3600000},  {Algorithm::kSlidingWindow, 10, 3600000},
      {Algorithm::kFixedWindow, 10, 3600000}, {Algorithm::kLeakyBucket, 10, 3600000},
      {Algorithm::kGcra, 10, 7200000},        {Algorithm::kFixedWindow, 10, 7200000}};
  ManualClock clock(0);
  std::string snapshot;
  {
    Limiter source(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
    // Not MakeKeys: its 40-byte truncation folds some of its keys together.
    for (size_t i = 0; i < keys_n; ++i) (void)source.Check("", "user:" + std::to_string(i), limits);
    (void)source.ExportState(&snapshot);
  }
  size_t loaded = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto limiter =
        std::make_unique<Limiter>(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
    state.ResumeTiming();
    if (!limiter->ImportState(snapshot).ok()) state.SkipWithError("import failed");
    state.PauseTiming();
    loaded = limiter->KeyCount();
    limiter.reset();
    state.ResumeTiming();
  }
  state.counters["states"] = static_cast<double>(loaded);
  state.counters["snapshot_mb"] = static_cast<double>(snapshot.size()) / 1e6;
}
BENCHMARK(BM_ImportState)->Arg(125000)->Unit(benchmark::kMillisecond)->Iterations(5);

int64_t RssBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

// Memory per key: the limiter's own accounting (table slots at their capacity, with control
// bytes) and the resident-set growth, for token-bucket (second argument 0) or sliding-window (1)
// states on 40-byte keys. Key counts between the powers of two too: absl's tables double, so a
// figure at one count alone can flatter or slander the store. For RSS figures untouched by an
// earlier run's freed memory, run one count per process (--benchmark_filter=BM_MemoryPerKey/N/A/);
// any other count may be given the same way after adding it below.
void BM_MemoryPerKey(benchmark::State& state) {
  const size_t n = state.range(0);
  const Algorithm algorithm =
      state.range(1) == 0 ? Algorithm::kTokenBucket : Algorithm::kSlidingWindow;
  {
    absl::MutexLock lock(&fixture_mu);
    fixture.reset();
  }
  const std::vector<std::string> keys = MakeKeys(n);
  double stats_per_key = 0, rss_per_key = 0;
  for (auto _ : state) {
    ManualClock clock(0);
    const int64_t rss0 = RssBytes();
    auto limiter =
        std::make_unique<Limiter>(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
    for (const std::string& k : keys) {
      (void)limiter->Check("", k, {Limit{algorithm, 100, 60000}});
    }
    const int64_t rss1 = RssBytes();
    stats_per_key = static_cast<double>(limiter->Stats().memory_bytes) / n;
    rss_per_key = static_cast<double>(rss1 - rss0) / n;
  }
  state.counters["bytes_per_key"] = stats_per_key;
  state.counters["rss_per_key"] = rss_per_key;
}
BENCHMARK(BM_MemoryPerKey)
    // Between powers of two as well as at them; not every pair, to keep bench/run's core_bench
    // within its time (~20 s for these).
    ->Args({300000, 0})
    ->Args({1000000, 0})
    ->Args({3000000, 0})
    ->Args({10000000, 0})
    ->Args({1000000, 1})
    ->Args({10000000, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Memory per logged request: 1000 keys, each with a full sliding log of LIMIT requests, a group
// of `per_ms` requests every `spacing_ms` ms (one-day window); bytes_per_request is the growth of
// Stats().memory_bytes (tables, log buffers and their malloc headers) over the requests logged.
double LogBytesPerRequest(int64_t limit, int64_t per_ms, int64_t spacing_ms) {
  const std::vector<std::string> keys = MakeKeys(1000);
  ManualClock clock(0);
  Limiter limiter(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  const Limit l{Algorithm::kSlidingLog, limit, 24 * 3600 * 1000};
  const uint64_t empty = limiter.Stats().memory_bytes;
  for (int64_t r = 0; r < limit; r += per_ms) {
    for (const std::string& k : keys) {
      for (int64_t j = 0; j < per_ms; ++j) (void)limiter.Check("", k, {l});
    }
    clock.Advance(spacing_ms);
  }
  const uint64_t tables = limiter.Stats().memory_bytes;
  return static_cast<double>(tables - empty) / (1000.0 * limit);
}

void MemoryPerLoggedRequest(benchmark::State& state, int64_t per_ms, int64_t spacing_ms) {
  {
    absl::MutexLock lock(&fixture_mu);
    fixture.reset();
  }
  double per_request = 0;
  for (auto _ : state) per_request = LogBytesPerRequest(state.range(0), per_ms, spacing_ms);
  state.counters["bytes_per_request"] = per_request;
}

// Every request at a millisecond of its own, 1 ms apart.
void BM_MemoryPerLoggedRequest(benchmark::State& state) { MemoryPerLoggedRequest(state, 1, 1); }
BENCHMARK(BM_MemoryPerLoggedRequest)
    ->Arg(100)
    ->Arg(1000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Spread over most of the window: one request a minute (100 or 1000 per key, one-day window).
void BM_MemoryPerLoggedRequestSpread(benchmark::State& state) {
  MemoryPerLoggedRequest(state, 1, 60 * 1000);
}
BENCHMARK(BM_MemoryPerLoggedRequestSpread)
    ->Arg(100)
    ->Arg(1000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Bursts: 10 requests in each millisecond (they share one run).
void BM_MemoryPerLoggedRequestBurst(benchmark::State& state) {
  MemoryPerLoggedRequest(state, 10, 1);
}
BENCHMARK(BM_MemoryPerLoggedRequestBurst)
    ->Arg(100)
    ->Arg(1000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rl

BENCHMARK_MAIN();

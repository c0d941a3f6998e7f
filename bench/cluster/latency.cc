// cluster_latency: the time one rl::RemoteLimiter call takes, as a service sees it, against one
// rl-server (--server) or a Redis Cluster of rl.so nodes (--cluster). Each thread makes calls
// one after the other (Check, or CheckMany of --batch keys that usually live on different
// nodes) on random keys, and every call's latency is kept; prints one JSON line with the
// percentiles. bench/cluster/run starts the servers and puts the targets side by side.
//
//   cluster_latency --server 127.0.0.1:6380 [--calls 20000] [--threads 1] [--batch 1] [--async]
//   cluster_latency --cluster 127.0.0.1:7000,127.0.0.1:7001 ...
//
// --async: each call is AsyncCheckMany, and the thread waits for its callback (the latency an
// event loop sees for one call).
//
// Exit 1 when a call was not answered by the limiter (an error, or a failure-mode decision):
// latency of calls that were not served would flatter the figures.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "rl/limit.h"
#include "rl/remote_limiter.h"

namespace {

struct Flags {
  std::string server;
  std::string cluster;
  std::string label;
  int64_t calls = 20000;  // recorded, over all threads
  int64_t warmup = 2000;  // not recorded: connects, the slot map, caches
  int threads = 1;
  int batch = 1;
  int64_t keys = 10000;
  int64_t timeout_ms = 1000;
  bool async = false;
};

bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    auto take = [&](auto* out) {
      if (value == nullptr) return false;
      if constexpr (std::is_same_v<std::remove_pointer_t<decltype(out)>, std::string>) {
        *out = value;
      } else {
        *out = std::atoll(value);
      }
      ++i;
      return true;
    };
    bool ok = false;
    if (arg == "--async") ok = flags->async = true;
    if (arg == "--server") ok = take(&flags->server);
    if (arg == "--cluster") ok = take(&flags->cluster);
    if (arg == "--label") ok = take(&flags->label);
    if (arg == "--calls") ok = take(&flags->calls);
    if (arg == "--warmup") ok = take(&flags->warmup);
    if (arg == "--threads") ok = take(&flags->threads);
    if (arg == "--batch") ok = take(&flags->batch);
    if (arg == "--keys") ok = take(&flags->keys);
    if (arg == "--timeout-ms") ok = take(&flags->timeout_ms);
    if (!ok) {
      std::fprintf(stderr, "bad or incomplete argument: %s\n", arg.c_str());
      return false;
    }
  }
  if (flags->server.empty() == flags->cluster.empty()) {
    std::fprintf(stderr, "give exactly one of --server host:port and --cluster host:port,...\n");
    return false;
  }
  if (flags->calls < 1 || flags->warmup < 0 || flags->threads < 1 || flags->batch < 1 ||
      flags->batch > 16 || flags->keys < 1 || flags->timeout_ms < 1) {
    std::fprintf(stderr, "bad --calls, --warmup, --threads, --batch, --keys or --timeout-ms\n");
    return false;
  }
  return true;
}

double Percentile(const std::vector<int64_t>& sorted_ns, double p) {
  if (sorted_ns.empty()) return 0;
  const size_t index = std::min(
      sorted_ns.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(sorted_ns.size())));
  return static_cast<double>(sorted_ns[index]) / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) return 2;
  rl::RemoteLimiterOptions options;
  if (!flags.cluster.empty()) {
    std::vector<std::string> nodes = absl::StrSplit(flags.cluster, ',', absl::SkipWhitespace());
    options.cluster_nodes = std::move(nodes);
  } else {
    const size_t colon = flags.server.rfind(':');
    if (colon == std::string::npos) {
      std::fprintf(stderr, "bad --server %s\n", flags.server.c_str());
      return 2;
    }
    options.host = flags.server.substr(0, colon);
    options.port = static_cast<uint16_t>(std::atoi(flags.server.c_str() + colon + 1));
  }
  options.timeout = std::chrono::milliseconds(flags.timeout_ms);
  options.connections = static_cast<size_t>(std::max(2, flags.threads));
  auto limiter = rl::RemoteLimiter::Create(options);
  if (!limiter.ok()) {
    std::fprintf(stderr, "%s\n", limiter.status().ToString().c_str());
    return 2;
  }
  // A limit no call reaches: every check is allowed and writes its state, the usual case.
  const rl::Policy policy =
      *rl::ParsePolicy("bench", std::string_view("TOKEN_BUCKET 1000000000 1s"));

  std::atomic<int64_t> failed{0};
  std::vector<std::vector<int64_t>> latencies(flags.threads);
  auto run = [&](int thread, int64_t calls, bool record) {
    std::mt19937_64 rng(static_cast<uint64_t>(thread) * 7919 + (record ? 1 : 0));
    std::uniform_int_distribution<int64_t> pick(0, flags.keys - 1);
    std::vector<std::string> keys(flags.batch);
    std::vector<rl::RemoteLimiter::Request> requests(flags.batch);
    for (int64_t c = 0; c < calls; ++c) {
      for (int b = 0; b < flags.batch; ++b) {
        keys[b] = "bench:" + std::to_string(pick(rng));
        requests[b] = {&policy, keys[b], 1};
      }
      const auto start = std::chrono::steady_clock::now();
      std::vector<absl::StatusOr<rl::Decision>> results;
      if (flags.async) {
        std::promise<std::vector<absl::StatusOr<rl::Decision>>> answered;
        (*limiter)->AsyncCheckMany(requests,
                                   [&answered](std::vector<absl::StatusOr<rl::Decision>> r) {
                                     answered.set_value(std::move(r));
                                   });
        results = answered.get_future().get();
      } else {
        results = (*limiter)->CheckMany(requests);
      }
      const auto took = std::chrono::steady_clock::now() - start;
      for (const absl::StatusOr<rl::Decision>& d : results) {
        if (!d.ok() || d->decided_by != rl::DecidedBy::kLimiter || !d->allowed) ++failed;
      }
      if (record) {
        latencies[thread].push_back(
            std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
      }
    }
  };
  auto run_threads = [&](int64_t total, bool record) {
    std::vector<std::thread> threads;
    for (int t = 0; t < flags.threads; ++t) {
      threads.emplace_back(run, t, total / flags.threads, record);
    }
    for (std::thread& thread : threads) thread.join();
  };
  run_threads(flags.warmup, false);
  failed = 0;
  const auto start = std::chrono::steady_clock::now();
  run_threads(flags.calls, true);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<int64_t> all;
  for (const auto& per_thread : latencies)
    all.insert(all.end(), per_thread.begin(), per_thread.end());
  std::sort(all.begin(), all.end());
  const std::string label =
      !flags.label.empty() ? flags.label : (!flags.cluster.empty() ? "cluster" : "rl-server");
  std::printf(
      "{\"label\": \"%s\", \"threads\": %d, \"batch\": %d, \"calls\": %zu, \"p50_us\": %.1f, "
      "\"p90_us\": %.1f, \"p99_us\": %.1f, \"p999_us\": %.1f, \"max_us\": %.1f, "
      "\"calls_per_s\": %.0f, \"failed\": %lld}\n",
      label.c_str(), flags.threads, flags.batch, all.size(), Percentile(all, 50),
      Percentile(all, 90), Percentile(all, 99), Percentile(all, 99.9),
      all.empty() ? 0.0 : static_cast<double>(all.back()) / 1000.0,
      static_cast<double>(all.size()) / seconds, static_cast<long long>(failed.load()));
  return failed.load() == 0 ? 0 : 1;
}

// rl-algorithm-pictures: what each algorithm does with the same traffic, drawn from the real
// engine (rl::Limiter on an rl::ManualClock, no sleeps) as one SVG per algorithm, and how much
// memory a key costs with each.
//   rl-algorithm-pictures DIR       writes DIR/<algorithm>.svg (docs/algorithms/ in the repo)
//   rl-algorithm-pictures --memory  prints a Markdown table of bytes per key
// The pictures are deterministic (integer arithmetic, fixed traffic), so tests/tools can compare
// them byte for byte with the checked-in ones.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "rl/clock.h"
#include "rl/limit.h"
#include "rl/limiter.h"
#include "svg.h"

namespace rl::pictures {
namespace {

constexpr int64_t kLimit = 10;
constexpr int64_t kWindowMs = 60'000;
constexpr int64_t kSpanMs = 180'000;  // the time axis of every picture

struct Traffic {
  std::string name;
  std::vector<int64_t> times_ms;  // request arrival times, ascending
};

// The same three traffic patterns for every algorithm (limit 10 per minute).
std::vector<Traffic> Patterns() {
  std::vector<Traffic> out;
  Traffic steady{"steady: one request every 4 s (15 a minute, 1.5x the limit)", {}};
  for (int64_t t = 0; t < kSpanMs; t += 4'000) steady.times_ms.push_back(t);
  out.push_back(steady);
  Traffic burst{"burst: 25 requests in 2.4 s at 10 s, then one every 10 s (6 a minute)", {}};
  for (int64_t i = 0; i < 25; ++i) burst.times_ms.push_back(10'000 + i * 100);
  for (int64_t t = 20'000; t < kSpanMs; t += 10'000) burst.times_ms.push_back(t);
  out.push_back(burst);
  Traffic edge{"window edge: 1 request at 0 s, then 10 in 5 s at 50 s, at 60 s and at 120 s", {0}};
  for (int64_t start : {50'000, 60'000, 120'000}) {
    for (int64_t i = 0; i < 10; ++i) edge.times_ms.push_back(start + i * 500);
  }
  out.push_back(edge);
  return out;
}

struct Outcome {
  int64_t at_ms = 0;
  bool allowed = false;
  int64_t delay_ms = 0;  // leaky bucket: how long an accepted request waits before it proceeds
};

std::vector<Outcome> Simulate(const Limit& limit, const std::vector<int64_t>& times_ms) {
  ManualClock clock(0);
  LimiterOptions options;
  options.clock = &clock;
  options.sweep_interval_ms = 0;
  Limiter limiter(options);
  std::vector<Outcome> out;
  for (int64_t t : times_ms) {
    clock.Set(t);
    absl::StatusOr<Decision> d = limiter.Check("", "client", absl::MakeConstSpan(&limit, 1), 1);
    Outcome o;
    o.at_ms = t;
    o.allowed = d.ok() && d->allowed;
    o.delay_ms = o.allowed ? std::max<int64_t>(0, d->retry_after_ms) : 0;
    out.push_back(o);
  }
  return out;
}

// Requests allowed in the trailing window (t - WINDOW, t] as a step function: (time, value)
// at each change. A request counts from the moment it may proceed (its arrival, or for the
// leaky bucket arrival + delay), which is what the service behind the limiter sees.
std::vector<std::pair<int64_t, int64_t>> TrailingCount(const std::vector<Outcome>& outcomes) {
  std::vector<std::pair<int64_t, int>> events;  // (time, -1 | +1); leaving sorts first
  for (const Outcome& o : outcomes) {
    if (!o.allowed) continue;
    events.emplace_back(o.at_ms + o.delay_ms, +1);
    events.emplace_back(o.at_ms + o.delay_ms + kWindowMs, -1);
  }
  std::sort(events.begin(), events.end());
  std::vector<std::pair<int64_t, int64_t>> steps;
  int64_t value = 0;
  for (size_t i = 0; i < events.size();) {
    int64_t t = events[i].first;
    while (i < events.size() && events[i].first == t) value += events[i++].second;
    steps.emplace_back(t, value);
  }
  return steps;
}

// Layout, in pixels.
constexpr int64_t kWidth = 900;
constexpr int64_t kPlotLeft = 70;
constexpr int64_t kPlotWidth = 800;
constexpr int64_t kPlotHeight = 60;
constexpr int64_t kHeaderHeight = 84;
constexpr int64_t kRowHeight = 138;
constexpr std::string_view kAllowed = "#2e7d32";
constexpr std::string_view kDenied = "#c62828";
constexpr std::string_view kDelayed = "#ef8f00";

Px X(int64_t t_ms) {
  t_ms = std::clamp<int64_t>(t_ms, 0, kSpanMs);
  return Px{kPlotLeft * 10 + t_ms * kPlotWidth * 10 / kSpanMs};
}

std::string Stroke(std::string_view color, std::string_view extra = "") {
  std::string s = "stroke=\"";
  s.append(color);
  s.push_back('"');
  if (!extra.empty()) {
    s.push_back(' ');
    s.append(extra);
  }
  return s;
}

void DrawRow(Svg& svg, int64_t top, const Traffic& traffic, const std::vector<Outcome>& outcomes) {
  const auto steps = TrailingCount(outcomes);
  int64_t most = 0;
  for (const auto& [t, v] : steps) {
    if (t <= kSpanMs) most = std::max(most, v);
  }
  const int64_t allowed =
      std::count_if(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.allowed; });
  svg.Text(PxOf(kPlotLeft), PxOf(top + 14), traffic.name, "font-weight=\"bold\"");
  svg.Text(PxOf(kPlotLeft + kPlotWidth), PxOf(top + 30),
           "allowed " + std::to_string(allowed) + " of " + std::to_string(outcomes.size()) +
               "; most in any 60 s: " + std::to_string(most),
           "", "end");

  // The trailing-window count against the limit. The y axis goes to 20 unless an algorithm
  // lets more through (then to the next multiple of 5).
  const int64_t y_max = std::max<int64_t>(20, (most + 4) / 5 * 5);
  const int64_t plot_top = top + 36;
  const int64_t base = (plot_top + kPlotHeight) * 10;  // y of 0, in tenths
  auto y = [&](int64_t v) { return Px{base - v * kPlotHeight * 10 / y_max}; };
  svg.Rect(PxOf(kPlotLeft), PxOf(plot_top), PxOf(kPlotWidth), PxOf(kPlotHeight),
           "fill=\"#fafafa\" stroke=\"#bbbbbb\"");
  for (int64_t v : {int64_t{0}, kLimit, y_max}) {
    svg.Text(PxOf(kPlotLeft - 6), Px{y(v).tenths + 40}, std::to_string(v), "fill=\"#555555\"",
             "end");
  }
  svg.Line(PxOf(kPlotLeft), y(kLimit), PxOf(kPlotLeft + kPlotWidth), y(kLimit),
           Stroke("#555555", "stroke-dasharray=\"5,4\""));
  // Appends rather than operator+ chains: GCC 12 warns falsely (-Wrestrict) on the latter.
  std::string d = "M";
  d.append(Svg::Num(X(0))).append(" ").append(Svg::Num(y(0)));
  for (const auto& [t, v] : steps) {
    if (t > kSpanMs) break;
    d.append("H").append(Svg::Num(X(t))).append("V").append(Svg::Num(y(v)));
  }
  d.append("H").append(Svg::Num(X(kSpanMs)));
  svg.Path(d, std::string("fill=\"none\" ").append(Stroke(kAllowed, "stroke-width=\"1.5\"")));

  // One tick per request: allowed up (amber when told to wait), denied down.
  const int64_t mid = plot_top + kPlotHeight + 16;
  svg.Line(PxOf(kPlotLeft), PxOf(mid), PxOf(kPlotLeft + kPlotWidth), PxOf(mid), Stroke("#bbbbbb"));
  for (const Outcome& o : outcomes) {
    std::string_view color = !o.allowed ? kDenied : o.delay_ms > 0 ? kDelayed : kAllowed;
    svg.Line(X(o.at_ms), PxOf(mid), X(o.at_ms), PxOf(o.allowed ? mid - 9 : mid + 9), Stroke(color));
  }
  for (int64_t t = 0; t <= kSpanMs; t += 30'000) {
    svg.Text(X(t), PxOf(mid + 24), std::to_string(t / 1000) + " s", "fill=\"#555555\"", "middle");
  }
}

struct Algo {
  Algorithm algorithm;
  std::string file;
  std::string summary;
};

std::vector<Algo> Algorithms() {
  return {
      {Algorithm::kTokenBucket, "token_bucket",
       "bursts up to BURST (10) at once, then a steady 1 per 6 s as tokens refill"},
      {Algorithm::kGcra, "gcra", "the token bucket in integer form: the same decisions"},
      {Algorithm::kSlidingLog, "sliding_log",
       "exact: no 60 s span ever holds more than 10; memory grows with the limit"},
      {Algorithm::kSlidingWindow, "sliding_window",
       "two fixed windows, the previous one weighted: close to exact, constant memory"},
      {Algorithm::kFixedWindow, "fixed_window",
       "a counter per window (from the first request): up to 2x the limit across an edge"},
      {Algorithm::kLeakyBucket, "leaky_bucket",
       "a queue of 10 drained at 1 per 6 s: accepted requests are told to wait (amber)"},
  };
}

std::string Picture(const Algo& algo) {
  Limit limit;
  limit.algorithm = algo.algorithm;
  limit.limit = kLimit;
  limit.window_ms = kWindowMs;
  const std::vector<Traffic> patterns = Patterns();
  const int64_t height = kHeaderHeight + kRowHeight * static_cast<int64_t>(patterns.size());
  Svg svg(kWidth, height, FormatLimit(limit) + ": allowed and denied requests over time");
  svg.Text(PxOf(10), PxOf(22), FormatLimit(limit), "font-size=\"16\" font-weight=\"bold\"");
  svg.Text(PxOf(10), PxOf(42), algo.summary);
  // Legend.
  int64_t lx = 10;
  const int64_t ly = 66;
  auto tick = [&](std::string_view color, bool up, std::string_view label) {
    svg.Line(PxOf(lx + 4), PxOf(ly - (up ? 9 : -3)), PxOf(lx + 4), PxOf(ly + (up ? 0 : -6)),
             Stroke(color, "stroke-width=\"2\""));
    svg.Text(PxOf(lx + 12), PxOf(ly), label);
    lx += 12 + 7 * static_cast<int64_t>(label.size()) + 18;
  };
  tick(kAllowed, true, "allowed");
  tick(kDenied, false, "denied");
  if (algo.algorithm == Algorithm::kLeakyBucket) tick(kDelayed, true, "allowed, told to wait");
  svg.Line(PxOf(lx), PxOf(ly - 4), PxOf(lx + 24), PxOf(ly - 4),
           Stroke(kAllowed, "stroke-width=\"1.5\""));
  std::string counted = algo.algorithm == Algorithm::kLeakyBucket
                            ? "proceeding in the trailing 60 s (after the wait)"
                            : "allowed in the trailing 60 s";
  svg.Text(PxOf(lx + 30), PxOf(ly), counted);
  lx += 30 + 7 * static_cast<int64_t>(counted.size()) + 18;
  svg.Line(PxOf(lx), PxOf(ly - 4), PxOf(lx + 24), PxOf(ly - 4),
           Stroke("#555555", "stroke-dasharray=\"5,4\""));
  svg.Text(PxOf(lx + 30), PxOf(ly), "the limit, 10");

  for (size_t i = 0; i < patterns.size(); ++i) {
    DrawRow(svg, kHeaderHeight + kRowHeight * static_cast<int64_t>(i), patterns[i],
            Simulate(limit, patterns[i].times_ms));
  }
  return svg.Finish();
}

// Resident bytes of the process. Not malloc's own figures: the engine maps its larger tables
// itself (store.h). Freed heap pages are handed back first (malloc_trim), so the pages an earlier
// measurement freed count again when reused and garbage does not count as held.
size_t Resident() {
  malloc_trim(0);
  long pages = 0, resident = 0;
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

struct PerKey {
  double engine = 0;  // Limiter::Stats().memory_bytes / keys
  double heap = 0;    // resident-set growth for the limiter's states / keys
};

// Bytes per key for `keys` keys that each made `requests` requests (at distinct milliseconds,
// the sliding log's worst case) under `spec`.
PerKey MeasureMemory(const Policy& policy, int64_t keys, int64_t requests) {
  ManualClock clock(0);
  LimiterOptions options;
  options.clock = &clock;
  options.sweep_interval_ms = 0;
  std::vector<std::string> names;
  for (int64_t k = 0; k < keys; ++k) names.push_back("tenant:" + std::to_string(k));
  const size_t before = Resident();
  Limiter limiter(options);
  for (int64_t r = 0; r < requests; ++r) {
    clock.Set(r);
    for (const std::string& name : names) (void)limiter.Check(policy, name, 1);
  }
  PerKey out;
  out.heap = static_cast<double>(Resident() - before) / static_cast<double>(keys);
  out.engine = static_cast<double>(limiter.Stats().memory_bytes) / static_cast<double>(keys);
  return out;
}

// One table row: the smallest and largest bytes per key over `key_counts` (hash tables grow by
// doubling, so the cost per key depends on where the count sits between two growths).
void MemoryRow(const std::string& spec, std::vector<int64_t> key_counts, int64_t requests) {
  absl::StatusOr<Policy> policy = ParsePolicy("m", spec);
  if (!policy.ok()) return;
  PerKey lo{1e18, 1e18}, hi{0, 0};
  for (int64_t keys : key_counts) {
    PerKey p = MeasureMemory(*policy, keys, requests);
    lo = {std::min(lo.engine, p.engine), std::min(lo.heap, p.heap)};
    hi = {std::max(hi.engine, p.engine), std::max(hi.heap, p.heap)};
  }
  auto range = [](double a, double b) {
    char buf[64];
    if (static_cast<int64_t>(a) == static_cast<int64_t>(b)) {
      std::snprintf(buf, sizeof buf, "%.0f", a);
    } else {
      std::snprintf(buf, sizeof buf, "%.0f-%.0f", a, b);
    }
    return std::string(buf);
  };
  std::printf("| `%s` | %lld | %lld-%lld | %s | %s |\n", spec.c_str(),
              static_cast<long long>(requests), static_cast<long long>(key_counts.front()),
              static_cast<long long>(key_counts.back()), range(lo.engine, hi.engine).c_str(),
              range(lo.heap, hi.heap).c_str());
}

int Memory() {
  std::printf("| policy | requests per key | keys | engine's count, B/key | RSS, B/key |\n");
  std::printf("|---|--:|--:|--:|--:|\n");
  std::vector<int64_t> many;  // 100 k .. 200 k keys: at least one table growth in between
  for (int64_t k = 100'000; k <= 200'000; k += 20'000) many.push_back(k);
  for (const char* spec : {"TOKEN_BUCKET 100 1m", "GCRA 100 1m", "LEAKY_BUCKET 100 1m",
                           "FIXED_WINDOW 100 1m", "SLIDING_WINDOW 100 1m"}) {
    MemoryRow(spec, many, 1);
  }
  MemoryRow("SLIDING_LOG 100 1m", {2'000, 3'000}, 1);
  MemoryRow("SLIDING_LOG 100 1m", {2'000, 3'000}, 100);
  MemoryRow("SLIDING_LOG 5000 1d", {200, 300}, 5'000);
  MemoryRow("SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d", many, 1);
  return 0;
}

int Main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--memory") return Memory();
  if (argc != 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: rl-algorithm-pictures DIR | --memory\n");
    return 2;
  }
  for (const Algo& algo : Algorithms()) {
    std::string path = std::string(argv[1]) + "/" + algo.file + ".svg";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << Picture(algo);
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace rl::pictures

int main(int argc, char** argv) { return rl::pictures::Main(argc, argv); }

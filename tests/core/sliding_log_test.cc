// The sliding log's variable-length run buffer (core/src/sliding_log.cc), white-box: deltas at
// and past each encoding boundary, huge counts, refunds across runs, the ring wrapping while it
// grows, prune to empty and reuse, clones, the size bound (saturating into the newest run, never
// over-admitting), windows far longer than a one-byte delta, the bytes a logged request costs,
// and a randomized comparison against a plain vector of (time, count) runs.
#include "sliding_log.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace rl::internal {
namespace {

using Runs = std::vector<std::pair<int64_t, int64_t>>;

constexpr int64_t kDay = 24 * 3600 * 1000;

Runs RunsOf(const LogBuf* log) {
  Runs out;
  LogRuns(log, &out);
  return out;
}

// Owns a log; every call goes through the public functions, as the limiter's do.
class Log {
 public:
  explicit Log(Limit limit) : limit_(limit) {}
  ~Log() { LogFree(log_); }
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // A check of `cost` at `now`: prune, evaluate, append when allowed.
  LimitResult Check(int64_t now, int64_t cost = 1) {
    LogPrune(log_, limit_.window_ms, now);
    int64_t expiry = 0;
    const LimitResult r = LogEvaluate(log_, limit_, now, cost, &expiry);
    if (r.allowed && cost > 0) log_ = LogAppend(log_, limit_, now, cost);
    return r;
  }
  void Append(int64_t now, int64_t cost) { log_ = LogAppend(log_, limit_, now, cost); }
  void Adjust(int64_t now, int64_t amount, AdjustOp op) {
    LogPrune(log_, limit_.window_ms, now);
    log_ = LogAdjust(log_, limit_, now, amount, op);
  }
  void Prune(int64_t now) { LogPrune(log_, limit_.window_ms, now); }
  Runs runs() const { return RunsOf(log_); }
  int64_t total() const { return LogTotal(log_); }
  size_t bytes() const { return LogBytes(log_); }
  LogBuf* get() const { return log_; }

 private:
  Limit limit_;
  LogBuf* log_ = nullptr;
};

TEST(SlidingLog, DeltasAtAndPastEveryEncodingBoundaryRoundTrip) {
  // One request after each delta: 6, 13, 20, 27, 34, 41 and 48 bits are where a run grows by a
  // byte; a ten-year window keeps them all.
  Log log(Limit{Algorithm::kSlidingLog, 1000, kMaxWindowMs});
  Runs want;
  int64_t t = -5;  // times may be negative (a monotonic clock's origin is arbitrary)
  log.Append(t, 1);
  want.emplace_back(t, 1);
  for (int bits : {6, 13, 20, 27, 34}) {
    for (int64_t d : {(int64_t{1} << bits) - 1, int64_t{1} << bits, (int64_t{1} << bits) + 1}) {
      t += d;
      log.Append(t, 1);
      want.emplace_back(t, 1);
    }
  }
  t += 1;
  log.Append(t, 3);
  want.emplace_back(t, 3);
  EXPECT_EQ(log.runs(), want);
  EXPECT_EQ(log.total(), static_cast<int64_t>(want.size()) + 2);
  // The oldest runs leave one by one, each moving the log's start to the next run's time.
  for (size_t i = 1; i < want.size(); ++i) {
    log.Prune(want[i].first + kMaxWindowMs);
    EXPECT_EQ(log.runs(), Runs(want.begin() + static_cast<ptrdiff_t>(i + 1), want.end())) << i;
  }
}

TEST(SlidingLog, DeltasBeyondEveryWindowStillRoundTrip) {
  // What a decoded snapshot may hold: times 2^62 apart (LogAppend needs no window for them).
  Log log(Limit{Algorithm::kSlidingLog, 4, 1});
  const int64_t far = int64_t{1} << 61;
  log.Append(-far, 1);
  log.Append(0, 2);
  log.Append(far, 1);
  EXPECT_EQ(log.runs(), (Runs{{-far, 1}, {0, 2}, {far, 1}}));
}

TEST(SlidingLog, HugeCountsShareOneRunAndRefundExactly) {
  const Limit l{Algorithm::kSlidingLog, kMaxLimit, 1000};
  Log log(l);
  log.Append(10, 1);
  log.Adjust(10, kMaxLogTotal - 2, AdjustOp::kCharge);  // the same ms: one run
  log.Adjust(11, 5, AdjustOp::kCharge);                 // capped at kMaxLogTotal
  EXPECT_EQ(log.runs(), (Runs{{10, kMaxLogTotal - 1}, {11, 1}}));
  EXPECT_EQ(log.total(), kMaxLogTotal);
  log.Adjust(11, 2, AdjustOp::kRefund);
  EXPECT_EQ(log.runs(), (Runs{{10, kMaxLogTotal - 2}}));
  log.Adjust(11, kMaxLogTotal - 3, AdjustOp::kRefund);
  EXPECT_EQ(log.runs(), (Runs{{10, 1}}));
  EXPECT_EQ(log.total(), 1);
}

TEST(SlidingLog, RefundsDropTheNewestRunsAcrossRunBoundaries) {
  const Limit l{Algorithm::kSlidingLog, 100, 60000};
  Log log(l);
  log.Append(0, 3);
  log.Append(70, 1);      // two-byte delta
  log.Append(9000, 200);  // three-byte delta, two-byte count (a charge-sized run)
  log.Append(9001, 2);
  log.Adjust(9001, 3, AdjustOp::kRefund);  // all of the newest run, one of the one before
  EXPECT_EQ(log.runs(), (Runs{{0, 3}, {70, 1}, {9000, 199}}));
  log.Adjust(9001, 199, AdjustOp::kRefund);  // exactly one whole run
  EXPECT_EQ(log.runs(), (Runs{{0, 3}, {70, 1}}));
  int64_t expiry = 0;
  LogEvaluate(log.get(), l, 9001, 0, &expiry);
  EXPECT_EQ(expiry, 70 + 60000);  // the newest run now decides when the log empties
  // The next request after a refund continues from the new newest run.
  log.Append(9002, 1);
  log.Append(9002, 1);
  EXPECT_EQ(log.runs(), (Runs{{0, 3}, {70, 1}, {9002, 2}}));
  log.Adjust(9002, 5, AdjustOp::kRefund);  // cuts into the oldest run
  EXPECT_EQ(log.runs(), (Runs{{0, 1}}));
  log.Adjust(9002, 7, AdjustOp::kRefund);  // more than held: empty, and reusable
  EXPECT_EQ(log.total(), 0);
  EXPECT_TRUE(log.runs().empty());
  log.Append(9003, 1);
  EXPECT_EQ(log.runs(), (Runs{{9003, 1}}));
}

TEST(SlidingLog, RingWrapsAroundWhileItGrows) {
  // A window of 50 ms with requests every ms keeps ~50 one-byte runs live while the head moves
  // around the ring; a slower stretch (multi-byte deltas) then makes it grow while wrapped.
  const Limit l{Algorithm::kSlidingLog, 1000, 50};
  Log log(l);
  Runs model;
  auto step = [&](int64_t now, int64_t cost) {
    log.Prune(now);
    while (!model.empty() && now - model.front().first >= l.window_ms) model.erase(model.begin());
    log.Append(now, cost);
    if (!model.empty() && model.back().first == now) {
      model.back().second += cost;
    } else {
      model.emplace_back(now, cost);
    }
    ASSERT_EQ(log.runs(), model) << "at " << now;
  };
  int64_t now = 0;
  for (int i = 0; i < 300; ++i) step(now++, 1 + i % 3);
  for (int i = 0; i < 300; ++i) step(now += 1 + (i % 7 == 0 ? 0 : 1), i % 5 == 0 ? 300 : 1);
  for (int i = 0; i < 200; ++i) step(now += 1, 1);
}

TEST(SlidingLog, PruneToEmptyAndReuse) {
  const Limit l{Algorithm::kSlidingLog, 5000, 1000};
  Log log(l);
  for (int64_t t = 0; t < 1000; ++t) log.Append(t, 1);
  const size_t full = log.bytes();
  log.Prune(5000);
  EXPECT_EQ(log.total(), 0);
  EXPECT_TRUE(log.runs().empty());
  int64_t expiry = 0;
  const LimitResult r = LogEvaluate(log.get(), l, 5000, 1, &expiry);
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.remaining, 4999);
  // The emptied ring starts small again instead of keeping the burst's size.
  log.Append(5000, 1);
  EXPECT_EQ(log.runs(), (Runs{{5000, 1}}));
  EXPECT_LT(log.bytes(), full / 4);
  EXPECT_LE(log.bytes(), 64u);
}

TEST(SlidingLog, AMostlyPrunedRingShrinks) {
  const Limit l{Algorithm::kSlidingLog, 5000, 2000};
  Log log(l);
  for (int64_t t = 0; t < 2000; ++t) log.Append(t, 1);
  const size_t full = log.bytes();
  log.Prune(3990);  // 10 runs left
  log.Append(3990, 1);
  EXPECT_LT(log.bytes(), full / 4);
  Runs want;
  for (int64_t t = 1991; t < 2000; ++t) want.emplace_back(t, 1);
  want.emplace_back(3990, 1);
  EXPECT_EQ(log.runs(), want);
}

TEST(SlidingLog, CloneCopiesRunsAndIsIndependent) {
  const Limit l{Algorithm::kSlidingLog, 100, 100};
  Log log(l);
  for (int64_t t = 0; t < 80; ++t) log.Append(t * 3, 1 + t % 4);  // wraps the ring once pruned
  log.Prune(200);
  for (int64_t t = 0; t < 20; ++t) log.Append(240 + t * 1000, 2);
  LogBuf* copy = LogClone(log.get());
  EXPECT_EQ(RunsOf(copy), log.runs());
  EXPECT_EQ(LogTotal(copy), log.total());
  copy = LogAppend(copy, l, 1'000'000, 1);
  EXPECT_NE(RunsOf(copy), log.runs());
  EXPECT_EQ(RunsOf(copy).back(), (std::pair<int64_t, int64_t>{1'000'000, 1}));
  LogFree(copy);
  EXPECT_EQ(LogClone(nullptr), nullptr);
}

TEST(SlidingLog, TheSizeBoundFoldsIntoTheNewestRunAndNeverOverAdmits) {
  // Charges past a limit of 2, each at a millisecond of its own and far apart: the log stops at
  // 8 bytes per request of its limit (plus a little) and the newest run takes the rest, moved
  // to now: the requests stay counted, and stay longer than exact.
  const Limit l{Algorithm::kSlidingLog, 2, 30 * kDay};
  Log log(l);
  int64_t now = 0;
  for (int i = 0; i < 1000; ++i) {
    log.Adjust(now, 1, AdjustOp::kCharge);
    now += 1 << 20;
  }
  EXPECT_EQ(log.total(), 1000);
  EXPECT_LE(log.bytes(), 200u);
  const Runs runs = log.runs();
  EXPECT_LT(runs.size(), 1000u);
  EXPECT_EQ(runs.back().first, now - (1 << 20));
  int64_t sum = 0;
  for (const auto& [t, c] : runs) sum += c;
  EXPECT_EQ(sum, 1000);
  // Denied until the newest run (holding most of the charges) leaves: never early.
  const LimitResult r = log.Check(now, 1);
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.retry_after_ms, runs.back().first + l.window_ms - now);
}

TEST(SlidingLog, SparseRequestsInLongWindowsAreExact) {
  // 1-day and 30-day windows with requests hours or days apart: deltas far past a byte.
  for (const int64_t window : {kDay, 30 * kDay}) {
    const Limit l{Algorithm::kSlidingLog, 3, window};
    Log log(l);
    const int64_t gap = window / 3 + 7;  // three fit... the fourth waits for the first
    EXPECT_TRUE(log.Check(0).allowed);
    EXPECT_TRUE(log.Check(gap - 1000).allowed);
    EXPECT_TRUE(log.Check(2 * gap - 2000).allowed);
    const LimitResult denied = log.Check(window - 1);
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.retry_after_ms, 1);
    EXPECT_EQ(denied.reset_after_ms, 2 * gap - 2000 + window - (window - 1));
    const LimitResult allowed = log.Check(window);
    EXPECT_TRUE(allowed.allowed);
    EXPECT_EQ(allowed.remaining, 0);
    EXPECT_EQ(log.runs(), (Runs{{gap - 1000, 1}, {2 * gap - 2000, 1}, {window, 1}}));
  }
}

TEST(SlidingLog, ARequestAtAMillisecondOfItsOwnCostsAboutAByteToFourBytes) {
  // Header, slack and malloc's header included (LogBytes), 1000 requests per key.
  struct Case {
    int64_t spacing_ms;
    double max_bytes_per_request;
  };
  for (const Case c : {Case{1, 1.1}, Case{1000, 2.1}, Case{60000, 3.1}, Case{3600000, 4.1}}) {
    const Limit l{Algorithm::kSlidingLog, 1000, 1000 * c.spacing_ms};
    Log log(l);
    for (int64_t i = 0; i < 1000; ++i) ASSERT_TRUE(log.Check(i * c.spacing_ms).allowed);
    EXPECT_LE(static_cast<double>(log.bytes()) / 1000, c.max_bytes_per_request) << c.spacing_ms;
  }
  // Bursts: 10 requests in each millisecond share a run of 2 bytes.
  const Limit l{Algorithm::kSlidingLog, 1000, 1000};
  Log log(l);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_TRUE(log.Check(i / 10).allowed);
  EXPECT_LE(static_cast<double>(log.bytes()) / 1000, 0.3);
}

// A plain vector of runs with the same rules, for the randomized comparison.
struct Model {
  Runs runs;
  int64_t Total() const {
    int64_t s = 0;
    for (const auto& r : runs) s += r.second;
    return s;
  }
  void Prune(int64_t w, int64_t now) {
    while (!runs.empty() && now - runs.front().first >= w) runs.erase(runs.begin());
  }
  void Append(int64_t now, int64_t cost) {
    if (!runs.empty() && now <= runs.back().first) {
      runs.back().second += cost;
    } else {
      runs.emplace_back(now, cost);
    }
  }
  void Refund(int64_t amount) {
    while (amount > 0 && !runs.empty()) {
      const int64_t take = std::min(amount, runs.back().second);
      runs.back().second -= take;
      amount -= take;
      if (runs.back().second == 0) runs.pop_back();
    }
  }
  // Allowed, and the retry for a denied call (the run that makes room decides it).
  std::pair<bool, int64_t> Evaluate(const Limit& l, int64_t now, int64_t cost) const {
    const int64_t total = Total();
    if (total + cost <= l.limit) return {true, 0};
    int64_t freed = 0;
    for (const auto& [t, c] : runs) {
      freed += c;
      if (freed >= total + cost - l.limit) return {false, t + l.window_ms - now};
    }
    return {false, -1};
  }
};

TEST(SlidingLog, RandomTrafficMatchesAPlainListOfRuns) {
  std::mt19937_64 rng(15);
  const int64_t deltas[] = {0, 0, 1, 1, 2, 63, 64, 65, 8191, 8192, 8193, 1 << 20, 1 << 27};
  for (int round = 0; round < 40; ++round) {
    const Limit l{Algorithm::kSlidingLog, 1 + static_cast<int64_t>(rng() % 300),
                  int64_t{1} << (rng() % 30)};
    Log log(l);
    Model model;
    int64_t now = static_cast<int64_t>(rng() % 1000) - 500;
    for (int op = 0; op < 2000; ++op) {
      now += deltas[rng() % std::size(deltas)];
      const int64_t behind = rng() % 10 == 0 ? static_cast<int64_t>(rng() % 100) : 0;
      const int64_t at = now - behind;  // a clock behind the newest run now and then
      model.Prune(l.window_ms, at);
      const int kind = static_cast<int>(rng() % 10);
      if (kind < 7) {
        const int64_t cost = rng() % 4 == 0 ? static_cast<int64_t>(rng() % 40) : 1;
        const auto want = model.Evaluate(l, at, cost);
        const LimitResult r = log.Check(at, cost);
        ASSERT_EQ(r.allowed, want.first) << round << "/" << op;
        if (!r.allowed && cost <= l.limit) {
          ASSERT_EQ(r.retry_after_ms, want.second);
        }
        if (r.allowed && cost > 0) model.Append(at, cost);
      } else if (kind < 9) {
        const int64_t amount = static_cast<int64_t>(rng() % 50);
        log.Adjust(at, amount, AdjustOp::kRefund);
        model.Refund(amount);
      } else {
        // Charges up to the limit (past it the size bound may fold runs: tested above).
        const int64_t amount =
            std::min<int64_t>(static_cast<int64_t>(rng() % 20), l.limit - model.Total());
        if (amount > 0) {
          log.Adjust(at, amount, AdjustOp::kCharge);
          model.Append(at, amount);
        }
      }
      log.Prune(at);  // as the model (a charge of nothing above calls nothing)
      ASSERT_EQ(log.runs(), model.runs) << round << "/" << op;
      ASSERT_EQ(log.total(), model.Total());
    }
  }
}

}  // namespace
}  // namespace rl::internal

// Seeded randomized properties, thousands of cases per algorithm: exact windows never over-admit,
// token bucket and GCRA agree and respect BURST + rate * T, the window counter stays within its
// stated bound, the leaky bucket's outflow is constant, and every retry_after is exact (waiting
// it passes, one ms less does not). Each runs twice: with the lock-free path of hot GCRA and
// token-bucket keys (LimiterOptions::hot_keys) and without it, and the two runs must see the same
// decisions.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "rl/limiter.h"

namespace rl {
namespace {

constexpr int kCases = 400;

struct Event {
  int64_t t;
  int64_t cost;
  Decision d;
};

// Random traffic for one limit on one key: bursts at one instant, gaps around the refill period,
// occasional long idles, costs from 0 up to just past the capacity.
class Traffic {
 public:
  Traffic(uint64_t seed, const Limit& limit) : rng_(seed), limit_(limit) {}

  int64_t NextGap() {
    const int64_t period = std::max<int64_t>(1, limit_.window_ms / limit_.limit);
    switch (Uniform(0, 9)) {
      case 0:
      case 1:
      case 2:
        return 0;
      case 3:
        return Uniform(0, 2 * limit_.window_ms);
      default:
        return Uniform(0, 2 * period);
    }
  }
  int64_t NextCost() {
    const int64_t cap = limit_.capacity();
    if (Uniform(0, 19) == 0) return Uniform(0, cap + 1);
    return Uniform(0, std::min<int64_t>(cap, 3));
  }
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

 private:
  std::mt19937_64 rng_;
  Limit limit_;
};

Limit RandomLimit(std::mt19937_64& rng, Algorithm a) {
  auto u = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Limit l{a, u(1, 20), u(1, 3000)};
  if ((a == Algorithm::kTokenBucket || a == Algorithm::kGcra || a == Algorithm::kLeakyBucket) &&
      u(0, 2) == 0) {
    l.burst = u(1, 30);
  }
  return l;
}

// Drives `steps` checks of `limit` on several keys in lockstep (same times and costs). When a
// check is denied with a finite wait, it verifies (on every key, by peeking) that one ms less is
// still denied and the wait itself passes, then sometimes moves the clock there.
std::vector<std::vector<Event>> Drive(Limiter& limiter, ManualClock& clock,
                                      const std::vector<Limit>& limits, Traffic& traffic, int steps,
                                      const std::string& key) {
  std::vector<std::vector<Event>> events(limits.size());
  for (int s = 0; s < steps; ++s) {
    clock.Advance(traffic.NextGap());
    const int64_t now = clock.NowMs();
    const int64_t cost = traffic.NextCost();
    int64_t retry = -1;
    for (size_t i = 0; i < limits.size(); ++i) {
      absl::StatusOr<Decision> d = limiter.Check("", key, {limits[i]}, cost);
      EXPECT_TRUE(d.ok());
      events[i].push_back({now, cost, *d});
      EXPECT_GE(d->remaining, 0);
      if (!d->allowed && i == 0) retry = d->retry_after_ms;
    }
    if (retry > 0 && traffic.Uniform(0, 1) == 0) {
      for (size_t i = 0; i < limits.size(); ++i) {
        clock.Set(now + retry - 1);
        EXPECT_FALSE(limiter.Peek("", key, {limits[i]}, cost)->allowed)
            << FormatLimit(limits[i]) << " at " << now << " retry " << retry;
        clock.Set(now + retry);
        EXPECT_TRUE(limiter.Peek("", key, {limits[i]}, cost)->allowed)
            << FormatLimit(limits[i]) << " at " << now << " retry " << retry;
      }
    }
  }
  return events;
}

// The limiter of a run: hot keys on or off.
LimiterOptions OptionsFor(bool hot, ManualClock* clock) {
  return LimiterOptions{.sweep_interval_ms = 0, .clock = clock, .hot_keys = hot};
}
std::string PathName(bool hot) { return hot ? "Hot" : "Locked"; }

class PropertyTest : public ::testing::TestWithParam<std::tuple<Algorithm, bool>> {
 protected:
  Algorithm algorithm() const { return std::get<0>(GetParam()); }
  ManualClock clock_{0};
  Limiter limiter_{OptionsFor(std::get<1>(GetParam()), &clock_)};
};

// Sum of admitted cost in the half-open interval (from, to].
int64_t AdmittedIn(const std::vector<Event>& events, int64_t from, int64_t to) {
  int64_t sum = 0;
  for (const Event& e : events) {
    if (e.d.allowed && e.t > from && e.t <= to) sum += e.cost;
  }
  return sum;
}

TEST_P(PropertyTest, RetryAfterIsExact) {
  std::mt19937_64 rng(0xC0FFEE + static_cast<int>(algorithm()));
  for (int c = 0; c < kCases; ++c) {
    const Limit l = RandomLimit(rng, algorithm());
    Traffic traffic(rng(), l);
    Drive(limiter_, clock_, {l}, traffic, 60, "retry" + std::to_string(c));
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, PropertyTest,
    ::testing::Combine(::testing::Values(Algorithm::kTokenBucket, Algorithm::kGcra,
                                         Algorithm::kSlidingLog, Algorithm::kSlidingWindow,
                                         Algorithm::kFixedWindow, Algorithm::kLeakyBucket),
                       ::testing::Bool()),
    [](const auto& info) {
      return std::string(AlgorithmName(std::get<0>(info.param))) +
             PathName(std::get<1>(info.param));
    });

class Properties : public ::testing::TestWithParam<bool> {
 protected:
  ManualClock clock_{0};
  Limiter limiter_{OptionsFor(GetParam(), &clock_)};
  std::mt19937_64 rng_{20261129};
};

TEST_P(Properties, SlidingLogNeverExceedsLimitInAnyTrailingWindow) {
  for (int c = 0; c < kCases; ++c) {
    const Limit l = RandomLimit(rng_, Algorithm::kSlidingLog);
    Traffic traffic(rng_(), l);
    const auto events = Drive(limiter_, clock_, {l}, traffic, 200, "log" + std::to_string(c))[0];
    for (const Event& e : events) {
      if (e.d.allowed && e.cost > 0) {
        ASSERT_LE(AdmittedIn(events, e.t - l.window_ms, e.t), l.limit) << FormatLimit(l);
      }
    }
    // Exact also means: a denial happens only when the trailing window is really full.
    for (const Event& e : events) {
      if (!e.d.allowed && e.d.retry_after_ms != kRetryNever) {
        ASSERT_GT(AdmittedIn(events, e.t - l.window_ms, e.t) + e.cost, l.limit);
      }
    }
  }
}

TEST_P(Properties, FixedWindowMatchesModelAndNeverExceedsLimitPerWindow) {
  for (int c = 0; c < kCases; ++c) {
    const Limit l = RandomLimit(rng_, Algorithm::kFixedWindow);
    Traffic traffic(rng_(), l);
    const auto events = Drive(limiter_, clock_, {l}, traffic, 200, "fw" + std::to_string(c))[0];
    int64_t start = INT64_MIN / 2;
    int64_t count = 0;
    for (const Event& e : events) {
      if (e.t >= start + l.window_ms) count = 0;
      const bool fits = e.cost <= l.limit && count + e.cost <= l.limit;
      ASSERT_EQ(e.d.allowed, fits) << FormatLimit(l) << " at " << e.t;
      if (fits && e.cost > 0) {
        if (count == 0) start = e.t;
        count += e.cost;
      }
      ASSERT_LE(count, l.limit);
    }
  }
}

TEST_P(Properties, TokenBucketAndGcraAgreeAndRespectBurstPlusRate) {
  for (int c = 0; c < kCases; ++c) {
    Limit tb = RandomLimit(rng_, Algorithm::kTokenBucket);
    Limit gcra = tb;
    gcra.algorithm = Algorithm::kGcra;
    Traffic traffic(rng_(), tb);
    const auto events = Drive(limiter_, clock_, {tb, gcra}, traffic, 150, "tb" + std::to_string(c));
    for (size_t i = 0; i < events[0].size(); ++i) {
      const Decision& a = events[0][i].d;
      const Decision& b = events[1][i].d;
      ASSERT_EQ(a.allowed, b.allowed) << FormatLimit(tb) << " step " << i;
      ASSERT_EQ(a.remaining, b.remaining);
      ASSERT_EQ(a.retry_after_ms, b.retry_after_ms);
      ASSERT_EQ(a.reset_after_ms, b.reset_after_ms);
    }
    // In any interval [t_i, t_j]: admitted * window <= burst * window + limit * (t_j - t_i).
    const auto& ev = events[0];
    for (size_t i = 0; i < ev.size(); ++i) {
      int64_t sum = 0;
      for (size_t j = i; j < ev.size(); ++j) {
        if (ev[j].d.allowed) sum += ev[j].cost;
        ASSERT_LE(sum * tb.window_ms, tb.capacity() * tb.window_ms + tb.limit * (ev[j].t - ev[i].t))
            << FormatLimit(tb);
      }
    }
  }
}

TEST_P(Properties, SlidingWindowCounterStaysWithinItsBound) {
  // Stated bound: an aligned window never admits more than LIMIT, and any trailing window of
  // length WINDOW admits fewer than 2 * LIMIT.
  for (int c = 0; c < kCases; ++c) {
    const Limit l = RandomLimit(rng_, Algorithm::kSlidingWindow);
    Traffic traffic(rng_(), l);
    const auto events = Drive(limiter_, clock_, {l}, traffic, 200, "sw" + std::to_string(c))[0];
    for (const Event& e : events) {
      if (!e.d.allowed || e.cost == 0) continue;
      const int64_t start = e.t - e.t % l.window_ms;
      ASSERT_LE(AdmittedIn(events, start - 1, start + l.window_ms - 1), l.limit);
      ASSERT_LT(AdmittedIn(events, e.t - l.window_ms, e.t), 2 * l.limit);
    }
  }
}

TEST_P(Properties, LeakyBucketOutflowIsConstant) {
  for (int c = 0; c < kCases; ++c) {
    const Limit l = RandomLimit(rng_, Algorithm::kLeakyBucket);
    Traffic traffic(rng_(), l);
    const auto events = Drive(limiter_, clock_, {l}, traffic, 150, "lb" + std::to_string(c))[0];
    std::vector<std::pair<int64_t, int64_t>> starts;  // (time it may proceed, cost)
    for (const Event& e : events) {
      if (!e.d.allowed || e.cost == 0) continue;
      ASSERT_GE(e.d.retry_after_ms, 0);
      // Nobody waits longer than a full queue takes to drain.
      ASSERT_LE(e.d.retry_after_ms * l.limit, l.capacity() * l.window_ms + l.limit);
      starts.emplace_back(e.t + e.d.retry_after_ms, e.cost);
    }
    // Requests proceed in order and no faster than the rate (within the 1 ms rounding).
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t sum = 0;
      for (size_t j = i + 1; j < starts.size(); ++j) {
        sum += starts[j - 1].second;
        ASSERT_GE(starts[j].first, starts[j - 1].first);
        ASSERT_LT(sum * l.window_ms, l.limit * (starts[j].first - starts[i].first) + l.limit)
            << FormatLimit(l);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, Properties, ::testing::Bool(),
                         [](const auto& info) { return PathName(info.param); });

}  // namespace
}  // namespace rl

// rl::KeyState, the caller-held state of one key (rl.so's value type): it must answer exactly as
// the sharded Limiter does for the same calls at the same times, survive Encode/Decode, and
// refuse malformed encodings without crashing.
#include "rl/key_state.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rl/clock.h"
#include "rl/limiter.h"
#include "step.h"

namespace rl {
namespace {

Limit L(Algorithm a, int64_t limit, int64_t window_ms, int64_t burst = 0) {
  return Limit{a, limit, window_ms, burst};
}

void ExpectSame(const Decision& a, const Decision& b, const std::string& where) {
  ASSERT_EQ(a.allowed, b.allowed) << where;
  EXPECT_EQ(a.limit, b.limit) << where;
  EXPECT_EQ(a.remaining, b.remaining) << where;
  EXPECT_EQ(a.retry_after_ms, b.retry_after_ms) << where;
  EXPECT_EQ(a.reset_after_ms, b.reset_after_ms) << where;
  EXPECT_EQ(a.binding, b.binding) << where;
  ASSERT_EQ(a.count, b.count) << where;
  for (size_t i = 0; i < a.count; ++i) {
    EXPECT_EQ(a.limits[i].remaining, b.limits[i].remaining) << where << " limit " << i;
    EXPECT_EQ(a.limits[i].retry_after_ms, b.limits[i].retry_after_ms) << where << " limit " << i;
  }
}

TEST(KeyState, FreshStateAllowsAndCountsDown) {
  KeyState s;
  const Limit limits[] = {L(Algorithm::kTokenBucket, 2, 60'000)};
  bool changed = false;
  auto d = s.Check("", limits, 1, 1000, &changed);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->remaining, 1);
  EXPECT_TRUE(changed);
  EXPECT_EQ(s.size(), 1u);
  d = s.Check("", limits, 1, 1000, &changed);
  EXPECT_TRUE(d->allowed);
  d = s.Check("", limits, 1, 1000, &changed);
  EXPECT_FALSE(d->allowed);
  EXPECT_FALSE(changed) << "a denied check changes nothing";
  EXPECT_EQ(d->retry_after_ms, 30'000);
  EXPECT_EQ(s.ExpiryMs(), 1000 + 60'000);
}

TEST(KeyState, ScopesAndWindowsAreSeparateStates) {
  KeyState s;
  const Limit a[] = {L(Algorithm::kFixedWindow, 1, 1000)};
  const Limit b[] = {L(Algorithm::kFixedWindow, 1, 2000)};
  bool changed;
  EXPECT_TRUE(s.Check("", a, 1, 0, &changed)->allowed);
  EXPECT_TRUE(s.Check("api", a, 1, 0, &changed)->allowed);
  EXPECT_TRUE(s.Check("", b, 1, 0, &changed)->allowed);
  EXPECT_FALSE(s.Check("", a, 1, 0, &changed)->allowed);
  EXPECT_FALSE(s.Check("api", a, 1, 0, &changed)->allowed);
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.Reset("api", a), 1u);
  EXPECT_EQ(s.Reset("api", a), 0u);
  EXPECT_TRUE(s.Check("api", a, 1, 0, &changed)->allowed);
}

TEST(KeyState, AllOrNothingAcrossLimits) {
  KeyState s;
  const Limit both[] = {L(Algorithm::kSlidingWindow, 100, 60'000),
                        L(Algorithm::kFixedWindow, 2, 86'400'000)};
  bool changed;
  EXPECT_TRUE(s.Check("", both, 1, 0, &changed)->allowed);
  EXPECT_TRUE(s.Check("", both, 1, 0, &changed)->allowed);
  auto d = s.Check("", both, 1, 0, &changed);
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->binding, 1);
  // The minute window was not charged by the denied call.
  auto p = s.Peek("", both, 0, 0);
  EXPECT_EQ(p->limits[0].remaining, 98);
}

TEST(KeyState, PeekChangesNothingEvenForAnOldLog) {
  KeyState s;
  const Limit log[] = {L(Algorithm::kSlidingLog, 3, 1000)};
  bool changed;
  for (int i = 0; i < 3; ++i) (void)s.Check("", log, 1, i, &changed);
  std::string before;
  s.Encode(&before);
  auto d = s.Peek("", log, 1, 1500);  // every run has left the window
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->remaining, 2);  // what would be left after this call of cost 1
  std::string after;
  s.Encode(&after);
  EXPECT_EQ(before, after);
}

TEST(KeyState, PruneDropsFreshStatesAndExpiryIsTheLatest) {
  KeyState s;
  bool changed;
  const Limit a[] = {L(Algorithm::kGcra, 10, 1000)};
  const Limit b[] = {L(Algorithm::kSlidingLog, 10, 5000)};
  (void)s.Check("", a, 1, 0, &changed);
  (void)s.Check("", b, 1, 0, &changed);
  EXPECT_EQ(s.ExpiryMs(), 5000);
  EXPECT_EQ(s.Prune(99), 0u);
  EXPECT_EQ(s.Prune(100), 1u);  // one GCRA token of 10 per second refills in 100 ms
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(s.Prune(5000), 1u);
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.MemoryBytes(), 0u);
}

TEST(KeyState, ErrorsChangeNothing) {
  KeyState s;
  bool changed = true;
  const Limit bad[] = {L(Algorithm::kSlidingLog, 5, 1000, /*burst=*/3)};
  EXPECT_FALSE(s.Check("", bad, 1, 0, &changed).ok());
  EXPECT_FALSE(changed);
  const Limit ok[] = {L(Algorithm::kGcra, 5, 1000)};
  EXPECT_FALSE(s.Check("", ok, -1, 0, &changed).ok());
  EXPECT_TRUE(s.empty());
}

TEST(KeyState, TooManyStatesUnderOneKeyIsAnError) {
  KeyState s;
  bool changed;
  for (size_t i = 0; i < KeyState::kMaxStates; ++i) {
    const Limit l[] = {L(Algorithm::kFixedWindow, 5, 1000 + static_cast<int64_t>(i))};
    ASSERT_TRUE(s.Check("", l, 1, 0, &changed).ok()) << i;
  }
  const Limit one_more[] = {L(Algorithm::kFixedWindow, 5, 999)};
  auto d = s.Check("", one_more, 1, 0, &changed);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.size(), KeyState::kMaxStates);
}

// The property that makes rl.so and the Limiter one engine: for random checks, peeks, resets,
// refunds, charges, acquires and releases of random limits (some with BLOCK, some with a
// CONCURRENCY limit) under random scopes at random times, both answer the same, and so does a
// KeyState that was encoded and decoded in between. Run with the Limiter's lock-free path of hot
// GCRA and token-bucket keys (LimiterOptions::hot_keys) and without it.
void AnswersExactlyAsTheLimiter(bool hot) {
  std::mt19937_64 rng(20261201);
  auto random_limit = [&](Algorithm a) {
    Limit l;
    l.algorithm = a;
    l.limit = 1 + static_cast<int64_t>(rng() % 20);
    l.window_ms = 1 + static_cast<int64_t>(rng() % 5000);
    if (internal::HasBurst(l.algorithm) && rng() % 2) l.burst = 1 + rng() % 30;
    if (rng() % 4 == 0) l.block_ms = 1 + static_cast<int64_t>(rng() % 3000);
    return l;
  };
  for (int round = 0; round < 60; ++round) {
    ManualClock clock(1'000'000);
    Limiter limiter(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock, .hot_keys = hot});
    KeyState state;
    // Rate sets, then sets with a CONCURRENCY limit (acquired; peeked, reset).
    std::vector<std::vector<Limit>> sets;
    for (int k = 0; k < 6; ++k) {
      std::vector<Limit> set;
      if (k >= 4) {
        set.push_back(Limit{Algorithm::kConcurrency, 1 + static_cast<int64_t>(rng() % 4),
                            1 + static_cast<int64_t>(rng() % 4000)});
      }
      const int n = (k >= 4 ? 0 : 1) + static_cast<int>(rng() % 3);
      for (int j = 0; j < n; ++j) {
        const Limit l = random_limit(static_cast<Algorithm>(rng() % 6));
        bool dup = false;
        for (const Limit& o : set) dup |= o.algorithm == l.algorithm && o.window_ms == l.window_ms;
        if (!dup) set.push_back(l);
      }
      sets.push_back(set);
    }
    const char* scopes[] = {"", "api", "search"};
    std::vector<std::pair<std::string, std::string>> leases;  // (limiter's id, state's id)
    for (int step = 0; step < 500; ++step) {
      clock.Advance(static_cast<int64_t>(rng() % 300));
      const size_t which = rng() % sets.size();
      const auto& set = sets[which];
      const bool acquire_set = set[0].algorithm == Algorithm::kConcurrency;
      const std::string_view scope = scopes[rng() % 3];
      const int64_t cost = static_cast<int64_t>(rng() % 4);
      const std::string where = "round " + std::to_string(round) + " step " + std::to_string(step);
      const int op = static_cast<int>(rng() % 16);
      bool changed = false;
      if (op == 0) {
        auto a = limiter.Peek(scope, "k", set, cost);
        auto b = state.Peek(scope, set, cost, clock.NowMs());
        ASSERT_TRUE(a.ok() && b.ok()) << where;
        ExpectSame(*a, *b, where + " peek");
        continue;
      }
      if (op == 1 && rng() % 4 == 0) {
        // The counts may differ for states already equivalent to fresh (a KeyState prunes them
        // on its next write, the Limiter on its sweep); what follows must not.
        limiter.Reset(scope, "k", set);
        state.Reset(scope, set);
        continue;
      }
      if ((op == 2 || op == 3) && !acquire_set) {
        const int64_t amount = static_cast<int64_t>(rng() % 25);
        auto a = op == 2 ? limiter.Refund(scope, "k", set, amount)
                         : limiter.Charge(scope, "k", set, amount);
        auto b = op == 2 ? state.Refund(scope, set, amount, clock.NowMs(), &changed)
                         : state.Charge(scope, set, amount, clock.NowMs(), &changed);
        ASSERT_EQ(a.ok(), b.ok()) << where;
        if (!a.ok()) {
          EXPECT_EQ(a.status(), b.status()) << where;
          continue;
        }
        ExpectSame(*a, *b, where + (op == 2 ? " refund" : " charge"));
        continue;
      }
      if (op == 5 && !acquire_set) {
        // A charge bounded by a wait (RL.CHECK ... MAXWAIT); with BLOCK limits among the sets,
        // this is where the two once parted: a refused one starts no block, nor shows one.
        const int64_t amount = static_cast<int64_t>(rng() % 25);
        const int64_t max_wait = static_cast<int64_t>(rng() % 3000);
        auto a = limiter.ChargeWithin(scope, "k", set, amount, max_wait);
        auto b = state.ChargeWithin(scope, set, amount, max_wait, clock.NowMs(), &changed);
        ASSERT_EQ(a.ok(), b.ok()) << where;
        if (!a.ok()) {
          EXPECT_EQ(a.status(), b.status()) << where;
          continue;
        }
        ExpectSame(*a, *b, where + " charge within " + std::to_string(max_wait));
        continue;
      }
      if (op == 4 && !leases.empty()) {
        const size_t i = rng() % leases.size();
        auto a = limiter.Release("k", leases[i].first);
        auto b = state.Release("k", leases[i].second, clock.NowMs(), &changed);
        ASSERT_TRUE(a.ok() && b.ok()) << where;
        EXPECT_EQ(*a, *b) << where << " release";
        leases.erase(leases.begin() + static_cast<ptrdiff_t>(i));
        continue;
      }
      if (acquire_set) {
        absl::StatusOr<Lease> a = limiter.Acquire(scope, "k", set, cost);
        std::string id;
        auto b = state.Acquire(scope, "k", set, cost, clock.NowMs(), &id, &changed);
        ASSERT_TRUE(a.ok() && b.ok()) << where;
        ExpectSame(a->decision(), *b, where + " acquire");
        ASSERT_EQ(a->held(), !id.empty()) << where;
        if (a->held()) {
          EXPECT_TRUE(changed) << where;
          leases.emplace_back(a->Detach(), id);
        }
        continue;
      }
      auto a = limiter.Check(scope, "k", set, cost);
      auto b = state.Check(scope, set, cost, clock.NowMs(), &changed);
      ASSERT_TRUE(a.ok() && b.ok()) << where;
      ExpectSame(*a, *b, where);
      // Denied checks and peeks report a change only when a changed limit moved an expiry (or
      // a penalty block started).
      if (a->allowed && cost > 0) {
        EXPECT_TRUE(changed) << where;
      }
      if (rng() % 10 == 0) {
        std::string bytes;
        state.Encode(&bytes);
        auto decoded = KeyState::Decode(bytes);
        ASSERT_TRUE(decoded.ok()) << decoded.status();
        std::string again;
        decoded->Encode(&again);
        ASSERT_EQ(bytes, again) << where;
        state = std::move(*decoded);
      }
    }
  }
}

TEST(KeyState, AnswersExactlyAsTheLimiter) { AnswersExactlyAsTheLimiter(/*hot=*/false); }
TEST(KeyState, AnswersExactlyAsTheLimiterWithHotKeys) { AnswersExactlyAsTheLimiter(/*hot=*/true); }

// A bounded charge that must wait (MAXWAIT) on a limit with BLOCK: both admit it with the wait,
// and neither refuses it for the block a plain check's denial would start (it starts none).
TEST(KeyState, ChargeWithinABlockLimitAnswersAsTheLimiter) {
  ManualClock clock(1'000'000);
  Limiter limiter(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  KeyState state;
  Limit l = L(Algorithm::kTokenBucket, 1, 1000);
  l.block_ms = 2000;
  const std::vector<Limit> set = {l};
  bool changed = false;
  ASSERT_TRUE(limiter.Check("", "k", set, 1)->allowed);
  ASSERT_TRUE(state.Check("", set, 1, clock.NowMs(), &changed)->allowed);
  auto a = limiter.ChargeWithin("", "k", set, 1, 1500);
  auto b = state.ChargeWithin("", set, 1, 1500, clock.NowMs(), &changed);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->allowed);
  EXPECT_EQ(a->retry_after_ms, 1000);
  ExpectSame(*a, *b, "charge within");
}

// Blocks and leases make a version 2 encoding; without them a state still encodes as version 1
// (what an older rl.so reads), and both decode.
TEST(KeyState, EncodingVersions) {
  KeyState s;
  bool changed;
  Limit fw{Algorithm::kFixedWindow, 1, 60'000};
  fw.block_ms = 3'600'000;
  ASSERT_TRUE(s.Check("", {fw}, 1, 0, &changed)->allowed);
  std::string bytes;
  s.Encode(&bytes);
  EXPECT_EQ(bytes[0], 1);
  ASSERT_FALSE(s.Check("", {fw}, 1, 0, &changed)->allowed);
  EXPECT_TRUE(changed) << "the block started";
  bytes.clear();
  s.Encode(&bytes);
  EXPECT_EQ(bytes[0], 2);
  auto decoded = KeyState::Decode(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->Check("", {fw}, 1, 120'000, &changed)->retry_after_ms, 3'480'000);
  EXPECT_EQ(decoded->ExpiryMs(), 3'600'000) << "the key lives as long as its block";
  std::string id;
  const Limit slots{Algorithm::kConcurrency, 2, 10'000};
  ASSERT_TRUE(decoded->Acquire("p", "user", {slots}, 1, 0, &id, &changed).ok());
  ASSERT_FALSE(id.empty());
  bytes.clear();
  decoded->Encode(&bytes);
  auto again = KeyState::Decode(bytes);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again->Release("user", id, 5, &changed), true);
  EXPECT_TRUE(changed);
  EXPECT_EQ(*again->Release("user", id, 5, &changed), false);
  EXPECT_FALSE(again->Release("someone", id, 5, &changed).ok());
  EXPECT_FALSE(changed);
  // A version 1 encoding carries no blocks or leases.
  std::string v1 = bytes;
  v1[0] = 1;
  EXPECT_FALSE(KeyState::Decode(v1).ok());
}

TEST(KeyState, DecodeRefusesMalformedInputWithoutCrashing) {
  KeyState s;
  bool changed;
  const Limit limits[] = {L(Algorithm::kSlidingLog, 50, 10'000),
                          L(Algorithm::kTokenBucket, 5, 1000),
                          L(Algorithm::kSlidingWindow, 9, 3000)};
  for (int t = 0; t < 20; ++t) (void)s.Check("p", limits, 1 + t % 3, t * 7, &changed);
  Limit blocking{Algorithm::kFixedWindow, 1, 60'000};
  blocking.block_ms = 60'000;
  for (int t = 0; t < 2; ++t) (void)s.Check("p", {blocking}, 1, 200, &changed);
  std::string lease;
  (void)s.Acquire("p", "k", {Limit{Algorithm::kConcurrency, 3, 5000}}, 1, 200, &lease, &changed);
  (void)s.Charge("", {Limit{Algorithm::kGcra, 5, 1000}}, 50, 200, &changed);
  std::string good;
  s.Encode(&good);
  ASSERT_EQ(good[0], 2);
  ASSERT_TRUE(KeyState::Decode(good).ok());
  EXPECT_FALSE(KeyState::Decode("").ok());
  EXPECT_FALSE(KeyState::Decode(std::string("\x04\x00\x00", 3)).ok()) << "unknown version";
  EXPECT_FALSE(KeyState::Decode(good + "x").ok()) << "trailing bytes";
  for (size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_FALSE(KeyState::Decode(good.substr(0, cut)).ok()) << cut;
  }
  // Random byte flips: each either decodes into something usable or is refused.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string bad = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<char>(rng());
    auto d = KeyState::Decode(bad);
    if (d.ok()) {
      (void)d->Check("p", limits, 1, 1'000'000, &changed);
      (void)d->Peek("p", limits, 1, -1'000'000);
      (void)d->Check("p", {blocking}, 1, 300, &changed);
      (void)d->Charge("p", limits, 7, 400, &changed);
      (void)d->Refund("p", limits, 9, 500, &changed);
      std::string id;
      (void)d->Acquire("p", "k", {Limit{Algorithm::kConcurrency, 3, 5000}}, 1, 600, &id, &changed);
      (void)d->Release("k", lease, 700, &changed);
      (void)d->ExpiryMs();
    }
  }
}

// A decoded state's words come from outside (rl.so's RESTORE and RL.SETSTATE): extreme values
// must stay defined behaviour in every algorithm (tools/sanitize runs this under UBSan; the
// random flips above found a negative shift in the token bucket and could miss the others).
TEST(KeyState, ExtremeStoredWordsAreDefined) {
  auto put = [](std::string* out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  const int64_t extremes[] = {
      INT64_MIN,        INT64_MIN + 1,           -(int64_t{1} << 56), -1,       0, 1,
      int64_t{1} << 56, (int64_t{62} << 56) | 5, INT64_MAX - 1,       INT64_MAX};
  const int64_t windows[] = {1000, kMaxWindowMs};
  const int64_t nows[] = {-1'000'000, 0, 1'800'000'000'000};
  int decoded = 0;
  for (uint8_t algorithm : {0, 1, 3, 4, 5}) {
    const size_t words = algorithm == 3 ? 3 : 2;
    for (int64_t window : windows) {
      for (int64_t a : extremes) {
        for (int64_t b : extremes) {
          std::string bytes;
          put(&bytes, 1, 1);  // version
          put(&bytes, 1, 2);  // one state
          put(&bytes, 0, 8);  // inline scope
          put(&bytes, algorithm, 1);
          put(&bytes, static_cast<uint64_t>(window), 8);
          put(&bytes, static_cast<uint64_t>(INT64_MAX), 8);  // expiry
          put(&bytes, static_cast<uint64_t>(a), 8);
          put(&bytes, static_cast<uint64_t>(b), 8);
          if (words == 3) put(&bytes, static_cast<uint64_t>(a ^ b), 8);
          auto state = KeyState::Decode(bytes);
          ASSERT_TRUE(state.ok()) << state.status();
          ++decoded;
          const Algorithm alg = static_cast<Algorithm>(algorithm);
          const bool burst = alg != Algorithm::kSlidingWindow && alg != Algorithm::kFixedWindow;
          const Limit limits[] = {L(alg, 5, window), L(alg, kMaxLimit, window),
                                  L(alg, 1, window, burst ? kMaxLimit : 0)};
          for (const Limit& limit : limits) {
            for (int64_t now : nows) {
              for (int64_t cost : {int64_t{0}, int64_t{1}, int64_t{5}, kMaxLimit}) {
                bool changed = false;
                (void)state->Peek("", absl::MakeConstSpan(&limit, 1), cost, now);
                (void)state->Check("", absl::MakeConstSpan(&limit, 1), cost, now, &changed);
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(decoded, 5 * 2 * 10 * 10);
}

TEST(KeyState, AllocatorHookSeesEveryBlock) {
  static int live = 0;
  StateAllocator counting{[](size_t n) -> void* {
                            ++live;
                            return std::malloc(n);
                          },
                          [](void* p, size_t n) -> void* {
                            if (p == nullptr) ++live;
                            return std::realloc(p, n);
                          },
                          [](void* p) {
                            --live;
                            std::free(p);
                          }};
  SetStateAllocator(counting);
  {
    KeyState s;
    bool changed;
    const Limit limits[] = {L(Algorithm::kSlidingLog, 50, 10'000), L(Algorithm::kGcra, 5, 1000)};
    (void)s.Check("", limits, 1, 0, &changed);
    EXPECT_EQ(live, 2);  // the block and the log
  }
  EXPECT_EQ(live, 0);
  SetStateAllocator(StateAllocator{&std::malloc, &std::realloc, &std::free});
}

// One validator: the engine's branch-free fast test accepts exactly what the validator accepts.
TEST(Validation, FastPredicateEqualsTheValidator) {
  std::mt19937_64 rng(99);
  const int64_t edges[] = {-1,
                           0,
                           1,
                           2,
                           kMaxLimit - 1,
                           kMaxLimit,
                           kMaxLimit + 1,
                           kMaxWindowMs,
                           kMaxWindowMs + 1,
                           INT64_MIN,
                           INT64_MAX};
  auto pick = [&]() {
    return rng() % 2 ? edges[rng() % std::size(edges)] : static_cast<int64_t>(rng() % 100);
  };
  for (int i = 0; i < 200000; ++i) {
    std::vector<Limit> limits(rng() % 10);
    for (Limit& l : limits) {
      l.algorithm = static_cast<Algorithm>(rng() % 12);
      l.limit = pick();
      l.window_ms = rng() % 3 ? 1 + static_cast<int64_t>(rng() % 4) : pick();
      l.burst = rng() % 2 ? 0 : pick();
      l.block_ms = rng() % 2 ? 0 : pick();
    }
    const int64_t cost = rng() % 5 ? static_cast<int64_t>(rng() % 3) : pick();
    ASSERT_EQ(internal::CheckValid(limits, cost), internal::ValidateCheck(limits, cost).ok())
        << "case " << i;
  }
}

}  // namespace
}  // namespace rl

// The lock-free path of hot keys (core/src/hot_keys.h, LimiterOptions::hot_keys), GCRA's word and
// the token bucket's pair: it answers exactly as the locked path under random traffic that mixes
// every operation on the key, many threads on one hot key admit exactly the limit (also while the
// word keeps being folded back), a hot entry decides while its shard's lock is held by someone
// else, and a word read under an earlier binding of an entry never lands.
#include "hot_keys.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algorithms.h"
#include "gtest/gtest.h"
#include "rl/limiter.h"
#include "store.h"

namespace rl {
namespace {

void ExpectSame(const Decision& a, const Decision& b, const std::string& where) {
  ASSERT_EQ(a.allowed, b.allowed) << where;
  EXPECT_EQ(a.limit, b.limit) << where;
  EXPECT_EQ(a.remaining, b.remaining) << where;
  EXPECT_EQ(a.retry_after_ms, b.retry_after_ms) << where;
  EXPECT_EQ(a.reset_after_ms, b.reset_after_ms) << where;
  EXPECT_EQ(a.binding, b.binding) << where;
  EXPECT_EQ(a.count, b.count) << where;
  EXPECT_EQ(a.decided_by, b.decided_by) << where;
  for (size_t i = 0; i < a.count; ++i) {
    EXPECT_EQ(a.limits[i].allowed, b.limits[i].allowed) << where << " limit " << i;
    EXPECT_EQ(a.limits[i].remaining, b.limits[i].remaining) << where << " limit " << i;
    EXPECT_EQ(a.limits[i].retry_after_ms, b.limits[i].retry_after_ms) << where << " limit " << i;
    EXPECT_EQ(a.limits[i].reset_after_ms, b.limits[i].reset_after_ms) << where << " limit " << i;
  }
}

// Two limiters, hot keys on and off, on clocks that move together, driven through the same random
// calls on a few keys: checks and peeks of one GCRA or token-bucket limit (the hot path's calls)
// between refunds, charges, bounded charges, resets, checks of several limits, sweeps and changed
// limits (the locked accesses that must see the hot word), with time steps from nothing to years
// (a state that leaves its entry's range is rebound), the clock going back, and limits up to the
// largest (a token bucket's outside its exact form stays on the lock). Every answer must be the
// same, field by field.
// The algorithms of the lock-free path, each test run for both.
class HotKeys : public ::testing::TestWithParam<Algorithm> {};
INSTANTIATE_TEST_SUITE_P(Both, HotKeys,
                         ::testing::Values(Algorithm::kGcra, Algorithm::kTokenBucket),
                         [](const auto& info) { return std::string(AlgorithmName(info.param)); });

TEST_P(HotKeys, SameDecisionsAsTheLockedPath) {
  const Algorithm algorithm = GetParam();
  std::mt19937_64 rng(20261202 + static_cast<int>(algorithm));
  auto u = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 40; ++round) {
    ManualClock clock_hot(1'000'000), clock_locked(1'000'000);
    Limiter hot(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_hot, .hot_keys = true});
    Limiter locked(
        LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_locked, .hot_keys = false});
    auto random_limit = [&](int64_t window) {
      Limit l{algorithm, u(1, 20), window};
      if (u(0, 9) == 0) l.limit = u(1, kMaxLimit);  // a payload near the word's bounds
      if (u(0, 2) == 0) l.burst = u(1, 30);
      return l;
    };
    const std::vector<std::string> keys = {"a", "b", "c"};
    std::vector<Limit> limits;
    // Now and then a window so long that a large capacity leaves the token bucket's exact form
    // (capacity * window >= 2^56: such a limit stays on the lock).
    for (size_t k = 0; k < keys.size(); ++k) {
      limits.push_back(random_limit(u(0, 4) == 0 ? u(100'000, int64_t{1} << 36) : u(1, 5000)));
    }
    const Limit other{Algorithm::kFixedWindow, 50, 10'000};
    for (int step = 0; step < 1500; ++step) {
      const std::string where = "round " + std::to_string(round) + " step " + std::to_string(step);
      const int64_t gap = u(0, 99) == 0 ? u(0, int64_t{1} << 40) : u(0, 3) == 0 ? u(0, 400) : 0;
      clock_hot.Advance(gap);
      clock_locked.Advance(gap);
      if (u(0, 29) == 0) {  // the clock goes back: a check older than the stored time
        const int64_t back = u(0, 3) == 0 ? u(0, int64_t{1} << 30) : u(0, 500);
        clock_hot.Set(clock_hot.NowMs() - back);
        clock_locked.Set(clock_locked.NowMs() - back);
      }
      const size_t k = static_cast<size_t>(u(0, 2));
      const std::string& key = keys[k];
      if (u(0, 49) == 0) limits[k] = random_limit(limits[k].window_ms);  // same state, new limit
      const std::vector<Limit> one = {limits[k]};
      const int64_t cost = u(0, 9) == 0 ? u(0, 40) : u(0, 2);
      const int op = static_cast<int>(u(0, 39));
      absl::StatusOr<Decision> a, b;
      if (op == 0) {
        const int64_t amount = u(0, 5);
        a = hot.Refund("", key, one, amount);
        b = locked.Refund("", key, one, amount);
      } else if (op == 1) {
        const int64_t amount = u(0, 30);
        a = hot.Charge("", key, one, amount);
        b = locked.Charge("", key, one, amount);
      } else if (op == 2) {
        const int64_t amount = u(0, 10), wait = u(0, 3000);
        a = hot.ChargeWithin("", key, one, amount, wait);
        b = locked.ChargeWithin("", key, one, amount, wait);
      } else if (op == 3) {
        EXPECT_EQ(hot.Reset("", key, one), locked.Reset("", key, one)) << where;
        continue;
      } else if (op == 4) {
        a = hot.Check("", key, {limits[k], other}, cost);
        b = locked.Check("", key, {limits[k], other}, cost);
      } else if (op == 5) {
        hot.Sweep(SIZE_MAX);
        locked.Sweep(SIZE_MAX);
        continue;
      } else if (op < 12) {
        a = hot.Peek("", key, one, cost);
        b = locked.Peek("", key, one, cost);
      } else {
        a = hot.Check("", key, one, cost);
        b = locked.Check("", key, one, cost);
      }
      ASSERT_EQ(a.ok(), b.ok()) << where;
      if (!a.ok()) continue;
      ExpectSame(*a, *b, where);
      if (HasFailure()) return;
    }
  }
}

// N threads on one hot key admit exactly the limit: the seed's example (limit 5, 8 parallel
// requests: 5 pass, 3 are told to wait) and a long run, with the key made hot first.
TEST_P(HotKeys, ManyThreadsOnOneHotKeyAdmitExactlyTheLimit) {
  ManualClock clock(0);  // stands still: nothing refills while the threads race
  Limiter limiter(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  for (const int64_t limit : {int64_t{5}, int64_t{20'000}}) {
    const Limit l{GetParam(), limit + 2, 3600 * 1000};
    const std::string key = "hot" + std::to_string(limit);
    // Two checks through the lock store the state and bind it to its hot entry.
    ASSERT_TRUE(limiter.Check("", key, {l})->allowed);
    ASSERT_TRUE(limiter.Check("", key, {l})->allowed);
    std::atomic<int64_t> allowed{0}, waits{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    const int per_thread = limit == 5 ? 1 : 5000;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < per_thread; ++i) {
          const Decision d = *limiter.Check("", key, {l});
          allowed += d.allowed;
          waits += !d.allowed && d.retry_after_ms > 0;
        }
      });
    }
    go = true;
    for (auto& th : threads) th.join();
    EXPECT_EQ(allowed.load(), limit);
    EXPECT_EQ(waits.load(), 8 * per_thread - limit);
    EXPECT_EQ(limiter.Peek("", key, {l}, 0)->remaining, 0);
  }
}

// Threads on one hot key while another keeps folding its word back into the table (sweeps,
// snapshots, peeks that would admit, multi-limit checks of cost 0: each takes the lock, none
// changes the state) and the key keeps being made hot again: still exactly the limit.
TEST_P(HotKeys, FoldsBesideLockFreeChecksLoseNothing) {
  ManualClock clock(0);
  Limiter limiter(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  const int64_t limit = 20'000;
  const Limit l{GetParam(), limit + 2, 3600 * 1000};
  const Limit other{Algorithm::kFixedWindow, 10, 1000};
  ASSERT_TRUE(limiter.Check("", "k", {l})->allowed);
  ASSERT_TRUE(limiter.Check("", "k", {l})->allowed);
  std::atomic<int64_t> allowed{0};
  std::atomic<int> running{4};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 8000; ++i) allowed += limiter.Check("", "k", {l})->allowed;
      --running;
    });
  }
  int folds = 0;
  while (running.load() > 0 || folds < 40) {
    switch (folds++ % 4) {
      case 0:
        limiter.Sweep(SIZE_MAX);
        break;
      case 1: {
        std::string snapshot;
        ASSERT_TRUE(limiter.ExportState(&snapshot).ok());
        break;
      }
      case 2:
        (void)limiter.Peek("", "k", {l}, 1);
        break;
      case 3:
        (void)limiter.Check("", "k", {l, other}, 0);
        break;
    }
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(allowed.load(), limit);
  EXPECT_EQ(limiter.Peek("", "k", {l}, 0)->remaining, 0);
  EXPECT_EQ(limiter.KeyCount(), 1u);
}

// A clock that, read the second time by one chosen thread, stops that thread until released: a
// snapshot reads it first before any lock, then under its (only) shard's lock, which it then
// holds while stopped.
class StoppingClock final : public Clock {
 public:
  int64_t NowMs() const override {
    if (std::this_thread::get_id() == stopped_ && ++reads_ == 2) {
      std::unique_lock<std::mutex> lock(mu_);
      holding_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
    }
    return 1'000'000;
  }
  int64_t WallMs() const override { return 1'700'000'000'000; }
  void StopThisThread() { stopped_ = std::this_thread::get_id(); }
  void WaitHolding() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return holding_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::thread::id stopped_;
  mutable int reads_ = 0;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable bool holding_ = false;
  bool released_ = false;
};

// Through the public interface: while another thread holds the key's shard lock (a snapshot
// stopped inside it), a check of the hot key still decides, and decides right. On the locked
// path it would wait for the lock: the bounded wait below then fails the test.
TEST_P(HotKeys, AHotKeyIsCheckedWhileItsShardIsLocked) {
  StoppingClock clock;
  Limiter limiter(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  const Limit l{GetParam(), 3, 60'000};
  ASSERT_TRUE(limiter.Check("", "k", {l})->allowed);  // the two locked checks that bind it
  ASSERT_TRUE(limiter.Check("", "k", {l})->allowed);
  std::thread exporter([&] {
    clock.StopThisThread();
    std::string snapshot;
    EXPECT_TRUE(limiter.ExportState(&snapshot).ok());
  });
  clock.WaitHolding();
  auto checks = std::async(std::launch::async, [&] {
    const Decision allowed = *limiter.Check("", "k", {l});
    const Decision denied = *limiter.Check("", "k", {l});
    return std::make_pair(allowed, denied);
  });
  const bool decided = checks.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  clock.Release();
  exporter.join();
  EXPECT_TRUE(decided) << "the check waited for the shard lock";
  const auto [allowed, denied] = checks.get();
  EXPECT_TRUE(allowed.allowed);
  EXPECT_EQ(allowed.remaining, 0);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.retry_after_ms, 20'000);
  EXPECT_EQ(limiter.Peek("", "k", {l}, 0)->remaining, 0);  // the fold kept the state
}

// White-box: the entry's word, on a shard of our own.
class HotEntryTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kKey = 0x1234'5678'9abc'def0;
  void Store(uint64_t key, int64_t rel, int64_t word) {
    internal::Slot2 slot{key, codec_.Encode(INT64_MAX, 0), 0, 0, word};
    slot.set_rel_time(rel);
    sh_.mu.AssertHeld();
    sh_.two.insert(slot);
  }
  internal::TwoWordState Slot(uint64_t key) {
    sh_.mu.AssertHeld();
    auto it = sh_.two.find(key);
    return {codec_.FromRel(it->rel_time()), it->word};
  }
  internal::ExpiryCodec codec_{0};
  internal::Shard sh_;
  internal::HotEntry entries_[internal::kHotPerShard];
  const Limit limit_{Algorithm::kGcra, 10, 1000};
};

TEST_F(HotEntryTest, DecidesWhileTheShardIsLockedAndFoldsBackExactly) {
  internal::ShardLock lock(sh_.mu);  // held throughout: the hot path must not need it
  Store(kKey, 500, 3);
  internal::BindHot(entries_, sh_, kKey, 500, 3, limit_);  // asks once: not yet
  LimitResult r;
  EXPECT_FALSE(internal::HotCheck(internal::HotEntryOf(entries_, kKey), kKey, codec_, limit_, 400,
                                  1, true, &r));
  internal::BindHot(entries_, sh_, kKey, 500, 3, limit_);  // twice: bound
  // Another thread decides while this one holds the shard's lock: no lock on that path.
  internal::TwoWordState state = Slot(kKey);
  for (int i = 0; i < 12; ++i) {
    const internal::Step<internal::TwoWordState> want = internal::Gcra(&state, limit_, 400, 1);
    bool decided = false;
    std::thread([&] {
      decided = internal::HotCheck(internal::HotEntryOf(entries_, kKey), kKey, codec_, limit_, 400,
                                   1, true, &r);
    }).join();
    ASSERT_TRUE(decided) << i;
    EXPECT_EQ(r.allowed, want.result.allowed) << i;
    EXPECT_EQ(r.remaining, want.result.remaining) << i;
    EXPECT_EQ(r.retry_after_ms, want.result.retry_after_ms) << i;
    EXPECT_EQ(r.reset_after_ms, want.result.reset_after_ms) << i;
    if (want.result.allowed) state = want.state;
  }
  // The slot is stale until the fold, which writes the word's state back and kills the word.
  internal::FoldHotKey(entries_, sh_, kKey, codec_, 400);
  EXPECT_EQ(Slot(kKey).time, state.time);
  EXPECT_EQ(Slot(kKey).word, state.word);
  EXPECT_FALSE(internal::HotCheck(internal::HotEntryOf(entries_, kKey), kKey, codec_, limit_, 400,
                                  0, true, &r));
}

TEST_F(HotEntryTest, AWordOfAnEarlierBindingNeverLands) {
  internal::ShardLock lock(sh_.mu);  // held throughout: the hot path must not need it
  // A second key with the same entry index (the low bits).
  const uint64_t other = kKey + internal::kHotPerShard;
  Store(kKey, 0, 0);
  Store(other, 0, 0);
  internal::BindHot(entries_, sh_, kKey, 0, 0, limit_);
  internal::BindHot(entries_, sh_, kKey, 0, 0, limit_);
  internal::HotEntry& e = internal::HotEntryOf(entries_, kKey);
  const uint64_t stale = e.word.load();  // what a reader of kKey holds before its CAS
  ASSERT_NE(stale & internal::hot::kLive, 0u);
  // The entry passes to the other key with the very same state (time 0, word 0, same base).
  internal::FoldHot(e, sh_, codec_, 0);
  internal::BindHot(entries_, sh_, other, 0, 0, limit_);
  internal::BindHot(entries_, sh_, other, 0, 0, limit_);
  ASSERT_EQ(e.key.load(), other);
  const uint64_t now_word = e.word.load();
  EXPECT_EQ(now_word & internal::hot::kPayloadMask, stale & internal::hot::kPayloadMask);
  EXPECT_NE(now_word, stale);  // another generation: the stale compare-and-swap fails
  uint64_t expected = stale;
  EXPECT_FALSE(e.word.compare_exchange_strong(expected, stale + 1));
  LimitResult r;
  EXPECT_FALSE(internal::HotCheck(e, kKey, codec_, limit_, 0, 1, true, &r));
  EXPECT_TRUE(internal::HotCheck(e, other, codec_, limit_, 0, 1, true, &r));
}

// The shard's tags of its live entries, which a check reads instead of the entries: set when an
// entry goes live, cleared when it is folded, and a key whose tag happens to equal the live key's
// (same entry, same tag bits) is neither served from nor folds that key's word.
TEST_F(HotEntryTest, TheShardsTagsFollowTheLiveEntriesAndOnlyHint) {
  internal::ShardLock lock(sh_.mu);
  // Same entry index (low bits) and same tag bits (8..14): differs above them.
  const uint64_t twin = kKey ^ (uint64_t{1} << 20);
  ASSERT_EQ(internal::hot::TagOf(twin), internal::hot::TagOf(kKey));
  Store(kKey, 500, 3);
  Store(twin, 500, 3);
  EXPECT_EQ(internal::hot::TagAt(sh_, kKey), 0u);
  internal::BindHot(entries_, sh_, kKey, 500, 3, limit_);
  EXPECT_EQ(internal::hot::TagAt(sh_, kKey), 0u);  // asked once: not live yet
  internal::BindHot(entries_, sh_, kKey, 500, 3, limit_);
  EXPECT_EQ(internal::hot::TagAt(sh_, kKey), internal::hot::TagOf(kKey));
  for (uint64_t i = 1; i < internal::kHotPerShard; ++i) {  // the other entries' stay untagged
    EXPECT_EQ(internal::hot::TagAt(sh_, kKey + i), 0u);
  }
  LimitResult r;
  EXPECT_FALSE(internal::HotCheck(internal::HotEntryOf(entries_, twin), twin, codec_, limit_, 400,
                                  1, true, &r));
  internal::FoldHotKey(entries_, sh_, twin, codec_, 400);  // the twin's access folds nothing
  const internal::TwoWordState before = Slot(kKey);
  const internal::Step<internal::TwoWordState> want = internal::Gcra(&before, limit_, 400, 1);
  ASSERT_TRUE(want.result.allowed);
  EXPECT_TRUE(internal::HotCheck(internal::HotEntryOf(entries_, kKey), kKey, codec_, limit_, 400, 1,
                                 true, &r));
  EXPECT_EQ(Slot(kKey).time, before.time);  // still in the word, not yet in the slot
  internal::FoldHotKey(entries_, sh_, kKey, codec_, 400);
  EXPECT_EQ(internal::hot::TagAt(sh_, kKey), 0u);
  EXPECT_EQ(Slot(kKey).time, want.state.time);  // the check the word served is in the slot now
  EXPECT_EQ(Slot(kKey).word, want.state.word);
  EXPECT_FALSE(internal::HotCheck(internal::HotEntryOf(entries_, kKey), kKey, codec_, limit_, 400,
                                  1, true, &r));
  // A token bucket's pair sets and clears its tag the same way.
  const Limit bucket{Algorithm::kTokenBucket, 10, 1000};
  const uint64_t pair_key = kKey + 1;
  Store(pair_key, 500, 3);
  for (int i = 0; i < 2; ++i) {
    internal::BindPair(entries_, sh_, pair_key, 500, 3, internal::hot::PairExpiry({500, 3}, bucket),
                       bucket, codec_);
  }
  if (internal::hot::PairsSupported()) {
    EXPECT_EQ(internal::hot::TagAt(sh_, pair_key), internal::hot::TagOf(pair_key));
    internal::FoldHotKey(entries_, sh_, pair_key, codec_, 500);
  }
  EXPECT_EQ(internal::hot::TagAt(sh_, pair_key), 0u);
}

// A GCRA word revived under another limit takes a new generation, as a pair does: a reader that
// checked the old limit must not land its compare-and-swap.
TEST_F(HotEntryTest, AWordRevivedUnderAnotherLimitIsANewGeneration) {
  internal::ShardLock lock(sh_.mu);
  Store(kKey, 0, 0);
  internal::BindHot(entries_, sh_, kKey, 0, 0, limit_);
  internal::BindHot(entries_, sh_, kKey, 0, 0, limit_);
  internal::HotEntry& e = internal::HotEntryOf(entries_, kKey);
  const uint64_t stale = e.word.load();
  ASSERT_NE(stale & internal::hot::kLive, 0u);
  internal::FoldHot(e, sh_, codec_, 0);
  internal::BindHot(entries_, sh_, kKey, 0, 0, limit_);  // the same limit: the same word
  EXPECT_EQ(e.word.load(), stale);
  internal::FoldHot(e, sh_, codec_, 0);
  const Limit other{Algorithm::kGcra, 11, 1000};
  internal::BindHot(entries_, sh_, kKey, 0, 0, other);
  ASSERT_NE(e.word.load() & internal::hot::kLive, 0u);
  EXPECT_NE(internal::hot::GenOfWord(e.word.load()), internal::hot::GenOfWord(stale));
  uint64_t expected = stale;
  EXPECT_FALSE(e.word.compare_exchange_strong(expected, stale + 1));
  EXPECT_EQ(e.limit.load(), 11);
}

// The token bucket's pair: decides while the shard is locked, exactly as TokenBucket; a denial
// writes nothing; a clock behind the stored time, a limit outside the exact form and a fold leave
// the call to the lock; the fold writes the pair's state back.
TEST_F(HotEntryTest, APairDecidesWhileTheShardIsLockedAndFoldsBackExactly) {
  if (!internal::hot::PairsSupported()) GTEST_SKIP() << "no 16-byte compare-and-swap here";
  internal::ShardLock lock(sh_.mu);
  const Limit tb{Algorithm::kTokenBucket, 10, 1000};
  Store(kKey, 500, 3000);  // 3 tokens (units of 1/window) at 500 ms
  internal::TwoWordState state = Slot(kKey);
  const int64_t expiry = internal::hot::PairExpiry(state, tb);
  internal::HotEntry& e = internal::HotEntryOf(entries_, kKey);
  LimitResult r;
  internal::BindPair(entries_, sh_, kKey, 500, 3000, expiry, tb, codec_);  // asks once: not yet
  EXPECT_FALSE(internal::HotCheck(e, kKey, codec_, tb, 600, 1, true, &r));
  // An expiry other than the pair's own (a locked call behind the stored time wrote it).
  internal::BindPair(entries_, sh_, kKey, 500, 3000, expiry - 1, tb, codec_);
  EXPECT_FALSE(internal::HotCheck(e, kKey, codec_, tb, 600, 1, true, &r));
  internal::BindPair(entries_, sh_, kKey, 500, 3000, expiry, tb, codec_);   // twice: bound
  EXPECT_FALSE(internal::HotCheck(e, kKey, codec_, tb, 499, 1, true, &r));  // clock behind
  for (int i = 0; i < 12; ++i) {
    const int64_t now = 600 + i / 3;
    const internal::Step<internal::TwoWordState> want = internal::TokenBucket(&state, tb, now, 1);
    const uint64_t word = e.word.load(), tokens = e.tokens.load();
    bool decided = false;
    std::thread([&] {
      decided = internal::HotCheck(e, kKey, codec_, tb, now, 1, true, &r);
    }).join();
    ASSERT_TRUE(decided) << i;
    EXPECT_EQ(r.allowed, want.result.allowed) << i;
    EXPECT_EQ(r.remaining, want.result.remaining) << i;
    EXPECT_EQ(r.retry_after_ms, want.result.retry_after_ms) << i;
    EXPECT_EQ(r.reset_after_ms, want.result.reset_after_ms) << i;
    if (want.result.allowed) {
      state = want.state;
    } else {  // a denial writes nothing
      EXPECT_EQ(e.word.load(), word) << i;
      EXPECT_EQ(e.tokens.load(), tokens) << i;
    }
  }
  internal::FoldHotKey(entries_, sh_, kKey, codec_, 700);
  EXPECT_EQ(Slot(kKey).time, state.time);
  EXPECT_EQ(Slot(kKey).word, state.word);
  EXPECT_FALSE(internal::HotCheck(e, kKey, codec_, tb, 700, 0, true, &r));
  // A limit whose capacity * window leaves the exact form is never bound.
  const uint64_t other = kKey + 1;
  const Limit huge{Algorithm::kTokenBucket, kMaxLimit, int64_t{1} << 20};
  Store(other, 0, 0);
  const internal::TwoWordState zero{0, 0};
  const int64_t huge_expiry =
      internal::TokenBucket(&zero, huge, 0, 0).expiry_ms;  // what the lock writes
  internal::BindPair(entries_, sh_, other, 0, 0, huge_expiry, huge, codec_);
  internal::BindPair(entries_, sh_, other, 0, 0, huge_expiry, huge, codec_);
  EXPECT_EQ(internal::HotEntryOf(entries_, other).word.load() & internal::hot::kLive, 0u);
}

// A pair read under an earlier binding never lands, and a revival whose time goes back (or whose
// limit changed) takes a new generation, so a denial's two equal readings of `word` enclose one
// state.
TEST_F(HotEntryTest, APairOfAnEarlierBindingNeverLands) {
  if (!internal::hot::PairsSupported()) GTEST_SKIP() << "no 16-byte compare-and-swap here";
  internal::ShardLock lock(sh_.mu);
  const Limit tb{Algorithm::kTokenBucket, 10, 1000};
  const uint64_t other = kKey + internal::kHotPerShard;
  Store(kKey, 0, 0);
  Store(other, 0, 0);
  const int64_t expiry = internal::hot::PairExpiry({0, 0}, tb);
  internal::HotEntry& e = internal::HotEntryOf(entries_, kKey);
  internal::BindPair(entries_, sh_, kKey, 0, 0, expiry, tb, codec_);
  internal::BindPair(entries_, sh_, kKey, 0, 0, expiry, tb, codec_);
  const uint64_t stale_word = e.word.load(), stale_tokens = e.tokens.load();
  ASSERT_NE(stale_word & internal::hot::kLive, 0u);
  // Revived at the same time and limit: the same generation.
  internal::FoldHot(e, sh_, codec_, 0);
  internal::BindPair(entries_, sh_, kKey, 0, 0, expiry, tb, codec_);
  EXPECT_EQ(e.word.load(), stale_word);
  // Revived at an earlier time: a new one.
  internal::FoldHot(e, sh_, codec_, 0);
  const int64_t earlier = internal::hot::PairExpiry({-5, 0}, tb);
  internal::BindPair(entries_, sh_, kKey, -5, 0, earlier, tb, codec_);
  EXPECT_NE(e.word.load() & internal::hot::kLive, 0u);
  EXPECT_NE(internal::hot::GenOfWord(e.word.load()), internal::hot::GenOfWord(stale_word));
  // Revived with another limit: a new one again.
  const uint64_t before = e.word.load();
  internal::FoldHot(e, sh_, codec_, 0);
  const Limit tb2{Algorithm::kTokenBucket, 11, 1000};
  internal::BindPair(entries_, sh_, kKey, -5, 0, internal::hot::PairExpiry({-5, 0}, tb2), tb2,
                     codec_);
  EXPECT_NE(internal::hot::GenOfWord(e.word.load()), internal::hot::GenOfWord(before));
  // The entry passes to the other key with the very same state.
  internal::FoldHot(e, sh_, codec_, 0);
  internal::BindPair(entries_, sh_, other, 0, 0, expiry, tb, codec_);
  internal::BindPair(entries_, sh_, other, 0, 0, expiry, tb, codec_);
  ASSERT_EQ(e.key.load(), other);
  EXPECT_EQ(e.tokens.load(), stale_tokens);
  uint64_t w = stale_word, t = stale_tokens;
  EXPECT_FALSE(internal::hot::CasPair(e, &w, &t, stale_word, 1000));
  EXPECT_EQ(w, e.word.load());  // the failed compare-and-swap read the pair as it is
  LimitResult r;
  EXPECT_FALSE(internal::HotCheck(e, kKey, codec_, tb, 0, 1, true, &r));
  EXPECT_TRUE(internal::HotCheck(e, other, codec_, tb, 0, 1, true, &r));
}

TEST(HotWord, EncodesExactlyOrRefuses) {
  const uint64_t meta = internal::hot::MakeMeta(7, 20, -12345);
  for (const auto& [rel, word] : std::vector<std::pair<int64_t, int64_t>>{
           {-12345, 0}, {-12345, (1 << 20) - 1}, {-12345 + (int64_t{1} << 28) - 1, 5}}) {
    uint64_t w;
    ASSERT_TRUE(internal::hot::Encode(rel, word, meta, &w)) << rel << " " << word;
    int64_t r2, w2;
    internal::hot::Decode(w, meta, &r2, &w2);
    EXPECT_EQ(r2, rel);
    EXPECT_EQ(w2, word);
    EXPECT_EQ(internal::hot::GenOfWord(w), 7u);
  }
  uint64_t w;
  EXPECT_FALSE(internal::hot::Encode(-12346, 0, meta, &w));                       // before the base
  EXPECT_FALSE(internal::hot::Encode(-12345 + (int64_t{1} << 28), 0, meta, &w));  // past range
  EXPECT_FALSE(internal::hot::Encode(0, 1 << 20, meta, &w));                      // word too wide
  EXPECT_FALSE(internal::hot::Encode(0, -1, meta, &w));
  EXPECT_FALSE(internal::hot::Encode(INT64_MIN, 0, meta, &w));
}

}  // namespace
}  // namespace rl

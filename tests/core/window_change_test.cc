// A policy whose window changes (RL.POLICY SET again, a config reload) keeps what its keys had
// used: every algorithm, in rl::Limiter and rl::KeyState alike, carries a key's state from the
// old window to the new one at the key's next check, so a key at its limit stays at it (no fresh
// burst), a half-used key keeps its share, a fresh key is untouched, and reloading an unchanged
// set (ReplaceAll) does not forget a carry that has not happened yet.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rl/clock.h"
#include "rl/key_state.h"
#include "rl/limiter.h"
#include "rl/policy_registry.h"

namespace rl {
namespace {

Policy Parse(const std::string& name, const std::string& spec) {
  absl::StatusOr<Policy> p = ParsePolicy(name, spec);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

// The two stores behind one interface: check a stored policy by name.
class Store {
 public:
  virtual ~Store() = default;
  virtual Decision Check(const Policy& p, const std::string& key) = 0;
};

class LimiterStore : public Store {
 public:
  LimiterStore() {
    LimiterOptions options;
    options.clock = &clock_;
    options.sweep_interval_ms = 0;
    limiter_ = std::make_unique<Limiter>(options);
  }
  Decision Check(const Policy& p, const std::string& key) override {
    clock_.Advance(1);
    return *limiter_->Check(p, key);
  }

 private:
  ManualClock clock_{1'000'000};
  std::unique_ptr<Limiter> limiter_;
};

class KeyStateStore : public Store {
 public:
  Decision Check(const Policy& p, const std::string& key) override {
    now_ += 1;
    KeyState& state = states_[key];
    state.CarryOver(p, now_);
    bool changed = false;
    return *state.Check(p.name, p.limits, 1, now_, &changed);
  }

 private:
  int64_t now_ = 1'700'000'000'000;
  std::map<std::string, KeyState> states_;
};

class WindowChangeTest : public ::testing::TestWithParam<bool> {
 protected:
  std::unique_ptr<Store> MakeStore() const {
    if (GetParam()) return std::make_unique<KeyStateStore>();
    return std::make_unique<LimiterStore>();
  }
};

TEST_P(WindowChangeTest, AKeyAtItsLimitStaysThereEveryAlgorithm) {
  for (const char* algorithm :
       {"TOKEN_BUCKET", "GCRA", "SLIDING_LOG", "SLIDING_WINDOW", "FIXED_WINDOW", "LEAKY_BUCKET"}) {
    SCOPED_TRACE(algorithm);
    auto store = MakeStore();
    PolicyRegistry registry;
    ASSERT_TRUE(registry.Set(Parse("api", std::string(algorithm) + " 5 1m")).ok());
    int allowed = 0;
    for (int i = 0; i < 10; ++i) allowed += store->Check(*registry.Get("api"), "full").allowed;
    ASSERT_EQ(allowed, 5);
    for (int i = 0; i < 2; ++i) store->Check(*registry.Get("api"), "half");  // 2 of 5 used

    ASSERT_TRUE(registry.Set(Parse("api", std::string(algorithm) + " 10 2m")).ok());
    ASSERT_EQ(registry.Get("api")->carried_from.size(), 1u);
    // At its limit: still denied under the new window.
    EXPECT_FALSE(store->Check(*registry.Get("api"), "full").allowed);
    // 2 of 5 used is 4 of 10: six more pass, not ten.
    allowed = 0;
    for (int i = 0; i < 12; ++i) allowed += store->Check(*registry.Get("api"), "half").allowed;
    EXPECT_EQ(allowed, 6);
    // A key never seen gets the new window's whole allowance.
    allowed = 0;
    for (int i = 0; i < 12; ++i) allowed += store->Check(*registry.Get("api"), "new").allowed;
    EXPECT_EQ(allowed, 10);
  }
}

TEST_P(WindowChangeTest, AReloadOfTheSameSetKeepsAPendingCarry) {
  auto store = MakeStore();
  PolicyRegistry registry;
  registry.ReplaceAll({Parse("api", "GCRA 3 1m"), Parse("other", "GCRA 1 1s")});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->Check(*registry.Get("api"), "k").allowed);
  registry.ReplaceAll({Parse("api", "GCRA 3 5m"), Parse("other", "GCRA 1 1s")});
  // Reloaded again, unchanged, before "k" was checked: the carry is still there.
  registry.ReplaceAll({Parse("api", "GCRA 3 5m"), Parse("other", "GCRA 1 1s")});
  ASSERT_EQ(registry.Get("api")->carried_from.size(), 1u);
  EXPECT_FALSE(store->Check(*registry.Get("api"), "k").allowed);
  // And a second change carries from both older windows (a key not checked in between).
  registry.ReplaceAll({Parse("api", "GCRA 3 10m")});
  EXPECT_EQ(registry.Get("api")->carried_from.size(), 2u);
  EXPECT_FALSE(store->Check(*registry.Get("api"), "k").allowed);
}

TEST_P(WindowChangeTest, ALimitChangeKeepsItsStateAndAddedLimitsStartFresh) {
  auto store = MakeStore();
  PolicyRegistry registry;
  ASSERT_TRUE(registry.Set(Parse("api", "SLIDING_WINDOW 4 1m")).ok());
  for (int i = 0; i < 4; ++i) store->Check(*registry.Get("api"), "k");
  // Same window, new limit: the same state (no carry needed), 4 of 6 used.
  ASSERT_TRUE(registry.Set(Parse("api", "SLIDING_WINDOW 6 1m FIXED_WINDOW 100 1d")).ok());
  EXPECT_TRUE(registry.Get("api")->carried_from.empty());
  int allowed = 0;
  for (int i = 0; i < 5; ++i) allowed += store->Check(*registry.Get("api"), "k").allowed;
  EXPECT_EQ(allowed, 2);
}

INSTANTIATE_TEST_SUITE_P(Stores, WindowChangeTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "KeyState" : "Limiter"; });

TEST(LinkPreviousPolicyTest, MatchesByPositionThenAlgorithm) {
  Policy old = Parse("p", "SLIDING_WINDOW 100 1m SLIDING_WINDOW 5000 1d GCRA 1 1s");
  Policy next = Parse("p", "SLIDING_WINDOW 100 2m SLIDING_WINDOW 5000 1d TOKEN_BUCKET 1 1s");
  LinkPreviousPolicy(old, &next);
  ASSERT_EQ(next.carried_from.size(), 1u);
  EXPECT_EQ(next.carried_from[0].first, 0u);
  EXPECT_EQ(next.carried_from[0].second.window_ms, 60000);  // not the 1d one: still in use
}

}  // namespace
}  // namespace rl

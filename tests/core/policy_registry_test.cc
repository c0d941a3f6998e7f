// Tests for PolicyRegistry (rl/policy_registry.h): validation, snapshots that outlive
// replacement, sorted listing, atomic ReplaceAll, and concurrent Set/Get/Delete/ReplaceAll.
#include "rl/policy_registry.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace rl {
namespace {

Policy MakePolicy(const std::string& name, int64_t limit, int64_t window_ms = 60000) {
  Policy policy;
  policy.name = name;
  policy.limits.push_back(Limit{Algorithm::kSlidingWindow, limit, window_ms, 0});
  return policy;
}

TEST(PolicyRegistryTest, SetGetDelete) {
  PolicyRegistry registry;
  EXPECT_EQ(registry.size(), 0u);
  EXPECT_EQ(registry.Get("api"), nullptr);
  ASSERT_TRUE(registry.Set(MakePolicy("api", 100)).ok());
  std::shared_ptr<const Policy> api = registry.Get("api");
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->name, "api");
  EXPECT_EQ(api->limits[0].limit, 100);
  EXPECT_EQ(registry.size(), 1u);
  EXPECT_EQ(registry.Get("API"), nullptr);  // names are case-sensitive
  EXPECT_EQ(registry.Get("ap"), nullptr);

  EXPECT_FALSE(registry.Delete("nope"));
  EXPECT_TRUE(registry.Delete("api"));
  EXPECT_FALSE(registry.Delete("api"));
  EXPECT_EQ(registry.Get("api"), nullptr);
  EXPECT_EQ(registry.size(), 0u);
}

TEST(PolicyRegistryTest, SnapshotSurvivesReplaceAndDelete) {
  PolicyRegistry registry;
  ASSERT_TRUE(registry.Set(MakePolicy("api", 100)).ok());
  std::shared_ptr<const Policy> before = registry.Get("api");
  ASSERT_TRUE(registry.Set(MakePolicy("api", 7)).ok());
  EXPECT_EQ(before->limits[0].limit, 100);  // a check in flight keeps its policy
  EXPECT_EQ(registry.Get("api")->limits[0].limit, 7);
  EXPECT_EQ(registry.size(), 1u);
  registry.Delete("api");
  EXPECT_EQ(before->limits[0].limit, 100);
}

TEST(PolicyRegistryTest, SetValidates) {
  PolicyRegistry registry;
  EXPECT_FALSE(registry.Set(MakePolicy("", 1)).ok());
  EXPECT_FALSE(registry.Set(MakePolicy("has space", 1)).ok());
  EXPECT_FALSE(registry.Set(MakePolicy(std::string(129, 'x'), 1)).ok());
  EXPECT_FALSE(registry.Set(MakePolicy("p", 0)).ok());
  EXPECT_FALSE(registry.Set(MakePolicy("p", kMaxLimit + 1)).ok());
  EXPECT_FALSE(registry.Set(MakePolicy("p", 1, 0)).ok());

  Policy empty;
  empty.name = "empty";
  EXPECT_FALSE(registry.Set(empty).ok());

  Policy many = MakePolicy("many", 1, 1);
  for (int64_t w = 2; w <= static_cast<int64_t>(kMaxLimitsPerCheck); ++w) {
    many.limits.push_back(Limit{Algorithm::kSlidingWindow, 1, w, 0});
  }
  EXPECT_TRUE(registry.Set(many).ok());
  many.limits.push_back(Limit{Algorithm::kSlidingWindow, 1, 1000, 0});
  EXPECT_FALSE(registry.Set(many).ok());

  Policy duplicate = MakePolicy("dup", 1);
  duplicate.limits.push_back(duplicate.limits[0]);
  EXPECT_FALSE(registry.Set(duplicate).ok());

  EXPECT_EQ(registry.size(), 1u);  // only "many" (8 limits) went in
  EXPECT_EQ(registry.Get("many")->limits.size(), kMaxLimitsPerCheck);
}

TEST(PolicyRegistryTest, SetKeepsFlags) {
  PolicyRegistry registry;
  absl::StatusOr<Policy> parsed =
      ParsePolicy("p", std::string_view("TOKEN_BUCKET 10 1s BURST 20 SHADOW FAIL_CLOSED"));
  ASSERT_TRUE(parsed.ok());
  ASSERT_TRUE(registry.Set(*parsed).ok());
  std::shared_ptr<const Policy> p = registry.Get("p");
  EXPECT_TRUE(p->shadow);
  EXPECT_EQ(p->failure_mode, FailureMode::kFailClosed);
  EXPECT_EQ(FormatPolicy(*p), "TOKEN_BUCKET 10 1s BURST 20 SHADOW FAIL_CLOSED");
}

TEST(PolicyRegistryTest, ListIsSortedByName) {
  PolicyRegistry registry;
  for (const char* name : {"zeta", "Alpha", "alpha", "beta", "a", "b:1", "b"}) {
    ASSERT_TRUE(registry.Set(MakePolicy(name, 1)).ok());
  }
  std::vector<std::string> names;
  for (const auto& policy : registry.List()) names.push_back(policy->name);
  EXPECT_EQ(names, (std::vector<std::string>{"Alpha", "a", "alpha", "b", "b:1", "beta", "zeta"}));
}

TEST(PolicyRegistryTest, ReplaceAllSwapsTheWholeSet) {
  PolicyRegistry registry;
  ASSERT_TRUE(registry.Set(MakePolicy("old", 1)).ok());
  std::shared_ptr<const Policy> old = registry.Get("old");
  registry.ReplaceAll({MakePolicy("b", 2), MakePolicy("a", 1), MakePolicy("", 5),
                       MakePolicy("bad", 0), MakePolicy("b", 3)});
  EXPECT_EQ(registry.Get("old"), nullptr);
  EXPECT_EQ(old->name, "old");
  EXPECT_EQ(registry.Get("bad"), nullptr);  // invalid ones are skipped
  EXPECT_EQ(registry.size(), 2u);
  EXPECT_EQ(registry.Get("b")->limits[0].limit, 3);  // last wins
  EXPECT_EQ(registry.List()[0]->name, "a");
  registry.ReplaceAll({});
  EXPECT_EQ(registry.size(), 0u);
}

TEST(PolicyRegistryTest, ReplaceAllValidatedIsAllOrNothing) {
  PolicyRegistry registry;
  ASSERT_TRUE(registry.Set(MakePolicy("keep", 1)).ok());

  absl::Status status = registry.ReplaceAllValidated({MakePolicy("a", 1), MakePolicy("bad", 0)});
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(std::string(status.message()),
            "policy 'bad': limit must be between 1 and " + std::to_string(kMaxLimit));
  status = registry.ReplaceAllValidated({MakePolicy("a", 1), MakePolicy("a", 2)});
  EXPECT_EQ(std::string(status.message()), "policy 'a' is defined twice");
  status = registry.ReplaceAllValidated({MakePolicy("a b", 1)});
  EXPECT_EQ(std::string(status.message()).rfind("invalid policy name", 0), 0u);
  EXPECT_EQ(registry.size(), 1u);
  EXPECT_NE(registry.Get("keep"), nullptr);

  ASSERT_TRUE(registry.ReplaceAllValidated({MakePolicy("x", 1), MakePolicy("y", 2)}).ok());
  EXPECT_EQ(registry.Get("keep"), nullptr);
  EXPECT_EQ(registry.size(), 2u);
}

TEST(PolicyRegistryTest, ConcurrentSetGetDelete) {
  PolicyRegistry registry;
  constexpr int kThreads = 4;
  constexpr int kIterations = 5000;
  std::atomic<bool> bad{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string mine = "own-" + std::to_string(t);
      for (int i = 1; i <= kIterations; ++i) {
        // A shared name everybody fights over, and one per thread that only it writes.
        if (!registry.Set(MakePolicy("shared", i)).ok()) bad = true;
        if (!registry.Set(MakePolicy(mine, i)).ok()) bad = true;
        std::shared_ptr<const Policy> shared = registry.Get("shared");
        if (shared == nullptr || shared->name != "shared" || shared->limits.size() != 1) {
          bad = true;
        }
        std::shared_ptr<const Policy> own = registry.Get(mine);
        if (own == nullptr || own->limits[0].limit != i) bad = true;  // nobody else writes it
        if (i % 100 == 0) {
          if (!registry.Delete(mine)) bad = true;
          if (registry.Get(mine) != nullptr) bad = true;
          (void)registry.List();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(bad.load());
  // Each thread deleted its own policy on its last iteration (5000 % 100 == 0).
  EXPECT_EQ(registry.size(), 1u);
  EXPECT_NE(registry.Get("shared"), nullptr);
}

TEST(PolicyRegistryTest, ReplaceAllIsAtomicForReaders) {
  // Two generations of five policies each; a reader must never see a mix.
  PolicyRegistry registry;
  auto generation = [](int64_t g) {
    std::vector<Policy> set;
    for (int i = 0; i < 5; ++i) {
      std::string name = "p";  // not "p" + ...: GCC 12 warns falsely (-Wrestrict) on that
      name += std::to_string(i);
      set.push_back(MakePolicy(name, g));
    }
    return set;
  };
  registry.ReplaceAll(generation(1));
  std::atomic<bool> stop{false};
  std::atomic<bool> mixed{false};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!stop.load()) {
      const auto list = registry.List();
      if (list.size() != 5) mixed = true;
      for (const auto& policy : list) {
        if (policy->limits[0].limit != list[0]->limits[0].limit) mixed = true;
      }
      reads.fetch_add(1);
    }
  });
  for (int i = 0; i < 2000; ++i) registry.ReplaceAll(generation(1 + i % 2));
  while (reads.load() < 100) std::this_thread::yield();
  stop = true;
  reader.join();
  EXPECT_FALSE(mixed.load());
}

}  // namespace
}  // namespace rl

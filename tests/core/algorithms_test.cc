// Hand-worked sequences per algorithm: exact allowed / remaining / retry_after / reset_after values
// under a manual clock, through the public Limiter API.
#include <vector>

#include "gtest/gtest.h"
#include "rl/limiter.h"

namespace rl {
namespace {

struct Expect {
  int64_t at_ms;
  int64_t cost;
  bool allowed;
  int64_t remaining;
  int64_t retry_after_ms;
  int64_t reset_after_ms;
};

class AlgorithmTest : public ::testing::Test {
 protected:
  AlgorithmTest() : limiter_(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_}) {}

  void Run(const Limit& limit, const std::vector<Expect>& steps) {
    for (size_t i = 0; i < steps.size(); ++i) {
      const Expect& e = steps[i];
      clock_.Set(e.at_ms);
      absl::StatusOr<Decision> d = limiter_.Check("", "k", {limit}, e.cost);
      ASSERT_TRUE(d.ok()) << d.status();
      SCOPED_TRACE(testing::Message() << "step " << i << " at " << e.at_ms << " cost " << e.cost);
      EXPECT_EQ(d->allowed, e.allowed);
      EXPECT_EQ(d->remaining, e.remaining);
      EXPECT_EQ(d->retry_after_ms, e.retry_after_ms);
      EXPECT_EQ(d->reset_after_ms, e.reset_after_ms);
    }
  }

  ManualClock clock_{0};
  Limiter limiter_;
};

Limit L(Algorithm a, int64_t limit, int64_t window_ms, int64_t burst = 0) {
  return Limit{a, limit, window_ms, burst};
}

// 10 per second = one token every 100 ms; bucket of 10.
std::vector<Expect> BucketSequence() {
  return {
      {0, 1, true, 9, 0, 100},
      {0, 8, true, 1, 0, 900},
      {0, 1, true, 0, 0, 1000},
      {0, 1, false, 0, 100, 1000},
      {99, 1, false, 0, 1, 901},
      {100, 1, true, 0, 0, 1000},
      {100, 11, false, 0, kRetryNever, 1000},
      {350, 0, true, 2, 0, 750},
      {350, 3, false, 2, 50, 750},
      {400, 3, true, 0, 0, 1000},
      {5000, 0, true, 10, 0, 0},
  };
}

TEST_F(AlgorithmTest, TokenBucket) { Run(L(Algorithm::kTokenBucket, 10, 1000), BucketSequence()); }
TEST_F(AlgorithmTest, Gcra) { Run(L(Algorithm::kGcra, 10, 1000), BucketSequence()); }

TEST_F(AlgorithmTest, TokenBucketBurst) {
  // 2 per second with a burst of 5: the bucket holds 5, refills one every 500 ms.
  Run(L(Algorithm::kTokenBucket, 2, 1000, 5), {
                                                  {0, 5, true, 0, 0, 2500},
                                                  {0, 1, false, 0, 500, 2500},
                                                  {499, 1, false, 0, 1, 2001},
                                                  {500, 1, true, 0, 0, 2500},
                                                  {500, 6, false, 0, kRetryNever, 2500},
                                              });
}

TEST_F(AlgorithmTest, GcraFractionalRate) {
  // 3 per 1000 ms: tokens arrive every 333.33 ms; waits round up.
  Run(L(Algorithm::kGcra, 3, 1000), {
                                        {0, 3, true, 0, 0, 1000},
                                        {0, 1, false, 0, 334, 1000},
                                        {333, 1, false, 0, 1, 667},
                                        {334, 1, true, 0, 0, 1000},
                                    });
}

TEST_F(AlgorithmTest, LeakyBucketShapes) {
  // 10 per second drains one every 100 ms; the queue holds 3.
  Run(L(Algorithm::kLeakyBucket, 10, 1000, 3), {
                                                   {0, 1, true, 2, 0, 100},
                                                   {0, 1, true, 1, 100, 200},
                                                   {0, 1, true, 0, 200, 300},
                                                   {0, 1, false, 0, 100, 300},
                                                   {99, 1, false, 0, 1, 201},
                                                   {100, 1, true, 0, 200, 300},
                                                   {100, 4, false, 0, kRetryNever, 300},
                                                   {1000, 0, true, 3, 0, 0},
                                               });
}

TEST_F(AlgorithmTest, FixedWindowStartsAtFirstRequest) {
  Run(L(Algorithm::kFixedWindow, 3, 1000), {
                                               {5, 1, true, 2, 0, 1000},
                                               {15, 1, true, 1, 0, 990},
                                               {25, 1, true, 0, 0, 980},
                                               {35, 1, false, 0, 970, 970},
                                               {1004, 1, false, 0, 1, 1},
                                               {1005, 2, true, 1, 0, 1000},
                                               {1005, 4, false, 1, kRetryNever, 1000},
                                               {3000, 0, true, 3, 0, 0},
                                           });
}

TEST_F(AlgorithmTest, SlidingWindowWeightsPreviousWindow) {
  // Windows aligned at multiples of 1000 ms.
  Run(L(Algorithm::kSlidingWindow, 10, 1000), {
                                                  {500, 10, true, 0, 0, 1500},
                                                  {500, 1, false, 0, 600, 1500},
                                                  // 10 * 901/1000 = 9.01 used: 0 left
                                                  {1099, 1, false, 0, 1, 901},
                                                  {1100, 1, true, 0, 0, 1900},
                                                  // prev 10 * 0.5 + 1 = 6 used
                                                  {1500, 0, true, 4, 0, 1500},
                                                  {1500, 4, true, 0, 0, 1500},
                                                  {1500, 1, false, 0, 100, 1500},
                                                  {3000, 0, true, 10, 0, 0},
                                              });
}

TEST_F(AlgorithmTest, SlidingLogIsExact) {
  Run(L(Algorithm::kSlidingLog, 3, 1000), {
                                              {0, 1, true, 2, 0, 1000},
                                              {100, 1, true, 1, 0, 1000},
                                              {200, 1, true, 0, 0, 1000},
                                              {300, 1, false, 0, 700, 900},
                                              {999, 1, false, 0, 1, 201},
                                              {1000, 1, true, 0, 0, 1000},
                                              {1000, 2, false, 0, 200, 1000},
                                              {1200, 2, true, 0, 0, 1000},
                                              {1200, 4, false, 0, kRetryNever, 1000},
                                              {2200, 0, true, 3, 0, 0},
                                          });
}

}  // namespace
}  // namespace rl

// RL.CHECK ... MAXWAIT: a check that may queue. A call that must wait, on bucket limits, for no
// longer than MAXWAIT is admitted and charged into debt, its wait in retry_after_ms; any other
// call is the plain check's denial and takes nothing. The command layer on rl::Limiter (rl-server)
// and rl::KeyState (rl.so's per-key state) answer alike, and concurrent callers never both get the
// same slot.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "resp/writer.h"
#include "rl/clock.h"
#include "rl/command/commands.h"
#include "rl/key_state.h"
#include "rl/limiter.h"

namespace rl::command {
namespace {

class MaxWaitTest : public ::testing::Test {
 protected:
  MaxWaitTest()
      : clock_(0, 1'700'000'000'000),
        limiter_(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_}),
        engine_(limiter_) {}

  std::string Run(std::vector<std::string> args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    std::string out;
    resp::Writer w(&out, 2);
    const PolicyLookup none = [](std::string_view) { return nullptr; };
    if (args[0] == "RL.CHECK") RunCheck(engine_, w, Verb::kCheck, views, none);
    if (args[0] == "RL.PEEK") RunCheck(engine_, w, Verb::kPeek, views, none);
    return out;
  }
  static std::string Reply(int allowed, int limit, int remaining, int retry, int reset) {
    return "*5\r\n:" + std::to_string(allowed) + "\r\n:" + std::to_string(limit) +
           "\r\n:" + std::to_string(remaining) + "\r\n:" + std::to_string(retry) +
           "\r\n:" + std::to_string(reset) + "\r\n";
  }

  ManualClock clock_;
  Limiter limiter_;
  LimiterEngine engine_;
};

TEST_F(MaxWaitTest, ABucketAdmitsWithinTheWaitIntoDebt) {
  // 2 per second, burst 2: a token every 500 ms.
  const std::vector<std::string> check = {"RL.CHECK", "k", "TOKEN_BUCKET", "2", "1s"};
  auto with = [&](std::string wait) {
    std::vector<std::string> a = check;
    a.insert(a.end(), {"MAXWAIT", wait});
    return Run(a);
  };
  EXPECT_EQ(with("600ms"), Reply(1, 2, 1, 0, 500));  // room now: an ordinary check
  EXPECT_EQ(with("600ms"), Reply(1, 2, 0, 0, 1000));
  EXPECT_EQ(with("600ms"), Reply(1, 2, 0, 500, 1500));   // waits 500 ms, one token of debt
  EXPECT_EQ(with("600ms"), Reply(0, 2, 0, 1000, 1500));  // would wait 1 s: nothing taken
  EXPECT_EQ(Run(check), Reply(0, 2, 0, 1000, 1500));     // the plain check agrees
  EXPECT_EQ(with("1s"), Reply(1, 2, 0, 1000, 2000));
  clock_.Advance(1000);  // the first waiter's turn came and went; the second's is now
  EXPECT_EQ(with("1ms"), Reply(0, 2, 0, 500, 1000));
  clock_.Advance(1500);
  EXPECT_EQ(Run(check), Reply(1, 2, 1, 0, 500));  // every debt repaid: all from the refill
}

TEST_F(MaxWaitTest, AWindowGrantsNoWaitAndNeverIsNever) {
  EXPECT_EQ(Run({"RL.CHECK", "w", "FIXED_WINDOW", "1", "1m", "MAXWAIT", "1h"}),
            Reply(1, 1, 0, 0, 60000));
  EXPECT_EQ(Run({"RL.CHECK", "w", "FIXED_WINDOW", "1", "1m", "MAXWAIT", "1h"}),
            Reply(0, 1, 0, 60000, 60000));
  // A window beside a bucket: the bucket could wait, the window cannot.
  EXPECT_EQ(
      Run({"RL.CHECK", "m", "TOKEN_BUCKET", "1", "1s", "SLIDING_LOG", "1", "1m", "MAXWAIT", "1h"})
          .substr(0, 8),
      "*5\r\n:1\r\n");
  EXPECT_EQ(
      Run({"RL.CHECK", "m", "TOKEN_BUCKET", "1", "1s", "SLIDING_LOG", "1", "1m", "MAXWAIT", "1h"})
          .substr(0, 8),
      "*5\r\n:0\r\n");
  // COST above the capacity never passes: -1, nothing taken.
  EXPECT_EQ(Run({"RL.CHECK", "b", "GCRA", "2", "1s", "COST", "3", "MAXWAIT", "1h"}),
            Reply(0, 2, 2, -1, 0));
}

TEST_F(MaxWaitTest, GrammarErrors) {
  // A duration needs a unit, as every RL.* duration.
  EXPECT_NE(Run({"RL.CHECK", "k", "GCRA", "2", "1s", "MAXWAIT", "5"}).find("needs a unit"),
            std::string::npos);
  EXPECT_EQ(Run({"RL.CHECK", "k", "GCRA", "2", "1s", "MAXWAIT", "1s", "MAXWAIT", "1s"}),
            "-ERR MAXWAIT given more than once\r\n");
  EXPECT_EQ(Run({"RL.PEEK", "k", "GCRA", "2", "1s", "MAXWAIT", "1s"}), "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "GCRA", "2", "1s", "MAXWAIT"}), "-ERR syntax error\r\n");
  // Errors name the wait, not a window; zero needs its unit as any duration does.
  EXPECT_EQ(Run({"RL.CHECK", "k", "GCRA", "2", "1s", "MAXWAIT", "-1s"}),
            "-ERR invalid MAXWAIT '-1s' (use e.g. 250ms, 1s, 1m, 1h, 1d)\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "GCRA", "2", "1s", "MAXWAIT", "0"}),
            "-ERR MAXWAIT '0' needs a unit: 0s, 1m, 250ms\r\n");
  EXPECT_EQ(Run({"RL.CHECK", "k", "GCRA", "2", "1s", "MAXWAIT", "3651d"}),
            "-ERR MAXWAIT '3651d' out of range (0ms to 3650d)\r\n");
}

// MAXWAIT 0ms (or 0s): no wait; what has room is taken, anything else refused.
TEST_F(MaxWaitTest, ZeroWaitTakesOnlyWhatHasRoom) {
  EXPECT_EQ(Run({"RL.CHECK", "z", "GCRA", "1", "1s", "MAXWAIT", "0ms"}), Reply(1, 1, 0, 0, 1000));
  EXPECT_EQ(Run({"RL.CHECK", "z", "GCRA", "1", "1s", "MAXWAIT", "0s"}), Reply(0, 1, 0, 1000, 1000));
  EXPECT_NE(Run({"RL.CHECK", "z", "GCRA", "1", "1s", "MAXWAIT", "0parsecs"}).find("-ERR"),
            std::string::npos);
}

// rl.so runs the same contract on a KeyState: the same calls, the same answers.
TEST_F(MaxWaitTest, KeyStateAnswersAsTheLimiter) {
  const Policy policy = *ParsePolicy("p", "TOKEN_BUCKET 3 1s BURST 2 GCRA 5 1s");
  const absl::Span<const Limit> limits = policy.limits;
  KeyState state;
  int64_t now = 0;
  for (int i = 0; i < 12; ++i) {
    const int64_t cost = 1 + i % 2, wait = (i % 3) * 300;
    bool changed = false;
    absl::StatusOr<Decision> a = limiter_.ChargeWithin("", "k", limits, cost, wait);
    absl::StatusOr<Decision> b = state.ChargeWithin("", limits, cost, wait, now, &changed);
    ASSERT_TRUE(a.ok() && b.ok()) << i;
    EXPECT_EQ(a->allowed, b->allowed) << i;
    EXPECT_EQ(a->limit, b->limit) << i;
    EXPECT_EQ(a->remaining, b->remaining) << i;
    EXPECT_EQ(a->retry_after_ms, b->retry_after_ms) << i;
    EXPECT_EQ(a->reset_after_ms, b->reset_after_ms) << i;
    EXPECT_EQ(changed, a->allowed) << i;  // a refused call changes nothing
    clock_.Advance(70);
    now += 70;
  }
}

// Decided under the key's locks: 10 per second, burst 1, MAXWAIT 500ms at one instant admits the
// token there is and the five that come within 500 ms (waits 0, 100, ..., 500), never more.
TEST_F(MaxWaitTest, ConcurrentCallersGetDistinctSlots) {
  const Policy policy = *ParsePolicy("p", "TOKEN_BUCKET 10 1s BURST 1");
  const Limit limit = policy.limits[0];
  std::atomic<int> admitted{0};
  std::vector<std::atomic<int>> waits(6);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 4; ++i) {
        absl::StatusOr<Decision> d =
            limiter_.ChargeWithin("", "hot", absl::MakeConstSpan(&limit, 1), 1, 500);
        if (d.ok() && d->allowed) {
          ++admitted;
          if (d->retry_after_ms % 100 == 0 && d->retry_after_ms <= 500) {
            ++waits[d->retry_after_ms / 100];
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 6);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(waits[i].load(), 1) << "wait " << i * 100 << " ms";
}

}  // namespace
}  // namespace rl::command

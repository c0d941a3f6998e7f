// One policy, one sequence of checks, four ways of asking: the in-process rl::Limiter,
// rl::RemoteLimiter against rl-server and against Redis with rl.so (inline and server-policy
// mode), and the server's own HEADERS. API clients must see the same rate-limit headers however
// the service is deployed: for every algorithm, for multi-limit policies (one RateLimit-Policy
// entry per limit) and for an acquire.
//
// Counts, names, quotas and windows must be equal. Values derived from time (X-RateLimit-Reset,
// RateLimit's t, Retry-After) may differ by the time that passed between the calls, so they are
// compared within a second, and only between ways that read one clock: rl.so keeps a clock of
// its own (anchored for replication), so its times are compared with its own HEADERS.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "redis_harness.h"
#include "resp_client.h"
#include "rl/headers.h"
#include "rl/limiter.h"
#include "rl/rate_limiter.h"
#include "rl/remote_limiter.h"
#include "server_process.h"
#include "subprocess.h"

namespace rl {
namespace {

using std::chrono::milliseconds;
using Headers = std::vector<HeaderField>;
using Mode = RemoteLimiterOptions::PolicyMode;

constexpr int kCalls = 5;  // limits of 2..3 per window: allowed, then denied

struct Case {
  std::string name;  // the policy's name
  std::string spec;
  bool acquire = false;
};

std::vector<Case> Cases() {
  return {
      {"tb", "TOKEN_BUCKET 3 1m"},
      {"gcra", "GCRA 3 1m BURST 2"},
      {"log", "SLIDING_LOG 3 1m"},
      {"sw", "SLIDING_WINDOW 3 1m"},
      {"fw", "FIXED_WINDOW 3 1m"},
      {"leaky", "LEAKY_BUCKET 3 1m"},
      // The two-limit policy, and one whose limits share a window ("mixed-1m-1").
      {"reports", "SLIDING_WINDOW 3 1m FIXED_WINDOW 20 1h"},
      {"mixed", "TOKEN_BUCKET 4 1m BURST 3 SLIDING_LOG 2 1m GCRA 10 1h"},
      {"exports", "CONCURRENCY 2 LEASE 1m TOKEN_BUCKET 3 1h", true},
  };
}

// One way of asking: each call's header values.
using Seq = std::vector<Headers>;

// The fields whose value is a count of seconds from now, compared with a tolerance.
bool TimeField(std::string_view name) {
  return name == "X-RateLimit-Reset" || name == "Retry-After";
}

// RateLimit: "name";r=N;t=M -> ("name";r=N, M).
std::pair<std::string, int64_t> SplitRateLimit(const std::string& value) {
  const size_t t = value.rfind(";t=");
  int64_t seconds = -1;
  if (t == std::string::npos || !absl::SimpleAtoi(value.substr(t + 3), &seconds)) {
    return {value, -1};
  }
  return {value.substr(0, t), seconds};
}

// Expects `got` to equal `want` field by field; times within a second when `same_clock`, else
// only present in both.
void ExpectSameHeaders(const Seq& want, const Seq& got, bool same_clock, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t call = 0; call < want.size(); ++call) {
    const std::string where = what + ", call " + std::to_string(call + 1);
    ASSERT_EQ(want[call].size(), got[call].size()) << where;
    for (size_t i = 0; i < want[call].size(); ++i) {
      const HeaderField& w = want[call][i];
      const HeaderField& g = got[call][i];
      ASSERT_EQ(w.name, g.name) << where;
      int64_t ws = 0, gs = 0;
      if (TimeField(w.name)) {
        ASSERT_TRUE(absl::SimpleAtoi(w.value, &ws) && absl::SimpleAtoi(g.value, &gs)) << where;
        if (same_clock) {
          EXPECT_LE(std::abs(ws - gs), 1) << where << ": " << w.name;
        }
      } else if (w.name == "RateLimit") {
        auto [wv, wt] = SplitRateLimit(w.value);
        auto [gv, gt] = SplitRateLimit(g.value);
        EXPECT_EQ(wv, gv) << where;
        if (same_clock) {
          EXPECT_LE(std::abs(wt - gt), 1) << where << ": " << w.value;
        }
      } else {
        EXPECT_EQ(w.value, g.value) << where;
      }
    }
  }
}

// The checks (or acquires) of `c` on `limiter`; leases are held until the run ends so that every
// call sees the ones before it.
Seq Calls(RateLimiter& limiter, const Policy& policy, const Case& c, const std::string& key) {
  Seq run;
  std::vector<Lease> leases;
  for (int i = 0; i < kCalls; ++i) {
    absl::StatusOr<Decision> d;
    if (c.acquire) {
      absl::StatusOr<Lease> lease = limiter.Acquire(policy, key);
      if (!lease.ok()) {
        ADD_FAILURE() << c.name << ": " << lease.status();
        return run;
      }
      d = lease->decision();
      leases.push_back(*std::move(lease));
    } else {
      d = limiter.Check(policy, key);
    }
    if (!d.ok()) {
      ADD_FAILURE() << c.name << ": " << d.status();
      return run;
    }
    EXPECT_EQ(d->decided_by, DecidedBy::kLimiter) << c.name;
    run.push_back(HeaderValues(*d, policy.name, limiter.WallNowMs()));
  }
  return run;
}

// The same calls as raw commands with HEADERS (RESP2: the sixth element, a flat array).
Seq ServerHeaders(int port, const Policy& policy, const Case& c, const std::string& key) {
  test::RespClient client(port);
  EXPECT_TRUE(client.connected());
  std::vector<std::string> args{c.acquire ? "RL.ACQUIRE" : "RL.CHECK", key, "POLICY", policy.name};
  const std::string limits = FormatPolicy(policy);
  for (std::string_view token : SplitSpec(limits)) args.emplace_back(token);
  args.emplace_back("HEADERS");
  Seq run;
  for (int i = 0; i < kCalls; ++i) {
    const test::Reply reply = client.Call(args);
    if (reply.type != '*' || reply.elements.size() < 6) {
      ADD_FAILURE() << c.name << ": " << reply.str;
      return run;
    }
    Headers headers;
    const std::vector<test::Reply>& flat = reply.elements[5].elements;
    for (size_t f = 0; f + 1 < flat.size(); f += 2)
      headers.push_back({flat[f].str, flat[f + 1].str});
    run.push_back(std::move(headers));
  }
  return run;
}

std::unique_ptr<RemoteLimiter> Connect(int port, Mode mode) {
  RemoteLimiterOptions options;
  options.port = static_cast<uint16_t>(port);
  options.policy_mode = mode;
  // Generous: a busy machine must not turn a check into a failure-mode decision.
  options.timeout = milliseconds(2000);
  absl::StatusOr<std::unique_ptr<RemoteLimiter>> limiter = RemoteLimiter::Create(options);
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

// Defines every case's policy on a server (for server-policy mode).
void DefinePolicies(int port) {
  test::RespClient client(port);
  for (const Case& c : Cases()) {
    std::vector<std::string> args{"RL.POLICY", "SET", c.name};
    for (std::string_view token : SplitSpec(c.spec)) args.emplace_back(token);
    const test::Reply reply = client.Call(args);
    EXPECT_EQ(reply.str, "OK") << c.name << ": " << reply.str;
  }
}

class RemoteHeadersTest : public ::testing::Test {
 protected:
  // rl-server on a free port (--port 0: it names the port it bound).
  bool StartServer() {
    test::ServerOptions options;
    options.quiet = false;
    server_port_ = test::StartRlServer(server_, RL_SERVER_PATH, {"--bind", "127.0.0.1"}, options);
    return server_port_ > 0;
  }

  rl_test::Subprocess server_;
  int server_port_ = 0;
};

TEST_F(RemoteHeadersTest, EveryWayOfAskingGivesTheSameHeaderValues) {
  ASSERT_TRUE(StartServer());
  DefinePolicies(server_port_);
  std::optional<test::RedisServer> redis;
  if (test::RedisAvailable()) {
    redis.emplace(test::RedisOptions().LoadModule(RL_MODULE_PATH));
    ASSERT_TRUE(redis->Start());
    DefinePolicies(redis->port());
  }
  Limiter engine;
  LocalRateLimiter local(&engine);
  auto server_inline = Connect(server_port_, Mode::kInline);
  auto server_named = Connect(server_port_, Mode::kServerPolicy);
  ASSERT_NE(server_inline, nullptr);
  ASSERT_NE(server_named, nullptr);
  std::unique_ptr<RemoteLimiter> module_inline, module_named;
  if (redis.has_value()) {
    module_inline = Connect(redis->port(), Mode::kInline);
    module_named = Connect(redis->port(), Mode::kServerPolicy);
  }

  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name + ": " + c.spec);
    absl::StatusOr<Policy> policy = ParsePolicy(c.name, std::string_view(c.spec));
    ASSERT_TRUE(policy.ok()) << policy.status();
    // Each way its own key: every run starts from a fresh state.
    const Seq want = Calls(local, *policy, c, "local");
    ASSERT_EQ(want.size(), static_cast<size_t>(kCalls));
    if (policy->limits.size() > 1) {
      // One entry per limit, named by window (the "reports-1m", "reports-1h").
      const std::string& entries = want.front()[3].value;
      EXPECT_EQ(std::count(entries.begin(), entries.end(), ','), policy->limits.size() - 1)
          << entries;
    }
    ExpectSameHeaders(want, Calls(*server_inline, *policy, c, "inline"), true, "rl-server, inline");
    ExpectSameHeaders(want, Calls(*server_named, *policy, c, "named"), true,
                      "rl-server, server policy");
    ExpectSameHeaders(want, ServerHeaders(server_port_, *policy, c, "headers"), true,
                      "rl-server, HEADERS");
    if (!redis.has_value()) continue;
    const Seq module_headers = ServerHeaders(redis->port(), *policy, c, "headers");
    ExpectSameHeaders(want, module_headers, false, "rl.so, HEADERS");
    ExpectSameHeaders(module_headers, Calls(*module_inline, *policy, c, "inline"), true,
                      "rl.so, inline");
    ExpectSameHeaders(module_headers, Calls(*module_named, *policy, c, "named"), true,
                      "rl.so, server policy");
  }
  if (!redis.has_value()) GTEST_SKIP() << "redis-server not installed: rl.so not compared";
}

}  // namespace
}  // namespace rl

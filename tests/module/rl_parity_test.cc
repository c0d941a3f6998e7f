// One contract, two front ends: the same command sequences against a real rl-server and a real
// redis-server with rl.so, replies compared. Errors byte for byte; decision fields exactly where
// time does not enter (allowed, limit, remaining with windows far longer than the run) and within
// kMsTolerance where it does (retry_after_ms, reset_after_ms, leaky-bucket delays, header
// seconds). RESP2 and RESP3 (HELLO 3), HEADERS, policies, shadow mode, CL.THROTTLE and every
// argument error rl-server gives.
//
// SLIDING_WINDOW's two windows sit on a grid of the node clock's epoch: Unix time in both (each
// clock anchored to the wall clock when it starts), which two clocks may still see a few ms
// apart, so for commands that name a sliding window only allowed, limit and remaining are
// compared (windows of an hour or more keep a grid boundary out of the run).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "redis_harness.h"
#include "rl/ascii.h"
#include "rl/command/docs.h"
#include "rl_util.h"
#include "server_process.h"

namespace rl::test {
namespace {

using Cmd = std::vector<std::string>;

// The two servers answer a call a few milliseconds apart (more on a loaded machine); every window
// below is a minute or longer, so the time-dependent fields may differ by that much only.
constexpr int64_t kMsTolerance = 500;
constexpr int64_t kSecondsTolerance = 2;

enum class Kind { kExact, kDecision, kThrottle, kPolicyHelp };

// How far time-dependent fields may differ: kMsTolerance and kSecondsTolerance, or anything for
// a command whose binding limit may be a sliding window (grid phase, see above).
struct Tolerance {
  int64_t ms = kMsTolerance;
  int64_t seconds = kSecondsTolerance;
};
constexpr int64_t kAny = int64_t{1} << 50;

Kind KindOf(const Cmd& cmd) {
  std::string verb = cmd.empty() ? "" : cmd[0];
  for (char& ch : verb) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (verb == "RL.CHECK" || verb == "RL.PEEK" || verb == "RL.REFUND" || verb == "RL.CHARGE" ||
      verb == "RL.ACQUIRE") {
    return Kind::kDecision;
  }
  if (verb == "CL.THROTTLE") return Kind::kThrottle;
  if (verb == "RL.POLICY" && cmd.size() == 2 && rl::EqualsIgnoreCase(cmd[1], "HELP")) {
    return Kind::kPolicyHelp;
  }
  return Kind::kExact;
}

::testing::AssertionResult Near(int64_t a, int64_t b, int64_t tolerance, const std::string& what) {
  if (std::llabs(a - b) <= tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << a << " vs " << b;
}

// `"name";r=42;t=17`: r exact, t within seconds.
::testing::AssertionResult SameRateLimitField(const std::string& a, const std::string& b,
                                              const Tolerance& tol) {
  const size_t ta = a.rfind(";t="), tb = b.rfind(";t=");
  if (ta == std::string::npos || tb == std::string::npos || a.substr(0, ta) != b.substr(0, tb)) {
    return ::testing::AssertionFailure() << "RateLimit: " << a << " vs " << b;
  }
  return Near(std::stoll(a.substr(ta + 3)), std::stoll(b.substr(tb + 3)), tol.seconds,
              "RateLimit t");
}

::testing::AssertionResult SameHeaders(const Reply& a, const Reply& b, const Tolerance& tol) {
  if (a.type != b.type || a.elements.size() != b.elements.size()) {
    return ::testing::AssertionFailure() << "headers: " << Show(a) << " vs " << Show(b);
  }
  for (size_t i = 0; i + 1 < a.elements.size(); i += 2) {
    const std::string& name = a.elements[i].str;
    if (name != b.elements[i].str) {
      return ::testing::AssertionFailure()
             << "header names: " << name << " vs " << b.elements[i].str;
    }
    const std::string& va = a.elements[i + 1].str;
    const std::string& vb = b.elements[i + 1].str;
    ::testing::AssertionResult same = ::testing::AssertionSuccess();
    if (name == "X-RateLimit-Reset" || name == "Retry-After") {
      same = Near(std::stoll(va), std::stoll(vb), tol.seconds, name);
    } else if (name == "RateLimit") {
      same = SameRateLimitField(va, vb, tol);
    } else if (va != vb) {
      same = ::testing::AssertionFailure() << name << ": " << va << " vs " << vb;
    }
    if (!same) return same;
  }
  return ::testing::AssertionSuccess();
}

// Field `name` (or position) of a decision: exact, or within the tolerance for times.
::testing::AssertionResult SameDecisionField(const std::string& name, const Reply& a,
                                             const Reply& b, const Tolerance& tol) {
  if (name == "headers") return SameHeaders(a, b, tol);
  if (name == "lease") {
    // Lease ids are random: both nil, or both an id of 40 hex digits.
    if (a.is_null() != b.is_null() ||
        (!a.is_null() && (a.str.size() != 40 || b.str.size() != 40))) {
      return ::testing::AssertionFailure() << "lease: " << Show(a) << " vs " << Show(b);
    }
    return ::testing::AssertionSuccess();
  }
  if (a.type != ':' || b.type != ':') {
    return ::testing::AssertionFailure() << name << ": " << Show(a) << " vs " << Show(b);
  }
  if (name == "retry_after_ms" || name == "reset_after_ms") {
    // -1 ("never") is exact.
    if ((a.integer < 0) != (b.integer < 0)) {
      return ::testing::AssertionFailure() << name << ": " << a.integer << " vs " << b.integer;
    }
    return Near(a.integer, b.integer, tol.ms, name);
  }
  if (a.integer != b.integer) {
    return ::testing::AssertionFailure() << name << ": " << a.integer << " vs " << b.integer;
  }
  return ::testing::AssertionSuccess();
}

// RL.POLICY HELP: rl.so also lists the subcommands only it has (VERSION, RELOAD: policies that
// reach every node of a cluster), each a usage line and its indented text; the rest as rl-server.
::testing::AssertionResult SamePolicyHelp(const Reply& a, const Reply& b) {
  Reply shared = b;
  shared.elements.clear();
  int module_only = 0;
  for (size_t i = 0; i < b.elements.size(); ++i) {
    const std::string& line = b.elements[i].str;
    if (line.rfind("VERSION", 0) == 0 || line.rfind("RELOAD", 0) == 0) {
      ++module_only;
      ++i;  // its text
      continue;
    }
    shared.elements.push_back(b.elements[i]);
  }
  if (module_only != 2) {
    return ::testing::AssertionFailure() << "rl.so's HELP lacks VERSION or RELOAD: " << Show(b);
  }
  if (Show(a) != Show(shared)) {
    return ::testing::AssertionFailure() << "rl-server " << Show(a) << "\n   rl.so    " << Show(b);
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult Equivalent(const Reply& a, const Reply& b, Kind kind,
                                      const Tolerance& tol) {
  auto differ = [&] {
    return ::testing::AssertionFailure() << "rl-server " << Show(a) << "\n   rl.so    " << Show(b);
  };
  if (kind == Kind::kPolicyHelp && a.type == '*' && b.type == '*') return SamePolicyHelp(a, b);
  if (a.type != b.type || a.elements.size() != b.elements.size()) return differ();
  if (a.type == '-' || kind == Kind::kExact || a.type == ':' || a.type == '+' || a.type == '$') {
    if (Show(a) != Show(b)) return differ();
    return ::testing::AssertionSuccess();
  }
  if (kind == Kind::kThrottle) {
    for (size_t i = 0; i < a.elements.size(); ++i) {
      const int64_t x = a.elements[i].integer, y = b.elements[i].integer;
      const bool timed = i >= 3 && x >= 0 && y >= 0;
      if (timed ? !Near(x, y, kSecondsTolerance, "") : x != y) return differ();
    }
    return ::testing::AssertionSuccess();
  }
  static const char* kNames[] = {"allowed",        "limit",          "remaining",
                                 "retry_after_ms", "reset_after_ms", "headers"};
  if (a.type == '%') {
    for (size_t i = 0; i + 1 < a.elements.size(); i += 2) {
      if (a.elements[i].str != b.elements[i].str) return differ();
      if (auto same =
              SameDecisionField(a.elements[i].str, a.elements[i + 1], b.elements[i + 1], tol);
          !same) {
        return differ() << "\n   " << same.message();
      }
    }
    return ::testing::AssertionSuccess();
  }
  for (size_t i = 0; i < a.elements.size(); ++i) {
    // RL.ACQUIRE's lease id is the last element: a bulk string or nil.
    const bool lease = a.elements[i].type == '$' || a.elements[i].is_null();
    const std::string name = lease ? "lease" : i < 6 ? kNames[i] : "?";
    if (auto same = SameDecisionField(name, a.elements[i], b.elements[i], tol); !same) {
      return differ() << "\n   " << same.message();
    }
  }
  return ::testing::AssertionSuccess();
}

// Sliding windows (inline, or policy p2 below) answer with their grid's phase.
Tolerance ToleranceFor(const Cmd& cmd) {
  for (const std::string& arg : cmd) {
    std::string upper = arg;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (upper == "SLIDING_WINDOW" || upper == "P2") return Tolerance{kAny, kAny};
  }
  return Tolerance{};
}

std::string Text(const Cmd& cmd) {
  std::string out;
  for (const std::string& arg : cmd) out += (out.empty() ? "" : " ") + arg;
  return out;
}

class ParityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
    rl_server_ = std::make_unique<ServerProcess>(std::vector<std::string>{"--threads", "1"});
    ASSERT_GT(rl_server_->port(), 0) << "rl-server did not start";
    redis_ = std::make_unique<RedisServer>(RlOptions());
    ASSERT_TRUE(redis_->Start());
    a_ = std::make_unique<RespClient>(rl_server_->port());
    b_ = redis_->Connect();
    ASSERT_TRUE(a_->connected() && b_->connected());
  }
  void TearDown() override {
    if (redis_) {
      EXPECT_TRUE(redis_->running()) << redis_->LogTail();
    }
    if (rl_server_ && rl_server_->port() > 0) {
      EXPECT_EQ(rl_server_->Terminate(), 0);
    }
  }

  // Runs each command on both, in order, and compares; counts the comparisons.
  void Run(const std::vector<Cmd>& cmds) {
    for (const Cmd& cmd : cmds) {
      const Reply a = a_->Call(cmd);
      const Reply b = b_->Call(cmd);
      ASSERT_NE(a.type, 'X') << Text(cmd);
      ASSERT_NE(b.type, 'X') << Text(cmd);
      EXPECT_TRUE(Equivalent(a, b, KindOf(cmd), ToleranceFor(cmd))) << Text(cmd);
      ++compared_;
    }
  }
  void Hello3() {
    ASSERT_EQ(a_->Call({"HELLO", "3"}).type, '%');
    ASSERT_EQ(b_->Call({"HELLO", "3"}).type, '%');
  }

  std::unique_ptr<ServerProcess> rl_server_;
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<RespClient> a_, b_;
  int compared_ = 0;
};

const char* const kAlgorithms[] = {"TOKEN_BUCKET",   "GCRA",         "SLIDING_LOG",
                                   "SLIDING_WINDOW", "FIXED_WINDOW", "LEAKY_BUCKET",
                                   "ALIGNED_WINDOW"};

std::vector<Cmd> Decisions() {
  std::vector<Cmd> cmds;
  for (const std::string alg : kAlgorithms) {
    const std::string key = "par:" + alg;
    const Cmd check = {"RL.CHECK", key, alg, "5", "1h"};
    for (int i = 0; i < 6; ++i) cmds.push_back(check);
    cmds.push_back({"RL.PEEK", key, alg, "5", "1h"});
    cmds.push_back({"RL.PEEK", key, alg, "5", "1h", "COST", "0"});
    cmds.push_back({"RL.CHECK", key, alg, "5", "1h", "COST", "0"});
    cmds.push_back({"RL.CHECK", key, alg, "5", "1h", "COST", "6"});
    cmds.push_back({"RL.RESET", key, alg, "5", "1h"});
    cmds.push_back({"RL.RESET", key, alg, "5", "1h"});
    cmds.push_back({"RL.CHECK", key, alg, "5", "1h", "COST", "3", "HEADERS"});
    cmds.push_back({"RL.CHECK", key, alg, "5", "1h", "COST", "3", "HEADERS"});
    cmds.push_back({"RL.PEEK", key, alg, "5", "1h", "COST", "2", "HEADERS"});
    // Another window of the same algorithm is another state; a changed limit reads the old.
    cmds.push_back({"RL.CHECK", key, alg, "5", "1d"});
    cmds.push_back({"RL.CHECK", key, alg, "7", "1h"});
  }
  const std::vector<Cmd> more = {
      {"RL.CHECK", "par:burst", "TOKEN_BUCKET", "10", "1m", "BURST", "3"},
      {"RL.CHECK", "par:burst", "TOKEN_BUCKET", "10", "1m", "BURST", "3", "COST", "2"},
      {"RL.CHECK", "par:burst", "TOKEN_BUCKET", "10", "1m", "BURST", "3"},
      {"RL.CHECK", "par:gburst", "GCRA", "10", "1h", "BURST", "20", "COST", "15"},
      {"RL.CHECK", "par:gburst", "GCRA", "10", "1h", "BURST", "20", "COST", "15"},
      {"RL.CHECK", "par:leaky", "LEAKY_BUCKET", "2", "1m", "BURST", "4"},
      {"RL.CHECK", "par:leaky", "LEAKY_BUCKET", "2", "1m", "BURST", "4"},
      {"RL.CHECK", "par:leaky", "LEAKY_BUCKET", "2", "1m", "BURST", "4", "COST", "2"},
      {"RL.CHECK", "par:leaky", "LEAKY_BUCKET", "2", "1m", "BURST", "4"},
      {"RL.CHECK", "par:multi", "SLIDING_LOG", "100", "1h", "FIXED_WINDOW", "2", "1h"},
      {"RL.CHECK", "par:multi", "SLIDING_LOG", "100", "1h", "FIXED_WINDOW", "2", "1h"},
      {"RL.CHECK", "par:multi", "SLIDING_LOG", "100", "1h", "FIXED_WINDOW", "2", "1h", "HEADERS"},
      {"RL.PEEK", "par:multi", "SLIDING_LOG", "100", "1h"},
      {"RL.RESET", "par:multi", "SLIDING_LOG", "100", "1h", "FIXED_WINDOW", "2", "1h", "GCRA", "1",
       "1h"},
      {"RL.CHECK", "par:multi2", "SLIDING_WINDOW", "100", "1d", "FIXED_WINDOW", "2", "1h"},
      {"RL.CHECK", "par:multi2", "SLIDING_WINDOW", "100", "1d", "FIXED_WINDOW", "2", "1h"},
      {"RL.CHECK", "par:multi2", "SLIDING_WINDOW", "100", "1d", "FIXED_WINDOW", "2", "1h"},
      {"RL.CHECK", "par:eight", "TOKEN_BUCKET", "9", "1m", "GCRA",
       "9",        "1m",        "SLIDING_LOG",  "9", "1m", "SLIDING_WINDOW",
       "9",        "1m",        "FIXED_WINDOW", "9", "1m", "LEAKY_BUCKET",
       "9",        "1m",        "TOKEN_BUCKET", "9", "1h", "GCRA",
       "9",        "1h",        "COST",         "4"},
      {"rl.check", "par:case", "token_bucket", "3", "1M", "cost", "1", "headers"},
      {"RL.CHECK", "par:units", "FIXED_WINDOW", "3", "86400000ms"},
      {"RL.CHECK", "par:units", "FIXED_WINDOW", "3", "60"},
      {"RL.CHECK", "par:units", "FIXED_WINDOW", "3", "1d"},
      {"RL.CHECK", "par:units", "SLIDING_LOG", "3", "60s"},
      {"RL.CHECK", "par:units", "SLIDING_LOG", "3", "1m"},
      {"RL.CHECK", "", "GCRA", "3", "1m"},
      // The largest values (refill of 3.5 per ms: one call each, on fresh keys).
      {"RL.CHECK", "par:big1", "GCRA", "1099511627776", "3650d", "COST", "1099511627776"},
      {"RL.CHECK", "par:big2", "TOKEN_BUCKET", "1099511627776", "3650d", "COST", "1099511627777"},
  };
  cmds.insert(cmds.end(), more.begin(), more.end());
  return cmds;
}

std::vector<Cmd> Policies() {
  return {
      {"RL.POLICY", "SET", "p1", "TOKEN_BUCKET", "3", "1m"},
      {"RL.POLICY", "SET", "p2", "SLIDING_WINDOW", "100", "1h", "FIXED_WINDOW", "5000", "1d",
       "FAIL_CLOSED"},
      {"RL.POLICY", "SET", "p3", "FIXED_WINDOW", "1", "1m", "SHADOW"},
      {"rl.policy", "set", "p4", "gcra", "10", "60s", "burst", "10", "fail_open"},
      {"RL.POLICY", "GET", "p1"},
      {"RL.POLICY", "GET", "p2"},
      {"RL.POLICY", "GET", "p4"},
      {"RL.POLICY", "GET", "nope"},
      {"RL.POLICY", "LIST"},
      {"RL.CHECK", "u", "POLICY", "p1"},
      {"RL.CHECK", "u", "POLICY", "p1", "COST", "2", "HEADERS"},
      {"RL.CHECK", "u", "POLICY", "p1"},
      {"RL.PEEK", "u", "POLICY", "p1", "HEADERS"},
      // The caller's definition under the policy's state (rl::RemoteLimiter's inline mode).
      {"RL.PEEK", "u", "POLICY", "p1", "TOKEN_BUCKET", "3", "1m"},
      {"RL.CHECK", "u", "POLICY", "unstored", "GCRA", "5", "1m", "HEADERS"},
      {"RL.CHECK", "u", "TOKEN_BUCKET", "3", "1m"},
      {"RL.RESET", "u", "POLICY", "p1"},
      {"RL.RESET", "u", "POLICY", "p1"},
      {"RL.CHECK", "u", "POLICY", "p2", "HEADERS"},
      {"RL.CHECK", "s", "POLICY", "p3"},
      {"RL.CHECK", "s", "POLICY", "p3", "HEADERS"},
      {"RL.CHECK", "s", "POLICY", "p3"},
      {"RL.POLICY", "DEL", "p1"},
      {"RL.POLICY", "DEL", "p1"},
      {"RL.CHECK", "u", "POLICY", "p1"},
      {"RL.POLICY", "LIST"},
      {"RL.POLICY", "HELP"},
  };
}

std::vector<Cmd> Throttles() {
  std::vector<Cmd> cmds = {
      {"CL.THROTTLE", "user123", "15", "30", "60"},
      {"CL.THROTTLE", "user123", "15", "30", "60", "1"},
      {"CL.THROTTLE", "user123", "15", "30", "60", "0"},
      {"CL.THROTTLE", "user123", "15", "30", "60", "20"},
      {"CL.THROTTLE", "cell", "4", "1", "60", "6"},
  };
  for (int i = 0; i < 6; ++i) cmds.push_back({"CL.THROTTLE", "cell", "4", "1", "60"});
  cmds.push_back({"CL.THROTTLE", "zero", "0", "1", "60"});
  cmds.push_back({"CL.THROTTLE", "zero", "0", "1", "60"});
  return cmds;
}

// Every argument error of the contract (command/src/request.cc, core/src/limit.cc) and the
// arity errors the command table gives.
std::vector<Cmd> Errors() {
  const std::string big = "1099511627777";
  return {
      {"RL.CHECK", "k"},
      {"RL.CHECK", "k", "GCRA"},
      {"RL.PEEK", "k"},
      {"RL.RESET", "k"},
      {"RL.CHECK", "k", "GCRA", "5"},
      {"RL.CHECK", "k", "NOPE", "5", "1s"},
      {"RL.CHECK", "k", "5", "GCRA", "1s"},
      {"RL.CHECK", "k", "GCRA", "0", "1s"},
      {"RL.CHECK", "k", "GCRA", "-5", "1s"},
      {"RL.CHECK", "k", "GCRA", "x", "1s"},
      {"RL.CHECK", "k", "GCRA", big, "1s"},
      {"RL.CHECK", "k", "GCRA", "99999999999999999999999", "1s"},
      {"RL.CHECK", "k", "GCRA", "5", "0"},
      {"RL.CHECK", "k", "GCRA", "5", "0s"},
      {"RL.CHECK", "k", "GCRA", "5", "1y"},
      {"RL.CHECK", "k", "GCRA", "5", "-1s"},
      {"RL.CHECK", "k", "GCRA", "5", "s"},
      {"RL.CHECK", "k", "GCRA", "5", "3651d"},
      {"RL.CHECK", "k", "GCRA", "5", "99999999999999999999ms"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "BURST"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "BURST", "0"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "BURST", big},
      {"RL.CHECK", "k", "FIXED_WINDOW", "5", "1s", "BURST", "3"},
      {"RL.CHECK", "k", "SLIDING_LOG", "5", "1s", "BURST", "3"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "GCRA", "6", "1000ms"},
      {"RL.CHECK", "k",    "GCRA", "1",    "1s",   "GCRA", "1",    "2s",   "GCRA", "1",
       "3s",       "GCRA", "1",    "4s",   "GCRA", "1",    "5s",   "GCRA", "1",    "6s",
       "GCRA",     "1",    "7s",   "GCRA", "1",    "8s",   "GCRA", "1",    "9s"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "COST"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "COST", "-1"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "COST", "x"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "COST", "1.5"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "COST", "9223372036854775808"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "COST", "1", "COST", "1"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "HEADERS", "HEADERS"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "BOGUS"},
      {"RL.CHECK", "k", "GCRA", "5", "1s", "SHADOW"},
      {"RL.CHECK", "k", "POLICY"},
      {"RL.CHECK", "k", "POLICY", "nope"},
      {"RL.CHECK", "k", "POLICY", "nope", "COST", "1"},
      {"RL.CHECK", "k", "POLICY", "bad\x01name", "GCRA", "5", "1s"},
      {"RL.CHECK", "k", "POLICY", std::string(200, 'p'), "GCRA", "5", "1s"},
      {"RL.CHECK", "k", "POLICY", "p", "GCRA", "0", "1s"},
      {"RL.PEEK", "k", "GCRA", "5", "1s", "COST", "-3"},
      {"RL.RESET", "k", "GCRA", "5", "1s", "COST", "1"},
      {"RL.RESET", "k", "GCRA", "5", "1s", "HEADERS"},
      {"RL.RESET", "k", "POLICY", "nope"},
      {"RL.CHECK", "k", "\xff\xfe", "5", "1s"},
      {"RL.CHECK", "k", std::string(100, 'A'), "5", "1s"},
      {"CL.THROTTLE", "k"},
      {"CL.THROTTLE", "k", "1", "2"},
      {"CL.THROTTLE", "k", "1", "2", "3", "4", "5"},
      {"CL.THROTTLE", "k", "x", "2", "3"},
      {"CL.THROTTLE", "k", "1", "2", "3", "x"},
      {"CL.THROTTLE", "k", "-1", "2", "3"},
      {"CL.THROTTLE", "k", big, "2", "3"},
      {"CL.THROTTLE", "k", "1", "0", "3"},
      {"CL.THROTTLE", "k", "1", "2", "0"},
      {"CL.THROTTLE", "k", "1", big, "3"},
      {"CL.THROTTLE", "k", "1", "2", "315360001"},
      {"CL.THROTTLE", "k", "1", "2", "3", "-1"},
      {"RL.POLICY"},
      {"RL.POLICY", "NOPE"},
      {"rl.policy", "nope", "x"},
      {"RL.POLICY", "SET"},
      {"RL.POLICY", "SET", "p"},
      {"RL.POLICY", "SET", "p", "GCRA"},
      {"RL.POLICY", "SET", "p", "GCRA", "5"},
      {"RL.POLICY", "SET", "p", "COST", "1"},
      {"RL.POLICY", "SET", "p", "GCRA", "5", "1s", "SHADOW", "SHADOW"},
      {"RL.POLICY", "SET", "p", "GCRA", "5", "1s", "FAIL_OPEN", "FAIL_CLOSED"},
      {"RL.POLICY", "SET", "p", "GCRA", "5", "1s", "FAIL_OPEN", "FAIL_OPEN"},
      {"RL.POLICY", "SET", "p", "GCRA", "5", "1s", "COST", "1"},
      {"RL.POLICY", "SET", "p", "SHADOW", "GCRA", "5", "1s"},
      {"RL.POLICY", "SET", "p", "GCRA", "5", "1s", "GCRA", "5", "1s"},
      {"RL.POLICY", "SET", "bad name", "GCRA", "5", "1s"},
      {"RL.POLICY", "SET", std::string(200, 'p'), "GCRA", "5", "1s"},
      {"RL.POLICY", "GET"},
      {"RL.POLICY", "GET", "a", "b"},
      {"RL.POLICY", "DEL"},
      {"RL.POLICY", "LIST", "x"},
      {"RL.POLICY", "HELP", "x"},
      {"RL.POLICY", "GET", "p"},
  };
}

// Refunds, charges, penalty blocks and leases (round 2).
std::vector<Cmd> Features() {
  std::vector<Cmd> cmds = {
      {"RL.CHECK", "f:llm", "TOKEN_BUCKET", "100", "1h", "COST", "50"},
      {"RL.REFUND", "f:llm", "TOKEN_BUCKET", "100", "1h", "COST", "30"},
      {"RL.CHARGE", "f:llm", "TOKEN_BUCKET", "100", "1h", "COST", "200"},
      {"RL.CHECK", "f:llm", "TOKEN_BUCKET", "100", "1h"},
      {"RL.CHARGE", "f:llm", "TOKEN_BUCKET", "100", "1h", "COST", "0", "HEADERS"},
      {"RL.REFUND", "f:llm", "TOKEN_BUCKET", "100", "1h", "COST", "1000"},
  };
  for (const std::string alg : kAlgorithms) {
    const std::string key = "f:" + alg;
    for (int i = 0; i < 3; ++i) cmds.push_back({"RL.CHECK", key, alg, "5", "1h"});
    cmds.push_back({"RL.REFUND", key, alg, "5", "1h", "COST", "1"});
    cmds.push_back({"RL.CHARGE", key, alg, "5", "1h", "COST", "10"});
    cmds.push_back({"RL.PEEK", key, alg, "5", "1h", "COST", "0"});
    cmds.push_back({"RL.CHECK", key, alg, "5", "1h"});
    cmds.push_back({"RL.REFUND", key, alg, "5", "1h", "COST", "20", "HEADERS"});
    cmds.push_back({"RL.CHECK", key, alg, "5", "1h"});
    // A penalty block on each algorithm.
    const std::string blocked = "f:block:" + alg;
    for (int i = 0; i < 3; ++i)
      cmds.push_back({"RL.CHECK", blocked, alg, "2", "1h", "BLOCK", "2h"});
    cmds.push_back({"RL.PEEK", blocked, alg, "2", "1h", "BLOCK", "2h"});
    cmds.push_back({"RL.PEEK", blocked, alg, "2", "1h"});
    cmds.push_back({"RL.RESET", blocked, alg, "2", "1h"});
    cmds.push_back({"RL.CHECK", blocked, alg, "2", "1h", "BLOCK", "2h"});
  }
  const std::vector<Cmd> more = {
      {"RL.ACQUIRE", "f:job", "CONCURRENCY", "2", "LEASE", "1h", "FIXED_WINDOW", "3", "1h"},
      {"RL.ACQUIRE", "f:job", "CONCURRENCY", "2", "LEASE", "1h", "FIXED_WINDOW", "3", "1h",
       "HEADERS"},
      {"RL.ACQUIRE", "f:job", "CONCURRENCY", "2", "LEASE", "1h", "FIXED_WINDOW", "3", "1h"},
      {"RL.PEEK", "f:job", "CONCURRENCY", "2", "LEASE", "1h", "FIXED_WINDOW", "3", "1h"},
      {"RL.PEEK", "f:job", "CONCURRENCY", "3"},
      {"RL.ACQUIRE", "f:job", "CONCURRENCY", "3", "FIXED_WINDOW", "3", "1h", "COST", "0"},
      {"RL.ACQUIRE", "f:job", "CONCURRENCY", "4", "FIXED_WINDOW", "3", "1h"},
      {"RL.RESET", "f:job", "CONCURRENCY", "1"},
      {"RL.ACQUIRE", "f:job", "CONCURRENCY", "1", "LEASE", "1h"},
      {"RL.POLICY", "SET", "ex", "CONCURRENCY", "1", "LEASE", "1h", "FIXED_WINDOW", "5", "1h"},
      {"RL.POLICY", "GET", "ex"},
      {"RL.ACQUIRE", "f:t", "POLICY", "ex"},
      {"RL.ACQUIRE", "f:t", "POLICY", "ex"},
      {"RL.PEEK", "f:t", "POLICY", "ex"},
      {"RL.CHECK", "f:t", "POLICY", "ex"},
      {"RL.ACQUIRE", "f:t", "POLICY", "ex", "CONCURRENCY", "2", "LEASE", "1h"},
      // Errors.
      {"RL.REFUND", "f:e", "GCRA", "5", "1h"},
      {"RL.CHARGE", "f:e", "GCRA", "5", "1h"},
      {"RL.CHARGE", "f:e", "GCRA", "5", "1h", "COST", "-1"},
      {"RL.CHARGE", "f:e", "GCRA", "5", "1h", "COST", "1099511627777"},
      {"RL.REFUND", "f:e", "LEAKY_BUCKET", "5", "1h", "COST", "1"},
      {"RL.REFUND", "f:e", "CONCURRENCY", "5", "COST", "1"},
      {"RL.REFUND", "f:e"},
      {"RL.ACQUIRE", "f:e"},
      {"RL.ACQUIRE", "f:e", "GCRA", "5", "1h"},
      {"RL.ACQUIRE", "f:e", "CONCURRENCY"},
      {"RL.ACQUIRE", "f:e", "CONCURRENCY", "0"},
      {"RL.ACQUIRE", "f:e", "CONCURRENCY", "10001"},
      {"RL.ACQUIRE", "f:e", "CONCURRENCY", "1", "LEASE"},
      {"RL.ACQUIRE", "f:e", "CONCURRENCY", "1", "LEASE", "0"},
      {"RL.ACQUIRE", "f:e", "CONCURRENCY", "1", "CONCURRENCY", "2"},
      {"RL.ACQUIRE", "f:e", "CONCURRENCY", "1", "BLOCK", "1h"},
      {"RL.ACQUIRE", "f:e", "CONCURRENCY", "1", "COST", "-1"},
      {"RL.CHECK", "f:e", "CONCURRENCY", "1"},
      {"RL.CHECK", "f:e", "GCRA", "5", "1h", "LEASE", "1m"},
      {"RL.CHECK", "f:e", "GCRA", "5", "1h", "BLOCK"},
      {"RL.CHECK", "f:e", "GCRA", "5", "1h", "BLOCK", "0"},
      {"RL.CHECK", "f:e", "GCRA", "5", "1h", "BLOCK", "1h", "BLOCK", "1h"},
      {"RL.RELEASE", "f:e"},
      {"RL.RELEASE", "f:e", "x", "y"},
      {"RL.RELEASE", "f:e", "not-a-lease-id"},
      {"RL.RELEASE", "f:e", std::string(40, 'f')},
      {"RL.POLICY", "SET", "bad", "CONCURRENCY", "1", "CONCURRENCY", "2"},
  };
  cmds.insert(cmds.end(), more.begin(), more.end());
  return cmds;
}

// Lease ids differ (they are random): each server releases its own.
void CompareReleases(RespClient& a, RespClient& b) {
  const Cmd acquire = {"RL.ACQUIRE", "f:rel", "CONCURRENCY", "1", "LEASE", "1h"};
  const Reply x = a.Call(acquire), y = b.Call(acquire);
  ASSERT_EQ(Show(x).size(), Show(y).size()) << Show(x) << " vs " << Show(y);
  const std::string ida = x.type == '%' ? x.Get("lease")->str : x.elements.back().str;
  const std::string idb = y.type == '%' ? y.Get("lease")->str : y.elements.back().str;
  ASSERT_EQ(ida.size(), 40u);
  ASSERT_EQ(idb.size(), 40u);
  for (const std::string key : {"f:other", "f:rel", "f:rel"}) {
    const Reply ra = a.Call({"RL.RELEASE", key, ida}), rb = b.Call({"RL.RELEASE", key, idb});
    EXPECT_EQ(Show(ra), Show(rb)) << key;
  }
}

// Every RL.* row of the shared table (command/docs.cc) is served by both front ends: COMMAND INFO
// knows its command, and called with as many arguments as its arity asks for it answers the same on
// both (at most an error about those arguments, never "unknown command"), connection intact.
TEST_F(ParityTest, EveryRowIsServedByBoth) {
  std::vector<const command::CommandDoc*> leaves;
  for (const command::CommandDoc& doc : command::RlCommandDocs()) {
    if (doc.subcommands.empty()) leaves.push_back(&doc);
    for (const command::CommandDoc& sub : doc.subcommands) leaves.push_back(&sub);
  }
  ASSERT_GE(leaves.size(), 13u);
  for (const command::CommandDoc* doc : leaves) {
    Cmd cmd;
    const size_t bar = doc->name.find('|');
    cmd.push_back(doc->name.substr(0, bar));
    if (bar != std::string::npos) cmd.push_back(doc->name.substr(bar + 1));
    const size_t arity = static_cast<size_t>(std::abs(doc->arity));
    while (cmd.size() < arity) cmd.push_back(cmd.size() == 1 ? "served" : "1");
    for (RespClient* c : {a_.get(), b_.get()}) {
      const Reply info = c->Call({"COMMAND", "INFO", cmd[0]});
      ASSERT_EQ(info.elements.size(), 1u) << doc->name;
      EXPECT_FALSE(info.elements[0].is_null()) << doc->name << " unknown to COMMAND INFO";
    }
    const Reply a = a_->Call(cmd);
    const Reply b = b_->Call(cmd);
    ASSERT_NE(a.type, 'X') << "rl-server dropped the connection on " << Text(cmd);
    ASSERT_NE(b.type, 'X') << "rl.so dropped the connection on " << Text(cmd);
    for (const Reply* r : {&a, &b}) {
      EXPECT_EQ(r->str.rfind("ERR unknown command", 0), std::string::npos) << Text(cmd);
      EXPECT_EQ(r->str.rfind("ERR unknown subcommand", 0), std::string::npos) << Text(cmd);
    }
    EXPECT_TRUE(Equivalent(a, b, KindOf(cmd), ToleranceFor(cmd))) << Text(cmd);
    EXPECT_EQ(a_->Call({"PING"}).str, "PONG");
    EXPECT_EQ(b_->Call({"PING"}).str, "PONG");
  }
}

TEST_F(ParityTest, Resp2) {
  Run(Decisions());
  Run(Policies());
  Run(Throttles());
  Run(Errors());
  Run(Features());
  CompareReleases(*a_, *b_);
  std::printf("compared %d replies\n", compared_);
}

TEST_F(ParityTest, Resp3) {
  Hello3();
  Run(Decisions());
  Run(Policies());
  Run(Throttles());
  Run(Errors());
  Run(Features());
  CompareReleases(*a_, *b_);
  std::printf("compared %d replies\n", compared_);
}

}  // namespace
}  // namespace rl::test

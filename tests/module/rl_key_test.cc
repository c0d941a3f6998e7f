// What only rl.so has: the user's key as a Redis key of type "ratelimit" (TYPE, WRONGTYPE, PTTL
// = time until fresh, MEMORY USAGE, at most 1024 states, redis-cell's keys adopted), command
// metadata (key specs, flags, docs, ACL key patterns), and what counts as a write (dirty counter,
// WATCH, maxmemory).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class RlKeyTest : public RlServerTest {};
constexpr const char* kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

// redis-cell's state is a plain string: its GCRA's theoretical arrival time (TAT) in Unix
// nanoseconds, the key expiring at the TAT (it writes the value, then sets the expiry in ms; old
// versions used SETEX in seconds). CL.THROTTLE alone takes such a key over and answers as
// redis-cell would next: no WRONGTYPE, no fresh burst. Here 10 per 60 s with max_burst 9: one
// token per 6 s, 10 at most.
TEST_F(RlKeyTest, ClThrottleAdoptsRedisCellKeys) {
  RespClient c(port());
  const int64_t now = TimeMs(c.Call({"TIME"}));
  // `unit`: PX as redis-cell writes it, EX as old versions did, "" for none (old versions set
  // none when under 2 s were left).
  auto cell = [&](const std::string& key, int64_t tat_ms, const std::string& unit = "PX") {
    std::vector<std::string> set = {"SET", key, std::to_string(tat_ms * 1000000 + 123456)};
    if (!unit.empty()) {
      set.push_back(unit);
      set.push_back(std::to_string(unit == "PX" ? tat_ms - now : (tat_ms - now) / 1000));
    }
    ASSERT_EQ(c.Call(set).str, "OK");
  };
  const std::vector<std::string> throttle = {"CL.THROTTLE", "", "9", "10", "60"};
  auto call = [&](const std::string& key) {
    std::vector<std::string> cmd = throttle;
    cmd[1] = key;
    return c.Call(cmd);
  };
  // 2.9 tokens used: allowed, 6 left, full again in 23.5 s; then exactly 6 more pass.
  cell("cell:a", now + 17500);
  EXPECT_EQ(call("cell:a").Ints(), (std::vector<int64_t>{0, 10, 6, -1, 24}));
  EXPECT_EQ(c.Call({"TYPE", "cell:a"}).str, "ratelimit");
  for (int i = 0; i < 6; ++i) EXPECT_EQ(call("cell:a").Ints()[0], 0) << i;
  EXPECT_EQ(call("cell:a").Ints()[0], 1) << "no fresh burst";
  // 9.9 tokens used, written by an old redis-cell (SETEX): denied, retry in 5.5 s.
  cell("cell:b", now + 59500, "EX");
  EXPECT_EQ(call("cell:b").Ints(), (std::vector<int64_t>{1, 10, 0, 6, 60}));
  const long long pttl = c.Call({"PTTL", "cell:b"}).integer;
  // The expiry is the TAT's, not a fresh 60 s. A few ms of slack: rl.so's times come from its
  // monotonic clock mapped onto Unix time, which can sit a ms or two off Redis's wall clock (one
  // loaded run read 59502).
  EXPECT_GT(pttl, 50000);
  EXPECT_LE(pttl, 59510);
  // A TAT in the past is a full allowance (redis-cell's too), as is an application's integer
  // counter under the name (docs/features.md: RL keys want a prefix of their own).
  cell("cell:c", now - 1000, "");
  ASSERT_EQ(c.Call({"SET", "cell:d", "42"}).str, "OK");
  for (const char* key : {"cell:c", "cell:d"}) {
    EXPECT_EQ(call(key).Ints(), (std::vector<int64_t>{0, 10, 9, -1, 6})) << key;
  }
  // Only CL.THROTTLE adopts, and only decimal 64-bit integers.
  cell("cell:e", now + 17500);
  EXPECT_EQ(c.Call({"RL.CHECK", "cell:e", "GCRA", "10", "60s"}).str, kWrongType);
  EXPECT_EQ(c.Call({"RL.PEEK", "cell:e", "GCRA", "10", "60s"}).str, kWrongType);
  EXPECT_EQ(c.Call({"TYPE", "cell:e"}).str, "string");
  for (const char* value : {"12x", "", "99999999999999999999", "1.5"}) {
    ASSERT_EQ(c.Call({"SET", "cell:f", value}).str, "OK");
    EXPECT_EQ(call("cell:f").str, kWrongType) << value;
    EXPECT_EQ(c.Call({"GET", "cell:f"}).str, value);
  }
}

TEST_F(RlKeyTest, OneKeyOfTypeRatelimitAndWrongtype) {
  RespClient c(port());
  // Every state of one user key (inline limits, two policies, CL.THROTTLE) is one Redis key.
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "a", "GCRA", "5", "1m"}).str, "OK");
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "b", "SLIDING_LOG", "5", "1m"}).str, "OK");
  EXPECT_EQ(
      c.Call({"RL.CHECK", "rl:user:42", "GCRA", "5", "1m", "FIXED_WINDOW", "9", "1h"}).Ints()[0],
      1);
  EXPECT_EQ(c.Call({"RL.CHECK", "rl:user:42", "POLICY", "a"}).Ints()[0], 1);
  EXPECT_EQ(c.Call({"RL.CHECK", "rl:user:42", "POLICY", "b"}).Ints()[0], 1);
  EXPECT_EQ(c.Call({"CL.THROTTLE", "rl:user:42", "4", "1", "1"}).Ints()[0], 0);
  EXPECT_EQ(c.Call({"DBSIZE"}).integer, 1);
  EXPECT_EQ(c.Call({"TYPE", "rl:user:42"}).str, "ratelimit");
  EXPECT_EQ(c.Call({"GET", "rl:user:42"}).str, kWrongType);

  // The user's key is the Redis key: application data under that name answers WRONGTYPE.
  ASSERT_EQ(c.Call({"SET", "user:42", "app data"}).str, "OK");
  ASSERT_EQ(c.Call({"HSET", "h", "f", "v"}).integer, 1);
  for (const std::string key : {"user:42", "h"}) {
    EXPECT_EQ(c.Call({"RL.CHECK", key, "GCRA", "5", "1m"}).str, kWrongType);
    EXPECT_EQ(c.Call({"RL.PEEK", key, "GCRA", "5", "1m"}).str, kWrongType);
    EXPECT_EQ(c.Call({"RL.RESET", key, "GCRA", "5", "1m"}).str, kWrongType);
    EXPECT_EQ(c.Call({"CL.THROTTLE", key, "1", "1", "1"}).str, kWrongType);  // not a number
    EXPECT_EQ(c.Call({"RL.CHECK", key, "POLICY", "a", "COST", "0"}).str, kWrongType);
  }
  EXPECT_EQ(c.Call({"GET", "user:42"}).str, "app data") << "left untouched";
  // Argument errors come first (as rl-server, which has no types).
  EXPECT_EQ(c.Call({"RL.CHECK", "user:42", "GCRA", "0", "1m"}).str,
            "ERR limit must be between 1 and 1099511627776");
  // COPY, RENAME and DEL treat it as any value.
  EXPECT_EQ(c.Call({"COPY", "rl:user:42", "rl:user:43"}).integer, 1);
  // The same counts (the times move by the moment between the two calls; the digests below
  // show the values are identical).
  const std::vector<int64_t> copy = c.Call({"RL.PEEK", "rl:user:43", "POLICY", "a"}).Ints();
  const std::vector<int64_t> original = c.Call({"RL.PEEK", "rl:user:42", "POLICY", "a"}).Ints();
  ASSERT_EQ(copy.size(), 5u);
  ASSERT_EQ(original.size(), 5u);
  EXPECT_EQ(std::vector<int64_t>(copy.begin(), copy.begin() + 3),
            std::vector<int64_t>(original.begin(), original.begin() + 3));
  EXPECT_EQ(c.Call({"DEBUG", "DIGEST-VALUE", "rl:user:43"}).elements.at(0).str,
            c.Call({"DEBUG", "DIGEST-VALUE", "rl:user:42"}).elements.at(0).str);
  EXPECT_EQ(c.Call({"RENAME", "rl:user:43", "rl:user:44"}).str, "OK");
  EXPECT_EQ(c.Call({"TYPE", "rl:user:44"}).str, "ratelimit");
  EXPECT_EQ(c.Call({"DEL", "rl:user:44"}).integer, 1);
}

TEST_F(RlKeyTest, PttlIsTheTimeUntilFreshAndIdleKeysVanish) {
  RespClient c(port());
  // One limit: the key lives exactly until its state is fresh again (reset_after_ms).
  struct Case {
    std::vector<std::string> limit;
    int calls;
  } cases[] = {{{"FIXED_WINDOW", "3", "20s"}, 2}, {{"TOKEN_BUCKET", "10", "30s"}, 4},
               {{"GCRA", "10", "30s"}, 3},        {{"SLIDING_WINDOW", "5", "20s"}, 2},
               {{"SLIDING_LOG", "5", "20s"}, 3},  {{"LEAKY_BUCKET", "4", "20s"}, 2}};
  for (const Case& tc : cases) {
    const std::string key = "ttl:" + tc.limit[0];
    std::vector<std::string> cmd = {"RL.CHECK", key};
    cmd.insert(cmd.end(), tc.limit.begin(), tc.limit.end());
    Reply r;
    for (int i = 0; i < tc.calls; ++i) r = c.Call(cmd);
    const long long pttl = c.Call({"PTTL", key}).integer;
    ASSERT_EQ(r.type, '*') << Show(r);
    const int64_t reset_after = r.elements[4].integer;
    EXPECT_GT(pttl, 0) << key;
    EXPECT_LE(pttl, reset_after + 5) << key;
    EXPECT_GE(pttl, reset_after - 1000) << key << ": a generous bound for a loaded machine";
  }
  // Several limits: the longest wait until all are fresh.
  c.Call({"RL.CHECK", "ttl:multi", "GCRA", "10", "1s", "FIXED_WINDOW", "10", "40s"});
  const long long multi = c.Call({"PTTL", "ttl:multi"}).integer;
  EXPECT_GT(multi, 39000);
  EXPECT_LE(multi, 40000);

  // Nothing stored for a denied, zero-cost or peeking call on a fresh key.
  c.Call({"RL.CHECK", "ttl:none", "GCRA", "1", "1m", "COST", "2"});
  c.Call({"RL.CHECK", "ttl:none", "GCRA", "1", "1m", "COST", "0"});
  c.Call({"RL.PEEK", "ttl:none", "GCRA", "1", "1m"});
  EXPECT_EQ(c.Call({"EXISTS", "ttl:none"}).integer, 0);
  // RL.RESET of the last state deletes the key.
  ASSERT_EQ(
      c.Call({"RL.RESET", "ttl:multi", "GCRA", "10", "1s", "FIXED_WINDOW", "10", "40s"}).integer,
      2);
  EXPECT_EQ(c.Call({"EXISTS", "ttl:multi"}).integer, 0);

  // An idle key vanishes by itself (active expiry; nobody touches it).
  c.Call({"RL.CHECK", "ttl:short", "TOKEN_BUCKET", "10", "1s", "COST", "3"});
  EXPECT_LE(c.Call({"PTTL", "ttl:short"}).integer, 300);
  const long long expired_before = std::stoll(server().InfoField("stats", "expired_keys"));
  EXPECT_TRUE(WaitUntil(
      [&] { return std::stoll(server().InfoField("stats", "expired_keys")) > expired_before; },
      seconds(10), milliseconds(50)));
  EXPECT_EQ(c.Call({"EXISTS", "ttl:short"}).integer, 0);
}

TEST_F(RlKeyTest, MemoryUsageReportsTheValue) {
  RespClient c(port());
  c.Call({"RL.CHECK", "mem:one", "TOKEN_BUCKET", "100", "1m"});
  const long long one = c.Call({"MEMORY", "USAGE", "mem:one"}).integer;
  EXPECT_GT(one, 0);
  c.Call({"RL.CHECK", "mem:four", "TOKEN_BUCKET", "100", "1m", "GCRA", "100", "1h",
          "SLIDING_WINDOW", "100", "1m", "FIXED_WINDOW", "100", "1d"});
  const long long four = c.Call({"MEMORY", "USAGE", "mem:four"}).integer;
  EXPECT_GE(four, one + 3 * 32) << "each state adds its entry";
  // A sliding log grows with what it holds.
  c.Call({"RL.CHECK", "mem:log", "SLIDING_LOG", "1000", "1m"});
  const long long log_small = c.Call({"MEMORY", "USAGE", "mem:log"}).integer;
  for (int i = 0; i < 100; ++i) {
    c.Call({"RL.CHECK", "mem:log", "SLIDING_LOG", "1000", "1m"});
    std::this_thread::sleep_for(milliseconds(1));  // distinct milliseconds: distinct runs
  }
  EXPECT_GT(c.Call({"MEMORY", "USAGE", "mem:log"}).integer, log_small);
  std::printf("MEMORY USAGE of a key with one token bucket: %lld bytes\n", one);
}

// A key holding one token bucket costs Redis's own per-key memory and no more: its state is packed
// into the key's value pointer (module/compact_value.h) instead of a 48-byte block. Measured as
// Redis counts it (INFO used_memory growth over many keys, each case in a database of its own so
// both grow equal hash tables), against a plain 24-byte string with an expiry under names of the
// same length: the one-limit key costs about as much (~10 B less; with the block it cost ~38 B
// more).
TEST_F(RlKeyTest, AOneLimitKeyCostsAboutAStringWithAnExpiry) {
  RespClient c(port());
  constexpr int kKeys = 4000;
  constexpr int kBatch = 100;  // small pipelines: the query buffer stays small
  auto grow = [&](int db, const std::vector<std::string>& tail, bool rl) {
    EXPECT_EQ(c.Call({"SELECT", std::to_string(db)}).str, "OK");
    const long long before = std::stoll(server().InfoField("memory", "used_memory"));
    for (int i = 0; i < kKeys; i += kBatch) {
      std::string wire;
      for (int j = i; j < i + kBatch; ++j) {
        char name[48];
        std::snprintf(name, sizeof(name), "rl:api-default:tenant:scope:%012d", j);
        std::vector<std::string> cmd = {rl ? "RL.CHECK" : "SET", name};
        cmd.insert(cmd.end(), tail.begin(), tail.end());
        wire += RespClient::Encode(cmd);
      }
      EXPECT_TRUE(c.SendRaw(wire));
      for (int j = 0; j < kBatch; ++j) EXPECT_NE(c.Read().type, '-');
    }
    EXPECT_EQ(c.Call({"DBSIZE"}).integer, kKeys);
    const long long after = std::stoll(server().InfoField("memory", "used_memory"));
    return static_cast<double>(after - before) / kKeys;
  };
  const double one = grow(11, {"TOKEN_BUCKET", "100", "1h"}, true);
  const double string = grow(12, {std::string(24, 'x'), "PX", "3600000"}, false);
  const double two = grow(13, {"TOKEN_BUCKET", "100", "1h", "GCRA", "10", "1s"}, true);
  // An empty bucket, an hour from full: too far for the pointer itself, so an 8-byte box.
  const double drained = grow(14, {"TOKEN_BUCKET", "100", "1h", "COST", "100"}, true);
  std::printf(
      "used_memory per key: one token bucket %.1f B (empty: %.1f B), two limits %.1f B, "
      "a 24-byte string with an expiry %.1f B\n",
      one, drained, two, string);
  EXPECT_LE(one, string + 8) << "a one-limit key holds a block again";
  EXPECT_LE(drained, one + 12) << "an empty bucket holds a block again";
  EXPECT_GE(two, one + 40) << "two limits keep a block (48 B + the second entry)";
  // Both small forms go through a later check, a peek, COPY and an RDB reload as the same state.
  for (const std::string db : {"11", "14"}) {
    EXPECT_EQ(c.Call({"SELECT", db}).str, "OK");
    const std::string key = "rl:api-default:tenant:scope:000000000007";
    const std::vector<int64_t> check =
        c.Call({"RL.CHECK", key, "TOKEN_BUCKET", "100", "1h"}).Ints();
    ASSERT_EQ(check.size(), 5u);
    EXPECT_EQ(check[2], db == "11" ? 98 : 0);
    EXPECT_EQ(c.Call({"RL.PEEK", key, "TOKEN_BUCKET", "100", "1h"}).Ints()[2], db == "11" ? 97 : 0);
    EXPECT_EQ(c.Call({"COPY", key, "copied"}).integer, 1);
    const std::string digest = c.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str;
    EXPECT_EQ(c.Call({"DEBUG", "DIGEST-VALUE", "copied"}).elements.at(0).str, digest);
    EXPECT_EQ(c.Call({"DEBUG", "RELOAD"}).str, "OK");
    EXPECT_EQ(c.Call({"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str, digest);
    EXPECT_EQ(c.Call({"RL.PEEK", key, "TOKEN_BUCKET", "100", "1h"}).Ints()[2], db == "11" ? 97 : 0);
  }
  EXPECT_EQ(c.Call({"SELECT", "0"}).str, "OK");
}

// A one-limit key moves between its small forms and its block as its bucket empties and refills
// (the pointer within ~7 tokens of full here, the box beyond, the block for a debt or a changed
// limit): at every step it answers as a key that always keeps a block (one with a second state
// under a policy, checked alike), and its state digests alike once that second state is gone.
TEST_F(RlKeyTest, SmallFormsAnswerAsTheBlock) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "other", "FIXED_WINDOW", "9", "1d"}).str, "OK");
  ASSERT_EQ(c.Call({"RL.CHECK", "twin", "POLICY", "other"}).Ints().at(0), 1);
  struct Step {
    std::vector<std::string> call;  // the command and its limits; the key goes after the first
  } steps[] = {
      {{"RL.CHECK", "TOKEN_BUCKET", "100", "1h"}},                  // 1 token out: in the pointer
      {{"RL.CHECK", "TOKEN_BUCKET", "100", "1h", "COST", "8"}},     // 9 out: boxed
      {{"RL.REFUND", "TOKEN_BUCKET", "100", "1h", "COST", "6"}},    // 3 out: the pointer again
      {{"RL.CHARGE", "TOKEN_BUCKET", "100", "1h", "COST", "150"}},  // in debt: the block
      {{"RL.PEEK", "TOKEN_BUCKET", "100", "1h"}},
      {{"RL.REFUND", "TOKEN_BUCKET", "100", "1h", "COST", "150"}},
      {{"RL.CHECK", "TOKEN_BUCKET", "50", "1h", "COST", "2"}},  // other numbers, same state
      {{"RL.CHECK", "TOKEN_BUCKET", "100", "1h", "BURST", "300", "COST", "250"}},
      {{"RL.CHECK", "TOKEN_BUCKET", "100", "1h"}},
  };
  for (const Step& step : steps) {
    std::vector<std::string> one = step.call, twin = step.call;
    one.insert(one.begin() + 1, "solo");
    twin.insert(twin.begin() + 1, "twin");
    const std::vector<int64_t> a = c.Call(one).Ints(), b = c.Call(twin).Ints();
    ASSERT_EQ(a.size(), 5u) << step.call[0];
    ASSERT_EQ(b.size(), 5u) << step.call[0];
    // allowed, limit, remaining exactly; the times within the milliseconds between the calls.
    EXPECT_EQ(std::vector<int64_t>(a.begin(), a.begin() + 3),
              std::vector<int64_t>(b.begin(), b.begin() + 3))
        << step.call[0] << " " << step.call.back();
    EXPECT_NEAR(a[4], b[4], 50) << step.call[0] << " " << step.call.back();
  }
  EXPECT_EQ(c.Call({"RL.RESET", "twin", "POLICY", "other"}).integer, 1);
  EXPECT_EQ(c.Call({"MEMORY", "USAGE", "twin"}).integer,
            c.Call({"MEMORY", "USAGE", "solo"}).integer)
      << "both back in a small form";
}

// One key holds at most rl::KeyState::kMaxStates (1024) states, all scopes together; a check
// that would add more is refused and changes nothing. (rl-server has no such per-key bound.)
TEST_F(RlKeyTest, AtMost1024StatesPerKey) {
  RespClient c(port());
  std::string wire;
  for (int w = 1; w <= 1024; ++w) {
    wire += RespClient::Encode({"RL.CHECK", "many", "GCRA", "1", std::to_string(w) + "s"});
  }
  ASSERT_TRUE(c.SendRaw(wire));
  for (int w = 1; w <= 1024; ++w) ASSERT_EQ(c.Read().type, '*') << w;
  const std::string digest = c.Call({"DEBUG", "DIGEST-VALUE", "many"}).elements.at(0).str;
  EXPECT_EQ(c.Call({"RL.CHECK", "many", "GCRA", "1", "1025s"}).str,
            "ERR too many rate-limit states under one key (at most 1024)");
  EXPECT_EQ(c.Call({"RL.CHECK", "many", "POLICY", "x", "GCRA", "1", "1s"}).str,
            "ERR too many rate-limit states under one key (at most 1024)");
  EXPECT_EQ(c.Call({"DEBUG", "DIGEST-VALUE", "many"}).elements.at(0).str, digest);
  EXPECT_EQ(c.Call({"RL.CHECK", "many", "GCRA", "1", "1024s"}).Ints()[0], 0) << "existing states";
  EXPECT_GT(c.Call({"MEMORY", "USAGE", "many"}).integer, 1024 * 40);
}

// COMMAND metadata: key at position 1, flags, docs (what cluster clients and ACLs read).
TEST_F(RlKeyTest, CommandInfoKeysAndFlags) {
  RespClient c(port());
  for (const std::vector<std::string>& cmd :
       std::vector<std::vector<std::string>>{{"RL.CHECK", "k1", "GCRA", "5", "1s", "HEADERS"},
                                             {"RL.PEEK", "k1", "POLICY", "p"},
                                             {"RL.RESET", "k1", "GCRA", "5", "1s"},
                                             {"CL.THROTTLE", "k1", "1", "2", "3"}}) {
    std::vector<std::string> getkeys = {"COMMAND", "GETKEYS"};
    getkeys.insert(getkeys.end(), cmd.begin(), cmd.end());
    Reply keys = c.Call(getkeys);
    ASSERT_EQ(keys.elements.size(), 1u) << cmd[0] << " " << Show(keys);
    EXPECT_EQ(keys.elements[0].str, "k1");
  }
  auto flags_of = [&](const std::string& name) {
    Reply info = c.Call({"COMMAND", "INFO", name});
    std::vector<std::string> flags;
    if (info.elements.size() == 1 && info.elements[0].elements.size() > 2) {
      for (const Reply& f : info.elements[0].elements[2].elements) flags.push_back(f.str);
    }
    return flags;
  };
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (const std::string name : {"rl.check", "rl.reset", "cl.throttle", "rl.policy|set"}) {
    const auto flags = flags_of(name);
    EXPECT_TRUE(has(flags, "write") && has(flags, "denyoom")) << name;
  }
  const auto peek = flags_of("rl.peek");
  EXPECT_TRUE(has(peek, "readonly")) << "RL.PEEK runs on replicas";
  EXPECT_FALSE(has(peek, "write"));
  Reply docs = c.Call({"COMMAND", "DOCS", "rl.check"});
  ASSERT_EQ(docs.elements.size(), 2u) << Show(docs);
  ASSERT_NE(docs.elements[1].Get("summary"), nullptr);
  EXPECT_EQ(docs.elements[1].Get("summary")->str.rfind("Checks and consumes", 0), 0u);
}

// Redis's save points count changes: a call that changes a state counts, one that does not
// (denied, peek, zero cost) counts nothing, as it replicates nothing.
TEST_F(RlKeyTest, OnlyChangesCountAsDirty) {
  RespClient c(port());
  auto dirty = [&] {
    return std::stoll(server().InfoField("persistence", "rdb_changes_since_last_save"));
  };
  const long long start = dirty();
  ASSERT_EQ(c.Call({"RL.CHECK", "dirty", "FIXED_WINDOW", "1", "1h"}).Ints()[0], 1);
  const long long after_allowed = dirty();
  EXPECT_GT(after_allowed, start);
  EXPECT_EQ(c.Call({"RL.CHECK", "dirty", "FIXED_WINDOW", "1", "1h"}).Ints()[0], 0);
  c.Call({"RL.PEEK", "dirty", "FIXED_WINDOW", "1", "1h"});
  c.Call({"RL.CHECK", "dirty", "FIXED_WINDOW", "1", "1h", "COST", "0"});
  c.Call({"CL.THROTTLE", "dirty", "0", "1", "3600", "0"});
  c.Call({"RL.RESET", "dirty", "GCRA", "1", "1h"});  // nothing there to remove
  EXPECT_EQ(dirty(), after_allowed);
}

// WATCH (and client tracking) see a key as modified only when its state changed.
TEST_F(RlKeyTest, WatchSeesOnlyRealChanges) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"RL.CHECK", "w", "FIXED_WINDOW", "1", "1h"}).Ints()[0], 1);
  auto transaction_survives = [&](const std::vector<std::string>& cmd) {
    EXPECT_EQ(c.Call({"WATCH", "w"}).str, "OK");
    c.Call(cmd);
    EXPECT_EQ(c.Call({"MULTI"}).str, "OK");
    EXPECT_EQ(c.Call({"PING"}).str, "QUEUED");
    return !c.Call({"EXEC"}).is_null();
  };
  EXPECT_TRUE(transaction_survives({"RL.CHECK", "w", "FIXED_WINDOW", "1", "1h"})) << "denied";
  EXPECT_TRUE(transaction_survives({"RL.CHECK", "w", "FIXED_WINDOW", "1", "1h", "COST", "0"}));
  EXPECT_TRUE(transaction_survives({"RL.PEEK", "w", "FIXED_WINDOW", "1", "1h"}));
  EXPECT_TRUE(transaction_survives({"RL.RESET", "w", "GCRA", "1", "1h"})) << "nothing to reset";
  EXPECT_TRUE(transaction_survives({"CL.THROTTLE", "w", "0", "1", "60", "0"}));
  EXPECT_FALSE(transaction_survives({"RL.CHECK", "w", "GCRA", "5", "1h"})) << "a new state";
  EXPECT_FALSE(transaction_survives({"RL.RESET", "w", "GCRA", "5", "1h"}));
  EXPECT_FALSE(transaction_survives({"RL.RESET", "w", "FIXED_WINDOW", "1", "1h"})) << "deleted";
  EXPECT_EQ(c.Call({"EXISTS", "w"}).integer, 0);
}

// The key specs make ACL key patterns apply: a user limited to rl:* cannot touch other keys.
TEST_F(RlKeyTest, AclKeyPatternsApply) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"ACL", "SETUSER", "limiter", "on", ">pw", "~rl:*", "+rl.check", "+rl.peek",
                    "+cl.throttle", "+rl.policy|get", "+exists"})
                .str,
            "OK");
  RespClient u(port());
  ASSERT_EQ(u.Call({"AUTH", "limiter", "pw"}).str, "OK");
  EXPECT_EQ(u.Call({"RL.CHECK", "rl:user:1", "GCRA", "5", "1m"}).Ints()[0], 1);
  EXPECT_EQ(u.Call({"RL.PEEK", "rl:user:1", "GCRA", "5", "1m"}).Ints()[2], 3);
  // The server's own refusal of a key outside the pattern, as a built-in command gets it (Redis
  // 7.0: "NOPERM this user has no permissions to access one of the keys used as arguments";
  // Valkey 8: "NOPERM No permissions to access a key").
  const std::string noperm = u.Call({"EXISTS", "app:data"}).str;
  ASSERT_EQ(noperm.rfind("NOPERM", 0), 0u) << noperm;
  EXPECT_EQ(u.Call({"RL.CHECK", "app:data", "GCRA", "5", "1m"}).str, noperm);
  EXPECT_EQ(u.Call({"CL.THROTTLE", "app:data", "1", "1", "1"}).str, noperm);
  EXPECT_EQ(u.Call({"RL.RESET", "rl:user:1", "GCRA", "5", "1m"}).str.rfind("NOPERM", 0), 0u);
  EXPECT_EQ(u.Call({"RL.POLICY", "SET", "p", "GCRA", "5", "1m"}).str.rfind("NOPERM", 0), 0u);
  EXPECT_TRUE(u.Call({"RL.POLICY", "GET", "p"}).is_null());
  EXPECT_EQ(c.Call({"ACL", "DELUSER", "limiter"}).integer, 1);
}

// RL.SETSTATE overwrites a key's states as RESTORE does: a user without @dangerous is refused
// both (and so cannot reset an exhausted limit), while the application's commands still run.
TEST_F(RlKeyTest, SetStateIsDangerous) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all", "-@dangerous"}).str, "OK");
  RespClient u(port());
  ASSERT_EQ(u.Call({"AUTH", "app", "pw"}).str, "OK");
  ASSERT_EQ(u.Call({"RL.CHECK", "victim", "FIXED_WINDOW", "1", "1h"}).Ints()[0], 1);
  ASSERT_EQ(u.Call({"RL.CHECK", "victim", "FIXED_WINDOW", "1", "1h"}).Ints()[0], 0);
  const std::string dump = c.Call({"DUMP", "victim"}).str;
  EXPECT_EQ(u.Call({"RESTORE", "victim", "0", dump, "REPLACE"}).str.rfind("NOPERM", 0), 0u);
  EXPECT_EQ(u.Call({"RL.SETSTATE", "victim", EncodeState({})}).str,
            "NOPERM this user has no permissions to run the 'rl.setstate' command (it needs the "
            "permission to RESTORE the key)");
  // RL.APPLY (the replicated call) could reset it as well: refused before its arguments are read.
  EXPECT_EQ(u.Call({"RL.APPLY", "victim", "0", "RESET", "", "FIXED_WINDOW 1 1h", "", "0"}).str,
            "NOPERM this user has no permissions to run the 'rl.apply' command (it needs the "
            "permission to RESTORE the key)");
  // RL.PUT (a small state as replicated) too.
  EXPECT_EQ(u.Call({"RL.PUT", "victim", std::string(19, '\0')}).str,
            "NOPERM this user has no permissions to run the 'rl.put' command (it needs the "
            "permission to RESTORE the key)");
  EXPECT_EQ(u.Call({"RL.CHECK", "victim", "FIXED_WINDOW", "1", "1h"}).Ints()[0], 0) << "reset";
  // Nor through a script, whose calls Redis checks against the caller's ACL only.
  const Reply eval = u.Call({"EVAL", "return redis.call('RL.SETSTATE', KEYS[1], ARGV[1])", "1",
                             "victim", EncodeState({})});
  EXPECT_NE(eval.str.find("not allowed from script"), std::string::npos) << Show(eval);
  // RESTORE's key patterns apply too: a user who may RESTORE only other keys is refused.
  ASSERT_EQ(c.Call({"ACL", "SETUSER", "ops", "on", ">pw", "~other:*", "+@all"}).str, "OK");
  RespClient o(port());
  ASSERT_EQ(o.Call({"AUTH", "ops", "pw"}).str, "OK");
  EXPECT_EQ(o.Call({"RL.SETSTATE", "other:1", EncodeState({})}).str, "OK");
  EXPECT_EQ(o.Call({"RL.SETSTATE", "victim", EncodeState({})}).str.rfind("NOPERM", 0), 0u);
  EXPECT_EQ(c.Call({"RL.SETSTATE", "victim", EncodeState({})}).str, "OK") << "an admin still may";
  EXPECT_EQ(c.Call({"EXISTS", "victim"}).integer, 0);
  EXPECT_EQ(c.Call({"ACL", "DELUSER", "ops"}).integer, 1);
  EXPECT_EQ(c.Call({"ACL", "DELUSER", "app"}).integer, 1);
}

// Over maxmemory every writer answers Redis's OOM error; reads still work.
TEST_F(RlKeyTest, MaxmemoryRefusesWrites) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"RL.CHECK", "oom", "GCRA", "5", "1m"}).Ints()[0], 1);
  ASSERT_EQ(c.Call({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).str, "OK");
  ASSERT_EQ(c.Call({"CONFIG", "SET", "maxmemory", "1"}).str, "OK");
  const std::string oom = "OOM command not allowed when used memory > 'maxmemory'.";
  EXPECT_EQ(c.Call({"RL.CHECK", "oom", "GCRA", "5", "1m"}).str, oom);
  EXPECT_EQ(c.Call({"RL.CHECK", "oom2", "GCRA", "5", "1m", "HEADERS"}).str, oom);
  EXPECT_EQ(c.Call({"RL.RESET", "oom", "GCRA", "5", "1m"}).str, oom);
  EXPECT_EQ(c.Call({"CL.THROTTLE", "oom", "1", "1", "1"}).str, oom);
  EXPECT_EQ(c.Call({"RL.POLICY", "SET", "p", "GCRA", "5", "1m"}).str, oom);
  EXPECT_EQ(c.Call({"RL.PEEK", "oom", "GCRA", "5", "1m"}).Ints()[2], 3) << "reads still answer";
  EXPECT_TRUE(c.Call({"RL.POLICY", "GET", "p"}).is_null());
  ASSERT_EQ(c.Call({"CONFIG", "SET", "maxmemory", "0"}).str, "OK");
  EXPECT_EQ(c.Call({"RL.CHECK", "oom", "GCRA", "5", "1m"}).Ints()[2], 3);
}

// min-replicas-to-write: with fewer good replicas than it asks for (none here), Redis and Valkey
// refuse every command flagged "write" with NOREPLICAS before it runs. So each writer, named here
// and not taken from the module's own flags, must be refused and change nothing, while RL.PEEK
// and the policy reads still answer; a writer that lost its flag would run and fail this.
TEST_F(RlKeyTest, MinReplicasToWriteRefusesWriters) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "mr", "GCRA", "5", "1m"}).str, "OK");
  ASSERT_EQ(c.Call({"RL.CHECK", "mr:k", "POLICY", "mr"}).Ints()[0], 1);
  const Reply lease = c.Call({"RL.ACQUIRE", "mr:lease", "CONCURRENCY", "2", "LEASE", "1m"});
  ASSERT_EQ(lease.elements.size(), 6u) << Show(lease);
  const std::string lease_id = lease.elements[5].str;
  const std::vector<std::vector<std::string>> writers = {
      {"RL.CHECK", "mr:k", "POLICY", "mr"},
      {"RL.CHECK", "mr:new", "GCRA", "5", "1m"},
      {"RL.RESET", "mr:k", "POLICY", "mr"},
      {"RL.REFUND", "mr:k", "POLICY", "mr", "COST", "1"},
      {"RL.CHARGE", "mr:k", "POLICY", "mr", "COST", "1"},
      {"RL.ACQUIRE", "mr:lease", "CONCURRENCY", "2", "LEASE", "1m"},
      {"RL.RELEASE", "mr:lease", lease_id},
      {"RL.POLICY", "SET", "mr2", "GCRA", "5", "1m"},
      {"RL.POLICY", "DEL", "mr"},
      {"RL.POLICY", "RELOAD"},
      {"RL.POLICYSET", "x"},
      {"CL.THROTTLE", "mr:cell", "1", "2", "3"},
      {"RL.SETSTATE", "mr:k", "x"},
      {"RL.APPLY", "mr:k", "x"},
      {"RL.PUT", "mr:k", "x"}};
  const std::set<std::string> readers = {"rl.peek", "rl.policy|get", "rl.policy|list",
                                         "rl.policy|help", "rl.policy|version"};
  // Every command rl.so registers is one of the two lists: a new writer is tested here too.
  auto lower = [](std::string text) {
    for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return text;
  };
  std::set<std::string> named = readers;
  for (const auto& w : writers) {
    named.insert(lower(w[0]) + (w[0] == "RL.POLICY" ? "|" + lower(w[1]) : ""));
  }
  for (const Reply& info : c.Call({"COMMAND", "INFO", "rl.policy"}).elements) {
    ASSERT_GT(info.elements.size(), 9u) << Show(info);
    for (const Reply& sub : info.elements[9].elements) {
      EXPECT_TRUE(named.count(sub.elements[0].str)) << sub.elements[0].str << " is not tested";
    }
  }
  for (const Reply& name : c.Call({"COMMAND", "LIST", "FILTERBY", "MODULE", "rl"}).elements) {
    EXPECT_TRUE(name.str == "rl.policy" || named.count(name.str)) << name.str << " is not tested";
  }

  auto remaining = [](const Reply& reply) {
    const std::vector<int64_t> decision = DecisionOf(reply);
    return decision.size() == 5 ? decision[2] : int64_t{-1};
  };
  auto changes = [&] { return server().InfoField("persistence", "rdb_changes_since_last_save"); };

  ASSERT_EQ(c.Call({"CONFIG", "SET", "min-replicas-to-write", "1"}).str, "OK");
  const std::string changes_before = changes();
  for (const auto& w : writers) {
    EXPECT_EQ(c.Call(w).str, "NOREPLICAS Not enough good replicas to write.") << w[0];
  }
  EXPECT_EQ(changes(), changes_before) << "a refused writer changed something";
  // (What a check would leave: 5 - 1 - 1, as before the refused writers.)
  EXPECT_EQ(remaining(c.Call({"RL.PEEK", "mr:k", "POLICY", "mr"})), 3) << "reads still answer";
  EXPECT_EQ(c.Call({"RL.POLICY", "GET", "mr"}).str, "GCRA 5 1m");
  const Reply list = c.Call({"RL.POLICY", "LIST"});
  EXPECT_TRUE(std::any_of(list.elements.begin(), list.elements.end(), [](const Reply& r) {
    return r.str == "mr";
  })) << Show(list);
  EXPECT_EQ(c.Call({"RL.POLICY", "VERSION"}).type, '*') << "the policy set's version answers";
  EXPECT_EQ(c.Call({"EXISTS", "mr:new", "mr:cell"}).integer, 0);
  ASSERT_EQ(c.Call({"CONFIG", "SET", "min-replicas-to-write", "0"}).str, "OK");
  EXPECT_EQ(remaining(c.Call({"RL.CHECK", "mr:k", "POLICY", "mr"})), 3) << "writes again";
  EXPECT_EQ(c.Call({"RL.RELEASE", "mr:lease", lease_id}).integer, 1);
  EXPECT_EQ(c.Call({"RL.POLICY", "DEL", "mr"}).integer, 1);
}

}  // namespace
}  // namespace rl::test

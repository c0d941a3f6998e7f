// rl::RemoteLimiter in cluster mode against a real Redis Cluster of 3 masters + 3 replicas, every
// node loading rl.so (tests/support's harness, loopback ports <= 55535): slots computed as the
// server computes them, checks routed to the key's master, one count per key shared by two
// client instances, CheckMany split by node, leases, refunds and charges on the key's master, the
// HTTP example on the cluster, ASK during a slot migration, hung nodes costing one timeout and
// only their keys, a reshard and a failover of every master during traffic (no answered count lost,
// keys at their limit still denied, the map current afterwards, no reconnect storm), kill -9 of a
// master with wait_for_replicas (what WAIT acknowledged survives), and a killed master without a
// replica (its keys decided by their FailureMode, or by the local fallback at a share of their
// limits; the others answered).
//
// One cluster serves every test, in this order (the last ones kill nodes), so this binary runs
// as a single ctest test. Timeouts are generous (a loaded 2-core machine); nothing is timed.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster_protocol.h"
#include "http_client.h"
#include "rate_limit_gate.h"
#include "redis_harness.h"
#include "rl/lease.h"
#include "rl/limit.h"
#include "rl/remote_limiter.h"

namespace rl {
namespace {

using std::chrono::milliseconds;
using test::RedisCluster;
using test::RedisOptions;
using test::RedisServer;
using test::Reply;

Policy MakePolicy(const std::string& name, const std::string& spec) {
  absl::StatusOr<Policy> policy = ParsePolicy(name, std::string_view(spec));
  EXPECT_TRUE(policy.ok()) << policy.status();
  return *policy;
}

std::string Address(const RedisServer& node) { return "127.0.0.1:" + std::to_string(node.port()); }

// Checks from a few threads over `keys` until stopped, each thread sending CheckMany of two keys
// (usually on two nodes). Tallies, per key, the checks the cluster answered as allowed (counts
// that must never be lost) and those decided by the failure mode (which may or may not have been
// counted: the node may have applied a check whose answer never came).
class Traffic {
 public:
  Traffic(std::vector<RemoteLimiter*> limiters, const Policy& policy, std::vector<std::string> keys)
      : limiters_(std::move(limiters)),
        policy_(policy),
        keys_(std::move(keys)),
        answered_(keys_.size()),
        uncertain_(keys_.size()) {}
  ~Traffic() { Stop(); }

  void Start(int threads_per_limiter = 2) {
    for (RemoteLimiter* limiter : limiters_) {
      for (int t = 0; t < threads_per_limiter; ++t) {
        const size_t seed = threads_.size();
        threads_.emplace_back([this, limiter, seed] { Run(*limiter, seed); });
      }
    }
  }
  void Stop() {
    stop_ = true;
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }
  // Until at least `checks` more checks were made (bounded): traffic really ran across a step.
  void AtLeast(int64_t checks) {
    const int64_t target = total_.load() + checks;
    test::WaitUntil([&] { return total_.load() >= target; }, milliseconds(20000), milliseconds(5));
  }

  const std::vector<std::string>& keys() const { return keys_; }
  int64_t answered(size_t k) const { return answered_[k].load(); }
  int64_t uncertain(size_t k) const { return uncertain_[k].load(); }
  int64_t errors() const { return errors_.load(); }
  int64_t total() const { return total_.load(); }

 private:
  void Run(RemoteLimiter& limiter, size_t seed) {
    size_t i = seed;
    while (!stop_) {
      const size_t a = i % keys_.size();
      const size_t b = (i * 7 + 3) % keys_.size();
      ++i;
      const RemoteLimiter::Request requests[] = {{&policy_, keys_[a]}, {&policy_, keys_[b]}};
      std::vector<absl::StatusOr<Decision>> results = limiter.CheckMany(requests);
      for (size_t r = 0; r < 2; ++r) {
        const size_t k = r == 0 ? a : b;
        if (!results[r].ok()) {
          ++errors_;
        } else if (results[r]->decided_by != DecidedBy::kLimiter) {
          ++uncertain_[k];
        } else if (results[r]->allowed) {
          ++answered_[k];
        } else {
          ++errors_;  // the limit is far above what the test sends
        }
        ++total_;
      }
      // Leave the cores to the cluster, which has failovers to run.
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  }

  std::vector<RemoteLimiter*> limiters_;
  const Policy policy_;
  const std::vector<std::string> keys_;
  std::vector<std::atomic<int64_t>> answered_;
  std::vector<std::atomic<int64_t>> uncertain_;
  std::atomic<int64_t> errors_{0};
  std::atomic<int64_t> total_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

class ClusterLimiterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::RedisAvailable()) return;
    // Without full coverage, a shard that lost its master and has no replica leaves the other
    // shards serving (the default stops the whole cluster): what a rate limiter wants.
    cluster_ = new RedisCluster(
        RedisOptions().LoadModule(RL_MODULE_PATH).With("cluster-require-full-coverage no"));
    ::testing::AssertionResult started = cluster_->Start();
    started_ = static_cast<bool>(started);
    start_error_ = started.message();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (!test::RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
    ASSERT_TRUE(started_) << start_error_;
  }

  // A limiter seeded with `seeds` (default: the first node only: the rest is discovered).
  static std::unique_ptr<RemoteLimiter> Connect(std::vector<RedisServer*> seeds = {},
                                                int wait_for_replicas = 0,
                                                int64_t fallback_instances = 0) {
    if (seeds.empty()) seeds.push_back(&cluster_->node(0));
    RemoteLimiterOptions options;
    for (RedisServer* seed : seeds) options.cluster_nodes.push_back(Address(*seed));
    options.timeout = milliseconds(1000);
    options.connections = 2;
    options.reconnect_backoff = milliseconds(50);
    options.cluster_refresh_interval = milliseconds(50);
    options.wait_for_replicas = wait_for_replicas;
    options.fallback.instances = fallback_instances;
    absl::StatusOr<std::unique_ptr<RemoteLimiter>> limiter = RemoteLimiter::Create(options);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }

  // `count` keys "<prefix>:<i>", spread over the slots (and so over every master).
  static std::vector<std::string> Keys(const std::string& prefix, int count) {
    std::vector<std::string> keys;
    for (int i = 0; i < count; ++i) keys.push_back(prefix + ":" + std::to_string(i));
    return keys;
  }

  // Requests served by the cluster used so far, read without changing it: the limit minus
  // RL.PEEK's remaining at cost 0 (FIXED_WINDOW over an hour: an exact count). -1 when no
  // answer came (retried for a while: the cluster may still be settling).
  static int64_t Used(RemoteLimiter& limiter, const Policy& policy, const std::string& key) {
    absl::StatusOr<Decision> peek;
    test::WaitUntil(
        [&] {
          peek = limiter.Peek(policy, key, 0);
          return peek.ok();
        },
        milliseconds(10000), milliseconds(50));
    return peek.ok() ? policy.limits[0].limit - peek->remaining : -1;
  }

  // No answered count lost (used >= answered) and none counted twice (used <= answered +
  // uncertain) for every key of `traffic`.
  static void ExpectCountsKept(RemoteLimiter& limiter, const Policy& policy,
                               const Traffic& traffic) {
    EXPECT_EQ(traffic.errors(), 0);
    int64_t answered = 0;
    for (size_t k = 0; k < traffic.keys().size(); ++k) {
      const int64_t used = Used(limiter, policy, traffic.keys()[k]);
      EXPECT_GE(used, traffic.answered(k)) << traffic.keys()[k];
      EXPECT_LE(used, traffic.answered(k) + traffic.uncertain(k)) << traffic.keys()[k];
      answered += traffic.answered(k);
    }
    EXPECT_GT(answered, 0);
    const RemoteLimiterStats stats = limiter.Stats();
    std::printf(
        "  traffic: %lld checks, %lld answered, %lld decided by the failure mode; one client: "
        "%llu redirects followed, %llu slot maps, %llu connects, %llu timeouts\n",
        static_cast<long long>(traffic.total()), static_cast<long long>(answered),
        static_cast<long long>(traffic.total() - answered - traffic.errors()),
        static_cast<unsigned long long>(stats.redirects),
        static_cast<unsigned long long>(stats.slot_map_refreshes),
        static_cast<unsigned long long>(stats.connects),
        static_cast<unsigned long long>(stats.timeouts));
  }

  // The client's map is current: a pass over `keys` follows no redirection.
  static void ExpectMapCurrent(RemoteLimiter& limiter, const Policy& policy,
                               const std::vector<std::string>& keys) {
    const uint64_t before = limiter.Stats().redirects;
    for (const std::string& key : keys) {
      absl::StatusOr<Decision> peek = limiter.Peek(policy, key, 0);
      EXPECT_TRUE(peek.ok()) << key << ": " << peek.status();
    }
    EXPECT_EQ(limiter.Stats().redirects, before) << "redirected after the map was refreshed";
  }

  static inline RedisCluster* cluster_ = nullptr;
  static inline bool started_ = false;
  static inline std::string start_error_;
};

// The client's CRC16 and hash tags agree with the server's CLUSTER KEYSLOT, key for key.
TEST_F(ClusterLimiterTest, KeySlotsMatchTheServer) {
  std::vector<std::string> keys = {"",
                                   "{",
                                   "}",
                                   "{}",
                                   "}{",
                                   "{{}}",
                                   "{a}{b}",
                                   "a{b}c",
                                   "{a",
                                   "a}",
                                   "{}a{b}",
                                   "foo{{bar}}zap",
                                   std::string("\0{\xff}", 4)};
  for (int i = 0; i < 3000; ++i) {
    const std::string n = std::to_string(i * 7919);
    switch (i % 5) {
      case 0:
        keys.push_back("user:" + n);
        break;
      case 1:
        keys.push_back("{tenant" + n + "}:route");
        break;
      case 2:
        keys.push_back("x{" + n + "}{y}");
        break;
      case 3:
        keys.push_back(n + "{}" + n);
        break;
      default:
        keys.push_back(std::string(1, static_cast<char>(i % 256)) + n + "}{");
        break;
    }
  }
  auto connection = cluster_->node(0).Connect();
  ASSERT_TRUE(connection->connected());
  std::string pipeline;
  for (const std::string& key : keys) {
    pipeline += test::RespClient::Encode({"CLUSTER", "KEYSLOT", key});
  }
  ASSERT_TRUE(connection->SendRaw(pipeline));
  std::set<int> slots;
  for (const std::string& key : keys) {
    Reply reply = connection->Read();
    ASSERT_EQ(reply.type, ':') << reply.str;
    EXPECT_EQ(client_internal::KeySlot(key), reply.integer) << "key '" << key << "'";
    slots.insert(static_cast<int>(reply.integer));
  }
  EXPECT_GT(slots.size(), 2000u);  // the keys really spread
}

// Two client instances (seeded with different nodes, one of them a replica) count every key once,
// on its master; CheckMany over keys of all three masters answers in request order; after the
// first calls taught the map, calls go straight to the right node.
TEST_F(ClusterLimiterTest, TwoClientsShareOneCountPerKeyOnItsMaster) {
  auto a = Connect({&cluster_->node(0)});
  auto b = Connect({&cluster_->node(cluster_->size() - 1), &cluster_->node(1)});
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->Ping().ok());  // waits for the map
  const Policy shared = MakePolicy("shared", "FIXED_WINDOW 10 1h");
  // "a", "b", "c" hash to slots 15495, 3300 and 7365: one per master.
  const std::vector<std::string> keys = {"a", "b", "c"};
  std::set<RedisServer*> owners;
  for (const std::string& key : keys) owners.insert(cluster_->MasterOfKey(key));
  ASSERT_EQ(owners.size(), 3u);

  for (int i = 0; i < 10; ++i) {
    RemoteLimiter& client = i % 2 == 0 ? *a : *b;
    const RemoteLimiter::Request requests[] = {
        {&shared, keys[0]}, {&shared, keys[1]}, {&shared, keys[2]}};
    std::vector<absl::StatusOr<Decision>> results = client.CheckMany(requests);
    ASSERT_EQ(results.size(), 3u);
    for (const absl::StatusOr<Decision>& d : results) {
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_EQ(d->decided_by, DecidedBy::kLimiter);
      EXPECT_TRUE(d->allowed);
      EXPECT_EQ(d->remaining, 9 - i);
    }
  }
  for (const std::string& key : keys) {
    absl::StatusOr<Decision> d = b->Check(shared, key);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_FALSE(d->allowed);
    EXPECT_GT(d->retry_after_ms, 0);
    // The state lives on the key's master (and nowhere else).
    for (RedisServer* master : cluster_->Masters()) {
      EXPECT_EQ(master->Call({"EXISTS", key}).integer, master == cluster_->MasterOfKey(key) ? 1 : 0)
          << key;
    }
  }
  // A mix of keys and request order: results follow the requests, not the nodes.
  const Policy other = MakePolicy("other", "FIXED_WINDOW 100 1h");
  const RemoteLimiter::Request mixed[] = {
      {&shared, "a"}, {&other, "a"}, {&shared, "zz-new"}, {&other, "b"}, {&shared, "c"}};
  std::vector<absl::StatusOr<Decision>> results = a->CheckMany(mixed);
  ASSERT_EQ(results.size(), 5u);
  const bool allowed[] = {false, true, true, true, false};
  const int64_t remaining[] = {0, 99, 9, 99, 0};
  for (size_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    EXPECT_EQ(results[i]->allowed, allowed[i]) << i;
    EXPECT_EQ(results[i]->remaining, remaining[i]) << i;
  }
  // Both maps are learned: no redirection for keys anywhere.
  ExpectMapCurrent(*a, shared, Keys("spread", 30));
  ExpectMapCurrent(*b, shared, Keys("spread", 30));
  const RemoteLimiterStats stats = a->Stats();
  EXPECT_GE(stats.slot_map_refreshes, 1u);
  EXPECT_EQ(stats.failed_open + stats.failed_closed, 0u);
  EXPECT_EQ(stats.nodes, 3u);  // the seed is a master: three pools
}

// Policies stored on every master (redis-cli --cluster call) serve a server-policy client.
TEST_F(ClusterLimiterTest, ServerPoliciesOnEveryMaster) {
  rl_test::RunResult run =
      cluster_->Cli({"--cluster", "call", Address(cluster_->node(0)), "RL.POLICY", "SET", "stored",
                     "FIXED_WINDOW", "2", "1h", "--cluster-only-masters"},
                    /*follow_redirects=*/false);
  ASSERT_EQ(run.exit_status, 0) << run.output;
  RemoteLimiterOptions options;
  options.cluster_nodes = {Address(cluster_->node(1))};
  options.timeout = milliseconds(1000);
  options.policy_mode = RemoteLimiterOptions::PolicyMode::kServerPolicy;
  auto limiter = RemoteLimiter::Create(options);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  Policy stored;
  stored.name = "stored";
  for (const std::string key : {"a", "b", "c"}) {
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<Decision> d = (*limiter)->Check(stored, key);
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_EQ(d->allowed, i < 2) << key << " " << i;
      EXPECT_EQ(d->limit, 2);
    }
  }
}

// Issue 16 on the cluster: a lease lives on its key's master (RL.ACQUIRE and RL.RELEASE go to the
// slot's owner, so a lease's destructor releases it there, whichever node seeded the client), two
// clients share its slots, and refunds and charges settle the key's count on its master.
TEST_F(ClusterLimiterTest, LeasesRefundsAndChargesOnTheKeysMaster) {
  auto a = Connect({&cluster_->node(0)});
  auto b = Connect({&cluster_->node(cluster_->size() - 1), &cluster_->node(1)});
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->Ping().ok());
  const Policy jobs = MakePolicy("jobs", "CONCURRENCY 1 LEASE 1m FIXED_WINDOW 100 1h");
  const Policy tokens = MakePolicy("tokens", "FIXED_WINDOW 100 1h");
  for (const std::string key : {"a", "b", "c"}) {  // one per master
    {
      absl::StatusOr<Lease> held = a->Acquire(jobs, key);
      ASSERT_TRUE(held.ok()) << key << ": " << held.status();
      EXPECT_TRUE(held->held()) << key;
      EXPECT_EQ(held->decision().decided_by, DecidedBy::kLimiter);
      absl::StatusOr<Lease> busy = b->Acquire(jobs, key);
      ASSERT_TRUE(busy.ok()) << key << ": " << busy.status();
      EXPECT_FALSE(busy->held()) << key;
      EXPECT_FALSE(busy->decision().allowed) << key;
    }  // released on the key's master, without waiting: the slot is free once it is there
    absl::StatusOr<Lease> again;
    test::WaitUntil(
        [&] {
          again = b->Acquire(jobs, key);
          return !again.ok() || again->held();
        },
        milliseconds(10000), milliseconds(10));
    ASSERT_TRUE(again.ok()) << key << ": " << again.status();
    EXPECT_TRUE(again->held()) << key;
    const std::string id = again->Detach();
    absl::StatusOr<bool> released = a->Release(key, id);  // by id, from the other client
    ASSERT_TRUE(released.ok()) << key << ": " << released.status();
    EXPECT_TRUE(*released) << key;

    absl::StatusOr<Decision> d = a->Check(tokens, key, 30);
    ASSERT_TRUE(d.ok()) << key << ": " << d.status();
    d = b->Refund(tokens, key, 10);
    ASSERT_TRUE(d.ok()) << key << ": " << d.status();
    EXPECT_EQ(d->remaining, 80) << key;
    d = a->Charge(tokens, key, 90);
    ASSERT_TRUE(d.ok()) << key << ": " << d.status();
    EXPECT_FALSE(d->allowed) << key;  // 110 of 100: in debt
    EXPECT_EQ(d->remaining, 0) << key;
  }
  for (RemoteLimiter* client : {a.get(), b.get()}) {
    const RemoteLimiterStats stats = client->Stats();
    EXPECT_EQ(stats.failed_open + stats.failed_closed + stats.settles_lost, 0u);
    EXPECT_EQ(stats.release_failures, 0u);
    EXPECT_EQ(stats.server_errors, 0u);
  }
}

// rl-http-example --limiter remote --cluster: five of eight requests pass, the same as on one
// rl-server, with the count on the cluster.
TEST_F(ClusterLimiterTest, HttpExampleOnTheCluster) {
  rl_test::Subprocess example;
  const std::string seeds = Address(cluster_->node(0)) + "," + Address(cluster_->node(4));
  ASSERT_TRUE(example.Start({RL_HTTP_EXAMPLE_PATH, "--port", "0", "--limiter", "remote",
                             "--cluster", seeds, "--timeout-ms", "1000"}));
  std::string line;
  ASSERT_TRUE(example.ReadLine(&line, milliseconds(5000)));
  ASSERT_NE(line.find("(cluster)"), std::string::npos) << line;
  const size_t colon = line.rfind(':', line.find(" limiter="));
  const int port = std::atoi(line.c_str() + colon + 1);
  ASSERT_GT(port, 0) << line;
  int ok = 0;
  int limited = 0;
  for (int i = 0; i < 8; ++i) {
    rl_test::HttpReply reply = rl_test::HttpRequest(port, "GET", "/api/products", "cluster-key");
    if (reply.status == 200) ++ok;
    if (reply.status == 429) {
      ++limited;
      EXPECT_EQ(reply.headers["x-ratelimit-remaining"], "0");
    }
  }
  EXPECT_EQ(ok, 5);
  EXPECT_EQ(limited, 3);
  EXPECT_EQ(rl_test::HttpRequest(port, "GET", "/api/products", "another-key").status, 200);
}

// A slot half-way through a migration: a key still on the source is counted there; a new key is
// sent to the target with ASKING (ASK is followed for that command, and the map is not changed);
// once the slot has moved, MOVED updates the map and the counts are whole.
TEST_F(ClusterLimiterTest, AskDuringMigrationAndMovedAfter) {
  auto limiter = Connect();
  ASSERT_TRUE(limiter->Ping().ok());
  const Policy policy = MakePolicy("ask", "FIXED_WINDOW 100 1h");
  const std::string old_key = "{ask-slot}:old";
  const std::string new_key = "{ask-slot}:new";
  const int slot = cluster_->KeySlot(old_key);
  RedisServer* from = cluster_->MasterOfSlot(slot);
  ASSERT_NE(from, nullptr);
  RedisServer* to = nullptr;
  for (RedisServer* master : cluster_->Masters()) {
    if (master != from) to = master;
  }
  ASSERT_NE(to, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(limiter->Check(policy, old_key).ok());

  const std::string s = std::to_string(slot);
  ASSERT_EQ(to->Call({"CLUSTER", "SETSLOT", s, "IMPORTING", cluster_->NodeId(*from)}).str, "OK");
  ASSERT_EQ(from->Call({"CLUSTER", "SETSLOT", s, "MIGRATING", cluster_->NodeId(*to)}).str, "OK");
  uint64_t redirects = limiter->Stats().redirects;
  absl::StatusOr<Decision> d = limiter->Check(policy, old_key);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->remaining, 96);
  EXPECT_EQ(limiter->Stats().redirects, redirects);  // still on the source: no redirection
  d = limiter->Check(policy, new_key);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->decided_by, DecidedBy::kLimiter);
  EXPECT_EQ(d->remaining, 99);
  EXPECT_EQ(limiter->Stats().redirects, redirects + 1);  // ASK, then ASKING + RL.CHECK
  EXPECT_EQ(from->Call({"EXISTS", new_key}).integer, 0);
  d = limiter->Check(policy, new_key);  // ASK again: the map still names the source
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->remaining, 98);
  EXPECT_EQ(limiter->Stats().redirects, redirects + 2);
  // The asynchronous form follows the ASK too, on the I/O thread, within its one timeout.
  std::promise<std::vector<absl::StatusOr<Decision>>> answered;
  const RemoteLimiter::Request both[] = {{&policy, old_key}, {&policy, new_key}};
  limiter->AsyncCheckMany(both, [&answered](std::vector<absl::StatusOr<Decision>> results) {
    answered.set_value(std::move(results));
  });
  std::vector<absl::StatusOr<Decision>> async = answered.get_future().get();
  ASSERT_EQ(async.size(), 2u);
  ASSERT_TRUE(async[0].ok() && async[1].ok()) << async[0].status() << async[1].status();
  EXPECT_EQ(async[0]->remaining, 95);
  EXPECT_EQ(async[1]->remaining, 97);
  EXPECT_EQ(limiter->Stats().redirects, redirects + 3);

  ASSERT_TRUE(cluster_->MoveSlot(slot, *from, *to));  // the rest of the keys, then the slot
  EXPECT_EQ(Used(*limiter, policy, old_key), 5);
  EXPECT_EQ(Used(*limiter, policy, new_key), 3);
  EXPECT_EQ(to->Call({"EXISTS", old_key}).integer, 1);
  ExpectMapCurrent(*limiter, policy, {old_key, new_key});
  ASSERT_TRUE(cluster_->MoveSlot(slot, *to, *from));  // leave the layout as it was
}

// Slots move while two clients check keys in them: nothing answered is lost or counted twice,
// and the clients end with the new owners in their maps.
TEST_F(ClusterLimiterTest, ReshardDuringTrafficKeepsEveryCount) {
  auto a = Connect({&cluster_->node(0)});
  auto b = Connect({&cluster_->node(2)});
  const Policy policy = MakePolicy("reshard", "FIXED_WINDOW 1000000 1h");
  // Half the keys share one slot (the one that moves twice), the rest spread over the cluster.
  std::vector<std::string> keys = Keys("{moving}", 12);
  for (const std::string& key : Keys("still", 12)) keys.push_back(key);
  const int slot = cluster_->KeySlot(keys[0]);
  RedisServer* first = cluster_->MasterOfSlot(slot);
  ASSERT_NE(first, nullptr);
  std::vector<RedisServer*> others;
  for (RedisServer* master : cluster_->Masters()) {
    if (master != first) others.push_back(master);
  }
  ASSERT_EQ(others.size(), 2u);

  Traffic traffic({a.get(), b.get()}, policy, keys);
  traffic.Start();
  traffic.AtLeast(200);
  ASSERT_TRUE(cluster_->MoveSlot(slot, *first, *others[0]));
  traffic.AtLeast(200);
  ASSERT_TRUE(cluster_->MoveSlot(slot, *others[0], *others[1]));
  traffic.AtLeast(200);
  traffic.Stop();

  EXPECT_EQ(cluster_->MasterOfSlot(slot), others[1]);
  ExpectCountsKept(*a, policy, traffic);
  ExpectMapCurrent(*a, policy, keys);
  ExpectMapCurrent(*b, policy, keys);
  EXPECT_GT(a->Stats().redirects + b->Stats().redirects, 0u);
  ASSERT_TRUE(cluster_->MoveSlot(slot, *others[1], *first));
}

// Two masters hang (SIGSTOP, shorter than the cluster's node timeout, so no failover): a CheckMany
// over keys of all three masters answers the live master's key and decides the hung ones' by
// their policy, after one timeout in all (the nodes are waited for against one deadline, not one
// timeout each); once they resume, their keys are answered again.
TEST_F(ClusterLimiterTest, HungNodesCostOneTimeoutAndOnlyTheirKeys) {
  RemoteLimiterOptions options;
  options.cluster_nodes = {Address(cluster_->node(0))};
  options.timeout = milliseconds(600);
  options.reconnect_backoff = milliseconds(20);
  auto limiter = RemoteLimiter::Create(options);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  ASSERT_TRUE((*limiter)->Ping().ok());
  const Policy open = MakePolicy("hung-open", "FIXED_WINDOW 100 1h FAIL_OPEN");
  const Policy closed = MakePolicy("hung-closed", "FIXED_WINDOW 100 1h FAIL_CLOSED");
  RedisServer* live = cluster_->MasterOfKey("a");
  std::vector<RedisServer*> hung = {cluster_->MasterOfKey("b"), cluster_->MasterOfKey("c")};
  ASSERT_TRUE(live != nullptr && hung[0] != nullptr && hung[1] != nullptr);
  const RemoteLimiter::Request requests[] = {{&open, "b"}, {&open, "a"}, {&closed, "c"}};
  for (const absl::StatusOr<Decision>& d : (*limiter)->CheckMany(requests)) {
    ASSERT_TRUE(d.ok() && d->decided_by == DecidedBy::kLimiter) << d.status();
  }

  for (RedisServer* node : hung) ::kill(node->pid(), SIGSTOP);
  const auto start = std::chrono::steady_clock::now();
  std::vector<absl::StatusOr<Decision>> results = (*limiter)->CheckMany(requests);
  const auto took = std::chrono::steady_clock::now() - start;
  for (RedisServer* node : hung) ::kill(node->pid(), SIGCONT);
  ASSERT_EQ(results.size(), 3u);
  for (const absl::StatusOr<Decision>& d : results) ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(results[0]->decided_by, DecidedBy::kFailOpen);
  EXPECT_TRUE(results[0]->allowed);
  EXPECT_EQ(results[1]->decided_by, DecidedBy::kLimiter);
  EXPECT_EQ(results[1]->remaining, 98);
  EXPECT_EQ(results[2]->decided_by, DecidedBy::kFailClosed);
  EXPECT_FALSE(results[2]->allowed);
  EXPECT_GE(took, milliseconds(550));
  // One timeout (600 ms) plus scheduling slack, where one timeout per node would be 1200 ms.
  EXPECT_LT(took, milliseconds(1100));
  EXPECT_EQ((*limiter)->Stats().timeouts, 2u);

  // The hung nodes' connections were closed (their replies were out of order for good); the
  // next calls reconnect and are answered.
  EXPECT_TRUE(test::WaitUntil(
      [&] {
        std::vector<absl::StatusOr<Decision>> r = (*limiter)->CheckMany(requests);
        return std::all_of(r.begin(), r.end(), [](const absl::StatusOr<Decision>& d) {
          return d.ok() && d->decided_by == DecidedBy::kLimiter;
        });
      },
      milliseconds(10000), milliseconds(50)));
  ASSERT_TRUE(cluster_->WaitHealthy(/*with_replicas=*/true));
}

// CLUSTER FAILOVER of every master, one after the other, while two clients check keys on all of
// them: no answered count is lost (a manual failover waits for the replica to catch up), keys at
// their limit are still denied by the promoted replicas, the clients' maps name the new masters,
// and the failovers cost few map refreshes and reconnects (no storm).
TEST_F(ClusterLimiterTest, FailoverOfEveryMasterDuringTrafficKeepsEveryCount) {
  auto a = Connect({&cluster_->node(0)});
  auto b = Connect({&cluster_->node(1)});
  ASSERT_TRUE(a->Ping().ok());
  ASSERT_TRUE(b->Ping().ok());
  const Policy policy = MakePolicy("failover", "FIXED_WINDOW 1000000 1h");
  const Policy strict = MakePolicy("strict", "FIXED_WINDOW 3 1h");
  const std::vector<std::string> keys = Keys("fo", 24);
  // One exhausted key per master.
  const std::vector<std::string> full = {"a", "b", "c"};
  for (const std::string& key : full) {
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<Decision> d = a->Check(strict, key);
      ASSERT_TRUE(d.ok() && d->allowed) << key;
    }
    ASSERT_FALSE(b->Check(strict, key)->allowed);
  }
  const RemoteLimiterStats before = a->Stats();
  const std::vector<RedisServer*> old_masters = cluster_->Masters();
  ASSERT_EQ(old_masters.size(), 3u);

  Traffic traffic({a.get(), b.get()}, policy, keys);
  traffic.Start();
  traffic.AtLeast(200);
  const auto start = std::chrono::steady_clock::now();
  for (RedisServer* master : old_masters) {
    std::vector<RedisServer*> replicas = cluster_->ReplicasOf(*master);
    ASSERT_EQ(replicas.size(), 1u);
    ASSERT_TRUE(cluster_->Failover(*replicas[0]));
    traffic.AtLeast(100);
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  traffic.Stop();

  for (RedisServer* master : cluster_->Masters()) {
    EXPECT_EQ(std::count(old_masters.begin(), old_masters.end(), master), 0);
  }
  ExpectCountsKept(*a, policy, traffic);
  for (const std::string& key : full) {
    for (RemoteLimiter* client : {a.get(), b.get()}) {
      absl::StatusOr<Decision> d = client->Check(strict, key);
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_EQ(d->decided_by, DecidedBy::kLimiter);
      EXPECT_FALSE(d->allowed) << key << " was allowed again after the failover";
    }
  }
  ExpectMapCurrent(*a, policy, keys);
  ExpectMapCurrent(*b, policy, keys);
  // No storm: refreshes are rate-limited (50 ms apart here), and each client connects to each
  // node's pool (2 pipelined connections, and up to 2 blocking ones for synchronous calls) about
  // once: the 3 old masters kept their connections.
  const RemoteLimiterStats after = a->Stats();
  const auto max_refreshes =
      static_cast<uint64_t>(std::chrono::duration_cast<milliseconds>(elapsed).count() / 50 + 10);
  EXPECT_GT(after.slot_map_refreshes, before.slot_map_refreshes);
  EXPECT_LE(after.slot_map_refreshes - before.slot_map_refreshes, max_refreshes);
  EXPECT_EQ(after.nodes, 6u);
  EXPECT_LE(after.connects, 6u * 4u * 2u);
}

// kill -9 of a master during traffic, with wait_for_replicas = 1: every check the client
// answered was on the replica before the answer, so the promoted replica has every one of them.
TEST_F(ClusterLimiterTest, KillNineKeepsWhatWaitAcknowledged) {
  auto limiter = Connect({&cluster_->node(0), &cluster_->node(1), &cluster_->node(2)},
                         /*wait_for_replicas=*/1);
  ASSERT_TRUE(limiter->Ping().ok());
  const Policy policy = MakePolicy("durable", "FIXED_WINDOW 1000000 1h");
  // Keys of one master (the one that dies) and of the others.
  RedisServer* victim = cluster_->MasterOfKey("b");
  ASSERT_NE(victim, nullptr);
  std::vector<std::string> keys;
  for (const std::string& key : Keys("kill", 200)) {
    if (cluster_->MasterOfSlot(client_internal::KeySlot(key)) == victim && keys.size() < 8) {
      keys.push_back(key);
    }
  }
  for (const std::string& key : Keys("live", 4)) keys.push_back(key);
  ASSERT_GE(keys.size(), 10u);

  Traffic traffic({limiter.get()}, policy, keys);
  traffic.Start(3);
  traffic.AtLeast(300);
  RedisServer* promoted = nullptr;
  ASSERT_TRUE(cluster_->KillMaster(*victim, &promoted));
  // Until the killed node is back as the promoted one's replica, WAIT cannot be satisfied on
  // that shard: its checks are decided by the failure mode (after WAIT's timeout).
  ASSERT_TRUE(victim->Start());
  ASSERT_TRUE(test::WaitUntil(
      [&] {
        std::vector<RedisServer*> replicas = cluster_->ReplicasOf(*promoted);
        return std::count(replicas.begin(), replicas.end(), victim) == 1;
      },
      milliseconds(30000), milliseconds(100)));
  ASSERT_TRUE(cluster_->WaitHealthy(/*with_replicas=*/true));
  traffic.AtLeast(300);
  traffic.Stop();

  ExpectCountsKept(*limiter, policy, traffic);
  ExpectMapCurrent(*limiter, policy, keys);
  EXPECT_EQ(cluster_->MasterOfKey(keys[0]), promoted);
  // Thousands of failed checks while the master was dead asked for a refresh; refreshes that
  // found the same map backed off (50 ms doubling to 1 s) instead of polling every 50 ms for
  // the seconds the failover took (about a hundred).
  EXPECT_LE(limiter->Stats().slot_map_refreshes, 30u);
}

// A master dies and has no replica to take over: its keys are decided by each policy's
// FailureMode (fail-open allowed, fail-closed denied, fast), or, for a client with a fallback for
// 2 instances, by the fallback at half of each limit whatever the mode; every other key is
// answered as before, both while the cluster still thinks the node alive and once it has marked
// it failed. (First, with its replica gone: wait_for_replicas cannot be met there.)
TEST_F(ClusterLimiterTest, KilledMasterWithoutReplicaDecidesOnlyItsKeys) {
  const std::vector<RedisServer*> all = {&cluster_->node(0), &cluster_->node(1),
                                         &cluster_->node(2), &cluster_->node(3),
                                         &cluster_->node(4), &cluster_->node(5)};
  auto limiter = Connect(all);
  auto with_fallback = Connect(all, 0, /*fallback_instances=*/2);
  ASSERT_TRUE(limiter->Ping().ok());
  ASSERT_TRUE(with_fallback->Ping().ok());
  // The victim: a master whose replicas are killed first (a previous test may have left one
  // without a replica already).
  RedisServer* victim = cluster_->MasterOfKey("c");
  ASSERT_NE(victim, nullptr);
  for (RedisServer* replica : cluster_->ReplicasOf(*victim)) replica->Kill9();
  std::string dead_key;
  std::string live_key;
  for (const std::string& key : Keys("outage", 200)) {
    const bool on_victim = cluster_->MasterOfSlot(client_internal::KeySlot(key)) == victim;
    if (on_victim && dead_key.empty()) dead_key = key;
    if (!on_victim && live_key.empty()) live_key = key;
  }
  ASSERT_FALSE(dead_key.empty() || live_key.empty());
  const Policy open = MakePolicy("reads", "FIXED_WINDOW 100 1h FAIL_OPEN");
  const Policy closed = MakePolicy("writes", "FIXED_WINDOW 100 1h FAIL_CLOSED");
  const RemoteLimiter::Request requests[] = {
      {&open, dead_key}, {&closed, dead_key}, {&open, live_key}, {&closed, live_key}};
  std::vector<absl::StatusOr<Decision>> results = limiter->CheckMany(requests);
  for (const absl::StatusOr<Decision>& d : results) {
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->decided_by, DecidedBy::kLimiter);
  }
  // With wait_for_replicas, a master without a replica cannot make a check durable: the check
  // is decided by its policy after WAIT's timeout (the master did count it); the live key's
  // shard still has its replica and answers.
  {
    auto durable = Connect({&cluster_->node(0), &cluster_->node(1), &cluster_->node(2)},
                           /*wait_for_replicas=*/1);
    ASSERT_TRUE(durable->Ping().ok());
    const RemoteLimiter::Request pair[] = {{&open, dead_key}, {&open, live_key}};
    std::vector<absl::StatusOr<Decision>> r = durable->CheckMany(pair);
    ASSERT_TRUE(r[0].ok() && r[1].ok());
    EXPECT_EQ(r[0]->decided_by, DecidedBy::kFailOpen);
    EXPECT_EQ(r[1]->decided_by, DecidedBy::kLimiter) << "the live key's shard lost its replica";
    EXPECT_EQ(durable->Stats().unreplicated, 1u);
  }
  // The HTTP example on the cluster, for its outage log: API keys whose limiter key lives on the
  // victim and on another master.
  const std::string example_log = ::testing::TempDir() + "rl_cluster_example.log";
  rl_test::Subprocess example;
  ASSERT_TRUE(example.Start({RL_HTTP_EXAMPLE_PATH, "--port", "0", "--limiter", "remote",
                             "--cluster", Address(cluster_->node(0)), "--timeout-ms", "1000"},
                            rl_test::SpawnOptions{.stderr_path = example_log}));
  std::string ready;
  ASSERT_TRUE(example.ReadLine(&ready, milliseconds(5000)));
  const int example_port = std::atoi(ready.c_str() + ready.rfind(':', ready.find(" limiter=")) + 1);
  ASSERT_GT(example_port, 0) << ready;
  std::string dead_api_key;
  std::string live_api_key;
  for (int i = 0; dead_api_key.empty() || live_api_key.empty(); ++i) {
    ASSERT_LT(i, 1000);
    const std::string api_key = "api-key-" + std::to_string(i);
    const int slot = client_internal::KeySlot(rl_http::ClientKey(api_key, "127.0.0.1"));
    (cluster_->MasterOfSlot(slot) == victim ? dead_api_key : live_api_key) = api_key;
  }
  EXPECT_EQ(rl_test::HttpRequest(example_port, "GET", "/api/products", dead_api_key).status, 200);
  victim->Kill9();
  // The flood: 100 checks of the dead master's key, each between two answered ones.
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(rl_test::HttpRequest(example_port, "GET", "/api/products", dead_api_key).status, 200);
    rl_test::HttpRequest(example_port, "GET", "/api/products", live_api_key);
  }

  auto expect_only_dead_keys_degraded = [&](const char* when) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<absl::StatusOr<Decision>> r = limiter->CheckMany(requests);
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_EQ(r.size(), 4u);
    for (const absl::StatusOr<Decision>& d : r) ASSERT_TRUE(d.ok()) << when << ": " << d.status();
    EXPECT_EQ(r[0]->decided_by, DecidedBy::kFailOpen) << when;
    EXPECT_TRUE(r[0]->allowed) << when;
    EXPECT_EQ(r[1]->decided_by, DecidedBy::kFailClosed) << when;
    EXPECT_FALSE(r[1]->allowed) << when;
    EXPECT_EQ(r[2]->decided_by, DecidedBy::kLimiter) << when;
    EXPECT_TRUE(r[2]->allowed) << when;
    EXPECT_EQ(r[3]->decided_by, DecidedBy::kLimiter) << when;
    EXPECT_TRUE(r[3]->allowed) << when;
    // A refused connection answers at once: the live keys did not wait out the timeout.
    EXPECT_LT(took, milliseconds(900)) << when;
    r = with_fallback->CheckMany(requests);
    for (size_t i = 0; i < r.size(); ++i) {
      ASSERT_TRUE(r[i].ok()) << when << ": " << r[i].status();
      EXPECT_TRUE(r[i]->allowed) << when << " " << i;
      EXPECT_EQ(r[i]->decided_by, i < 2 ? DecidedBy::kFallback : DecidedBy::kLimiter) << when;
      EXPECT_EQ(r[i]->limit, i < 2 ? 50 : 100) << when << " " << i;
    }
  };
  expect_only_dead_keys_degraded("right after the kill");
  expect_only_dead_keys_degraded("again (reconnect back-off)");
  // Once the others have marked it failed (after cluster-node-timeout), still only its keys.
  const std::string victim_port = std::to_string(victim->port());
  ASSERT_TRUE(test::WaitUntil(
      [&] {
        for (const test::ClusterNode& node : cluster_->Nodes()) {
          if (node.port == victim->port() && node.failed) return true;
        }
        return false;
      },
      milliseconds(20000), milliseconds(100)));
  expect_only_dead_keys_degraded("after the cluster marked it failed");
  EXPECT_EQ(with_fallback->Stats().fallback_allowed, 6u);
  EXPECT_EQ(with_fallback->Stats().failed_open + with_fallback->Stats().failed_closed, 0u);

  // One line for the node's outage, not one per failed check (the victim stays down: no line
  // for its end).
  example.Kill();
  std::ifstream log(example_log);
  std::vector<std::string> outage_lines;
  for (std::string line; std::getline(log, line);) {
    if (line.find("rate limiter") != std::string::npos) outage_lines.push_back(line);
  }
  ASSERT_EQ(outage_lines.size(), 1u)
      << outage_lines.size() << " lines, the last: " << outage_lines.back();
  EXPECT_NE(outage_lines[0].find("node " + Address(*victim) + " unavailable"), std::string::npos)
      << outage_lines[0];
}

}  // namespace
}  // namespace rl

// Test harness for real Redis processes: one redis-server in its own temp dir on a free loopback
// port, a master + replica pair, and a Redis Cluster of masters with replicas created by
// `redis-cli --cluster create`, with helpers to move a slot, fail over and kill -9 a master.
//
// Every wait is bounded; every process is killed and reaped when its object goes away (and by
// the kernel if the test process dies, see subprocess.h). Failures come back as
// ::testing::AssertionResult carrying the server's log tail, so a test writes
//   ASSERT_TRUE(server.Start());
// and a failed start shows why. When a test has failed, each server prints its log tail and
// keeps its directory on destruction (set RL_KEEP_REDIS_DIRS=1 to keep them always).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "resp_client.h"
#include "subprocess.h"

namespace rl::test {

// Paths of the server and its cli the tests run: redis-server and redis-cli found at configure
// time (empty when missing), unless the environment names another server. RL_TEST_SERVER is its
// path (ctest sets it to valkey-server for the module suite's second registration); RL_TEST_CLI
// its cli, by default the file beside it with "-server" replaced by "-cli" (valkey-cli).
const std::string& RedisServerPath();
const std::string& RedisCliPath();
// The server binary's file name, "redis-server" or "valkey-server", for messages.
std::string ServerName();
// True when both binaries exist; tests call GTEST_SKIP() otherwise.
bool RedisAvailable();

// Polls `done` every `every` until it is true or `timeout` has passed; its last answer.
bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout,
               std::chrono::milliseconds every = std::chrono::milliseconds(20));

// How a server is configured, beyond what the harness always sets (port, bind 127.0.0.1, dir,
// logfile, no RDB snapshots, no AOF, DEBUG allowed, diskless full sync without delay).
struct RedisOptions {
  std::vector<std::string> config;   // redis.conf lines, e.g. "appendonly yes"; later lines win
  std::vector<std::string> modules;  // loadmodule lines: "/path/module.so [ARG ...]"
  // How Start picks a port when none was given; null: rl_test::FreeLoopbackPort. (The harness's
  // own test hands out a taken port first.)
  std::function<int()> pick_port;

  RedisOptions& With(std::string line) {
    config.push_back(std::move(line));
    return *this;
  }
  RedisOptions& LoadModule(std::string path_and_args) {
    modules.push_back(std::move(path_and_args));
    return *this;
  }
};

// One redis-server child process with its own temp dir (config file, log, RDB, AOF).
class RedisServer {
 public:
  enum class Shutdown { kNoSave, kSave };

  // `port` 0 picks a free loopback port at the first Start; the port is kept across restarts.
  explicit RedisServer(RedisOptions options = {}, int port = 0);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Writes redis.conf and starts the server; succeeds once it answers PING with PONG (it may
  // answer LOADING first). Fails, with the log tail, if it exits or does not answer in 20 s.
  ::testing::AssertionResult Start();
  // SHUTDOWN [NO]SAVE NOW and waits up to `timeout` for exit code 0; SIGTERM and then SIGKILL if
  // it does not go (a failure then). Succeeds at once when the server is not running.
  ::testing::AssertionResult Stop(Shutdown mode = Shutdown::kNoSave,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(15));
  // kill -9 and reap: nothing is saved or flushed beyond what the server already wrote.
  void Kill9();
  // Stop(mode) then Start() in the same dir on the same port.
  ::testing::AssertionResult Restart(Shutdown mode = Shutdown::kNoSave);

  // True while the process lives (reaps it if it has exited, e.g. crashed).
  bool running();
  int port() const { return port_; }
  pid_t pid() const { return process_.pid(); }
  const std::string& dir() const { return dir_; }
  std::string log_path() const { return dir_ + "/redis.log"; }
  // The whole log, and its last `lines` lines (plus anything the server printed on stdout/stderr,
  // where config errors go).
  std::string ReadLog() const;
  std::string LogTail(size_t lines = 40) const;
  // "redis-server 127.0.0.1:PORT (DIR)", for messages.
  std::string Describe() const;

  // Sends one command on this object's connection (opened on first use; dropped after a closed
  // connection or timeout, reply type 'X', and opened again by the next call).
  Reply Call(const std::vector<std::string>& args);
  // A new connection of its own, e.g. for RESP3 (HELLO 3) or MULTI.
  std::unique_ptr<RespClient> Connect(int timeout_ms = 5000) const;
  // One field of INFO `section`, "" when absent.
  std::string InfoField(const std::string& section, const std::string& field);

 private:
  // One try of Start on port_ (already set).
  ::testing::AssertionResult StartOnce();
  void DropConnection() { connection_.reset(); }

  RedisOptions options_;
  int port_;
  std::string dir_;
  rl_test::Subprocess process_;
  std::unique_ptr<RespClient> connection_;
};

// Makes `replica` a replica of `master` (REPLICAOF) and waits until the link is up and the first
// sync is done on both sides (bounded).
::testing::AssertionResult StartReplication(RedisServer& master, RedisServer& replica);
// WAIT numreplicas timeout on `master`: true when at least `replicas` acknowledged.
::testing::AssertionResult WaitForReplicas(
    RedisServer& master, int replicas, std::chrono::milliseconds timeout = std::chrono::seconds(5));

// A master and one replica with the same options, started and linked by Start().
struct RedisReplicaPair {
  explicit RedisReplicaPair(const RedisOptions& options) : master(options), replica(options) {}
  ::testing::AssertionResult Start();
  RedisServer master;
  RedisServer replica;
};

// One node as CLUSTER NODES describes it.
struct ClusterNode {
  std::string id;
  int port = 0;
  bool myself = false;
  bool master = false;
  bool failed = false;                     // "fail" (or "fail?" = pfail) flag
  std::string master_id;                   // for replicas
  std::vector<std::pair<int, int>> slots;  // owned ranges, inclusive
};

// A Redis Cluster of `masters` masters with `replicas_per_master` replicas each, on loopback
// ports from FreeClusterPorts (the cluster bus listens on port + 10000).
class RedisCluster {
 public:
  // `options` apply to every node (e.g. LoadModule); the cluster settings are added to them.
  explicit RedisCluster(RedisOptions options, int masters = 3, int replicas_per_master = 1,
                        std::chrono::milliseconds node_timeout = std::chrono::milliseconds(2000));
  ~RedisCluster();

  // Starts the nodes, runs `redis-cli --cluster create ... --cluster-replicas N --cluster-yes`
  // and waits until every node reports cluster_state:ok and lists the replicas in CLUSTER SLOTS.
  ::testing::AssertionResult Start();

  size_t size() const { return nodes_.size(); }
  RedisServer& node(size_t i) { return *nodes_[i]; }
  // The server listening on `port`, nullptr if none of ours.
  RedisServer* ByPort(int port);

  // Topology as a live node sees it (CLUSTER NODES); `via` nullptr = the first running node.
  std::vector<ClusterNode> Nodes(RedisServer* via = nullptr);
  std::string NodeId(RedisServer& node);
  int KeySlot(const std::string& key);
  RedisServer* MasterOfSlot(int slot, RedisServer* via = nullptr);
  RedisServer* MasterOfKey(const std::string& key) { return MasterOfSlot(KeySlot(key)); }
  std::vector<RedisServer*> Masters(RedisServer* via = nullptr);
  std::vector<RedisServer*> ReplicasOf(RedisServer& master, RedisServer* via = nullptr);

  // Every running node says cluster_state:ok, agrees on who serves every slot, and (if
  // `with_replicas`) each slot range shows its replicas in CLUSTER SLOTS.
  ::testing::AssertionResult WaitHealthy(
      bool with_replicas, std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // Moves one slot and its keys: CLUSTER SETSLOT IMPORTING on `to`, MIGRATING on `from`,
  // MIGRATE of every key (in batches), then SETSLOT NODE on every master; waits until every
  // node agrees.
  ::testing::AssertionResult MoveSlot(int slot, RedisServer& from, RedisServer& to);
  // CLUSTER FAILOVER on `replica`; waits until it is a master and the cluster is healthy.
  ::testing::AssertionResult Failover(RedisServer& replica);
  // kill -9 of `master`; waits until one of its replicas is promoted (*promoted) and every
  // running node says cluster_state:ok.
  ::testing::AssertionResult KillMaster(
      RedisServer& master, RedisServer** promoted,
      std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // redis-cli [-c] -p <port of `via`> args... (`via` nullptr = the first running node).
  rl_test::RunResult Cli(const std::vector<std::string>& args, bool follow_redirects = true,
                         RedisServer* via = nullptr);

 private:
  RedisServer* FirstRunning();

  int masters_;
  int replicas_per_master_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

// The highest port FreeClusterPorts picks: its bus port, p + 10000, stays below the ephemeral
// range (32768 and up by default).
inline constexpr int kClusterPortMax = 22767;

// Ports p with p and p + 10000 both free on 127.0.0.1, p <= kClusterPortMax; `count` of them.
std::vector<int> FreeClusterPorts(int count);

}  // namespace rl::test

// Implementation of the Redis test harness (see redis_harness.h).
#include "redis_harness.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "test_files.h"

#ifndef RL_REDIS_SERVER_PATH
#define RL_REDIS_SERVER_PATH ""
#endif
#ifndef RL_REDIS_CLI_PATH
#define RL_REDIS_CLI_PATH ""
#endif

namespace rl::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string LastLines(const std::string& text, size_t lines) {
  if (text.empty()) return text;
  size_t pos = text.size();
  for (size_t found = 0; pos > 0 && found <= lines;) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
    ++found;
  }
  return text.substr(pos + 1);
}

bool Executable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

// "field:value" lines of an INFO reply.
std::string InfoValue(const std::string& info, const std::string& field) {
  std::istringstream in(info);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 &&
        line[field.size()] == ':') {
      return line.substr(field.size() + 1);
    }
  }
  return "";
}

bool PortFree(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

bool KeepDirs() {
  const char* keep = std::getenv("RL_KEEP_REDIS_DIRS");
  return keep != nullptr && std::string(keep) == "1";
}

// The running test failed, or (for servers shared by a suite and destroyed in its teardown)
// a test of the running suite did.
bool CurrentTestFailed() {
  const ::testing::UnitTest* unit = ::testing::UnitTest::GetInstance();
  if (unit->current_test_info() != nullptr) return ::testing::Test::HasFailure();
  return unit->current_test_suite() != nullptr && unit->current_test_suite()->Failed();
}

}  // namespace

const std::string& RedisServerPath() {
  static const std::string path = [] {
    const char* chosen = std::getenv("RL_TEST_SERVER");
    return chosen != nullptr && *chosen != '\0' ? std::string(chosen)
                                                : std::string(RL_REDIS_SERVER_PATH);
  }();
  return path;
}

const std::string& RedisCliPath() {
  static const std::string path = [] {
    const char* chosen = std::getenv("RL_TEST_CLI");
    if (chosen != nullptr && *chosen != '\0') return std::string(chosen);
    const char* server = std::getenv("RL_TEST_SERVER");
    if (server == nullptr || *server == '\0') return std::string(RL_REDIS_CLI_PATH);
    // The cli that ships with the chosen server, beside it: valkey-server -> valkey-cli.
    std::string cli = server;
    const size_t at = cli.rfind("-server");
    return at == std::string::npos ? std::string() : cli.replace(at, 7, "-cli");
  }();
  return path;
}

std::string ServerName() {
  const std::string& path = RedisServerPath();
  return path.substr(path.rfind('/') + 1);
}

bool RedisAvailable() { return Executable(RedisServerPath()) && Executable(RedisCliPath()); }

bool WaitUntil(const std::function<bool()>& done, milliseconds timeout, milliseconds every) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
}

// ---------------------------------------------------------------------------------------------
// RedisServer

RedisServer::RedisServer(RedisOptions options, int port)
    : options_(std::move(options)), port_(port) {
  // Not a TempDir: the directory outlives a failed test, for its logs.
  dir_ = rl_test::MakeTempDir("rl-redis");
}

RedisServer::~RedisServer() {
  const bool failed = CurrentTestFailed();
  if (failed && !dir_.empty()) {
    std::fprintf(stderr, "---- %s: log tail ----\n%s\n----\n", Describe().c_str(),
                 LogTail(30).c_str());
  }
  connection_.reset();
  process_.Kill();
  if (dir_.empty()) return;
  if (failed || KeepDirs()) {
    std::fprintf(stderr, "kept %s\n", dir_.c_str());
  } else {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

::testing::AssertionResult RedisServer::Start() {
  if (!RedisAvailable()) {
    return ::testing::AssertionFailure()
           << "server or cli not found: " << RedisServerPath() << ", " << RedisCliPath();
  }
  if (dir_.empty()) return ::testing::AssertionFailure() << "no temp dir";
  if (running()) return ::testing::AssertionFailure() << Describe() << " already running";
  // A port picked here was free a moment ago; a parallel test's connection or server can take it
  // before redis-server binds it. Then another port is picked (three tries in all). A port the
  // test chose, or one kept for a restart, is not changed.
  const bool pick = port_ == 0;
  for (int attempt = 1;; ++attempt) {
    if (pick) port_ = options_.pick_port ? options_.pick_port() : rl_test::FreeLoopbackPort();
    ::testing::AssertionResult started = StartOnce();
    if (started || !pick || attempt == 3 || running() ||
        LogTail().find("Address already in use") == std::string::npos) {
      return started;
    }
  }
}

::testing::AssertionResult RedisServer::StartOnce() {
  {
    std::ofstream conf(dir_ + "/redis.conf", std::ios::trunc);
    conf << "port " << port_ << "\n"
         << "bind 127.0.0.1\n"
         << "daemonize no\n"
         << "dir " << dir_ << "\n"
         << "logfile " << log_path() << "\n"
         << "loglevel notice\n"
         << "save \"\"\n"
         << "appendonly no\n"
         << "enable-debug-command yes\n"
         << "repl-diskless-sync-delay 0\n";
    for (const std::string& line : options_.config) conf << line << "\n";
    for (const std::string& module : options_.modules) conf << "loadmodule " << module << "\n";
    if (!conf) return ::testing::AssertionFailure() << "cannot write " << dir_ << "/redis.conf";
  }
  rl_test::SpawnOptions spawn;
  spawn.output = rl_test::SpawnOptions::Output::kFile;
  spawn.output_path = dir_ + "/stdout.log";
  if (!process_.Start({RedisServerPath(), dir_ + "/redis.conf"}, spawn)) {
    return ::testing::AssertionFailure() << "cannot start " << RedisServerPath();
  }
  std::string last;
  const bool up = WaitUntil(
      [&] {
        if (!running()) return true;  // exited: reported below
        RespClient client(port_, 1000);
        if (!client.connected()) return false;
        Reply reply = client.Call({"PING"});
        last = reply.str;
        if (reply.type != '+' || reply.str != "PONG") return false;
        // Ours, not another server that holds the port (ours then exits: address in use).
        const std::string pid = "process_id:" + std::to_string(process_.pid()) + "\r\n";
        return client.Call({"INFO", "server"}).str.find(pid) != std::string::npos;
      },
      seconds(20), milliseconds(20));
  if (!running()) {
    return ::testing::AssertionFailure() << Describe() << " exited during start\n" << LogTail();
  }
  if (!up) {
    return ::testing::AssertionFailure()
           << Describe() << " did not answer PING (last: " << last << ")\n"
           << LogTail();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult RedisServer::Stop(Shutdown mode, milliseconds timeout) {
  connection_.reset();
  if (!running()) return ::testing::AssertionSuccess();
  {
    RespClient client(port_, 2000);
    // NOW: do not wait for lagging replicas (shutdown-timeout); the reply only comes on failure.
    Reply reply = client.Call({"SHUTDOWN", mode == Shutdown::kSave ? "SAVE" : "NOSAVE", "NOW"});
    if (reply.is_error()) {
      process_.Terminate(seconds(5));
      return ::testing::AssertionFailure()
             << Describe() << " refused SHUTDOWN: " << reply.str << "\n"
             << LogTail();
    }
  }
  if (std::optional<int> status = process_.Wait(timeout)) {
    if (*status == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << Describe() << " exited with status " << *status << "\n"
                                         << LogTail();
  }
  process_.Terminate(seconds(5));
  return ::testing::AssertionFailure() << Describe() << " did not exit after SHUTDOWN; killed\n"
                                       << LogTail();
}

void RedisServer::Kill9() {
  connection_.reset();
  process_.Kill();
}

::testing::AssertionResult RedisServer::Restart(Shutdown mode) {
  if (auto stopped = Stop(mode); !stopped) return stopped;
  return Start();
}

bool RedisServer::running() {
  if (!process_.running()) return false;
  return !process_.Wait(milliseconds(0)).has_value();
}

std::string RedisServer::ReadLog() const { return rl_test::ReadFile(log_path()); }

std::string RedisServer::LogTail(size_t lines) const {
  std::string out = LastLines(ReadLog(), lines);
  const std::string console = rl_test::ReadFile(dir_ + "/stdout.log");
  if (!console.empty()) out += "\n[stdout/stderr]\n" + LastLines(console, lines);
  return out;
}

std::string RedisServer::Describe() const {
  return ServerName() + " 127.0.0.1:" + std::to_string(port_) + " (" + dir_ + ")";
}

Reply RedisServer::Call(const std::vector<std::string>& args) {
  if (!connection_ || !connection_->connected()) connection_ = Connect();
  if (!connection_->connected()) {  // nothing listens: answer at once, not after the timeout
    connection_.reset();
    Reply refused;
    refused.type = 'X';
    return refused;
  }
  Reply reply = connection_->Call(args);
  if (reply.closed()) connection_.reset();
  return reply;
}

std::unique_ptr<RespClient> RedisServer::Connect(int timeout_ms) const {
  return std::make_unique<RespClient>(port_, timeout_ms);
}

std::string RedisServer::InfoField(const std::string& section, const std::string& field) {
  return InfoValue(Call({"INFO", section}).str, field);
}

// ---------------------------------------------------------------------------------------------
// Replication

::testing::AssertionResult StartReplication(RedisServer& master, RedisServer& replica) {
  Reply reply = replica.Call({"REPLICAOF", "127.0.0.1", std::to_string(master.port())});
  if (reply.type != '+') {
    return ::testing::AssertionFailure() << "REPLICAOF answered " << reply.str;
  }
  const bool linked = WaitUntil(
      [&] {
        return replica.InfoField("replication", "master_link_status") == "up" &&
               replica.InfoField("replication", "master_sync_in_progress") == "0" &&
               master.InfoField("replication", "slave0").find("state=online") != std::string::npos;
      },
      seconds(20));
  if (!linked) {
    return ::testing::AssertionFailure() << "replica " << replica.Describe() << " did not sync\n"
                                         << replica.LogTail() << "\nmaster:\n"
                                         << master.LogTail();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult WaitForReplicas(RedisServer& master, int replicas,
                                           milliseconds timeout) {
  Reply reply = master.Call({"WAIT", std::to_string(replicas), std::to_string(timeout.count())});
  if (reply.type == ':' && reply.integer >= replicas) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "WAIT " << replicas << " answered " << reply.type << reply.integer << reply.str;
}

::testing::AssertionResult RedisReplicaPair::Start() {
  if (auto started = master.Start(); !started) return started;
  if (auto started = replica.Start(); !started) return started;
  return StartReplication(master, replica);
}

// ---------------------------------------------------------------------------------------------
// Cluster

std::vector<int> FreeClusterPorts(int count) {
  std::mt19937 rng(
      static_cast<unsigned>(::getpid()) ^
      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
  // Both ports below Linux's ephemeral range (32768-60999 by default), which every outgoing
  // connection's source port and every server bound to port 0 draw from: a node restarted or
  // started later (a joiner) must find its bus port still free, and an ephemeral port taken in
  // between by any test's client made it abort ("Failed listening on port ... (cluster)").
  std::uniform_int_distribution<int> pick(10000, kClusterPortMax);
  std::vector<int> ports;
  for (int attempt = 0; attempt < 1000 && static_cast<int>(ports.size()) < count; ++attempt) {
    const int port = pick(rng);
    const bool taken = std::any_of(ports.begin(), ports.end(), [&](int p) {
      return std::abs(p - port) == 0 || std::abs(p - port) == 10000;
    });
    if (!taken && PortFree(port) && PortFree(port + 10000)) ports.push_back(port);
  }
  return ports;
}

RedisCluster::RedisCluster(RedisOptions options, int masters, int replicas_per_master,
                           milliseconds node_timeout)
    : masters_(masters), replicas_per_master_(replicas_per_master) {
  options.With("cluster-enabled yes")
      .With("cluster-config-file nodes.conf")
      .With("cluster-node-timeout " + std::to_string(node_timeout.count()))
      // Any replica may be promoted, however long it was disconnected: tests kill masters.
      .With("cluster-replica-validity-factor 0")
      // CLUSTER SLOTS lists a replica only once its replication offset is not 0 (Redis 7.0),
      // and an idle master moves the offset only by pinging its replicas (default every 10 s).
      .With("repl-ping-replica-period 1");
  const int total = masters * (1 + replicas_per_master);
  std::vector<int> ports = FreeClusterPorts(total);
  for (int i = 0; i < total; ++i) {
    nodes_.push_back(
        std::make_unique<RedisServer>(options, i < static_cast<int>(ports.size()) ? ports[i] : 0));
  }
}

RedisCluster::~RedisCluster() = default;

::testing::AssertionResult RedisCluster::Start() {
  std::vector<std::string> create = {RedisCliPath(), "--cluster", "create"};
  for (auto& node : nodes_) {
    if (node->port() == 0 || node->port() > 55535) {
      return ::testing::AssertionFailure() << "no free cluster port pair found";
    }
    if (auto started = node->Start(); !started) return started;
    create.push_back("127.0.0.1:" + std::to_string(node->port()));
  }
  create.insert(create.end(),
                {"--cluster-replicas", std::to_string(replicas_per_master_), "--cluster-yes"});
  rl_test::RunResult run = rl_test::Run(create, seconds(60));
  if (run.exit_status != 0) {
    return ::testing::AssertionFailure()
           << "redis-cli --cluster create failed (status "
           << (run.exit_status ? std::to_string(*run.exit_status) : "timeout") << "):\n"
           << run.output;
  }
  return WaitHealthy(replicas_per_master_ > 0);
}

RedisServer* RedisCluster::ByPort(int port) {
  for (auto& node : nodes_) {
    if (node->port() == port) return node.get();
  }
  return nullptr;
}

RedisServer* RedisCluster::FirstRunning() {
  for (auto& node : nodes_) {
    if (node->running()) return node.get();
  }
  return nullptr;
}

std::vector<ClusterNode> RedisCluster::Nodes(RedisServer* via) {
  if (via == nullptr) via = FirstRunning();
  std::vector<ClusterNode> out;
  if (via == nullptr) return out;
  Reply reply = via->Call({"CLUSTER", "NODES"});
  std::istringstream lines(reply.str);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string id, addr, flags, master, ping, pong, epoch, link;
    if (!(fields >> id >> addr >> flags >> master >> ping >> pong >> epoch >> link)) continue;
    ClusterNode node;
    node.id = id;
    const size_t colon = addr.find(':');
    node.port = colon == std::string::npos ? 0 : std::atoi(addr.c_str() + colon + 1);
    node.myself = flags.find("myself") != std::string::npos;
    node.master = flags.find("master") != std::string::npos;
    node.failed = flags.find("fail") != std::string::npos;
    node.master_id = master == "-" ? "" : master;
    std::string range;
    while (fields >> range) {
      if (range.empty() || range[0] == '[') continue;  // importing/migrating markers
      const size_t dash = range.find('-');
      const int first = std::atoi(range.c_str());
      const int last = dash == std::string::npos ? first : std::atoi(range.c_str() + dash + 1);
      node.slots.emplace_back(first, last);
    }
    out.push_back(std::move(node));
  }
  return out;
}

std::string RedisCluster::NodeId(RedisServer& node) { return node.Call({"CLUSTER", "MYID"}).str; }

int RedisCluster::KeySlot(const std::string& key) {
  RedisServer* via = FirstRunning();
  if (via == nullptr) return -1;
  Reply reply = via->Call({"CLUSTER", "KEYSLOT", key});
  return reply.type == ':' ? static_cast<int>(reply.integer) : -1;
}

RedisServer* RedisCluster::MasterOfSlot(int slot, RedisServer* via) {
  for (const ClusterNode& node : Nodes(via)) {
    if (!node.master || node.failed) continue;
    for (auto [first, last] : node.slots) {
      if (slot >= first && slot <= last) return ByPort(node.port);
    }
  }
  return nullptr;
}

std::vector<RedisServer*> RedisCluster::Masters(RedisServer* via) {
  std::vector<RedisServer*> out;
  for (const ClusterNode& node : Nodes(via)) {
    if (node.master && !node.failed && !node.slots.empty()) out.push_back(ByPort(node.port));
  }
  return out;
}

std::vector<RedisServer*> RedisCluster::ReplicasOf(RedisServer& master, RedisServer* via) {
  const std::string id = NodeId(master);
  std::vector<RedisServer*> out;
  for (const ClusterNode& node : Nodes(via)) {
    if (!node.master && node.master_id == id && !node.failed) out.push_back(ByPort(node.port));
  }
  return out;
}

::testing::AssertionResult RedisCluster::WaitHealthy(bool with_replicas, milliseconds timeout) {
  std::string problem;
  const bool healthy = WaitUntil(
      [&] {
        // Slot owner per node's view, as "first-last:port" strings, must agree everywhere.
        std::set<std::string> views;
        for (auto& node : nodes_) {
          if (!node->running()) continue;
          if (InfoValue(node->Call({"CLUSTER", "INFO"}).str, "cluster_state") != "ok") {
            problem = node->Describe() + " cluster_state is not ok";
            return false;
          }
          Reply slots = node->Call({"CLUSTER", "SLOTS"});
          std::string view;
          std::vector<std::string> ranges;
          for (const Reply& range : slots.elements) {
            if (range.elements.size() < 3) continue;
            if (with_replicas &&
                range.elements.size() < static_cast<size_t>(3 + replicas_per_master_)) {
              problem = node->Describe() + " shows a slot range without its replicas";
              return false;
            }
            ranges.push_back(std::to_string(range.elements[0].integer) + "-" +
                             std::to_string(range.elements[1].integer) + ":" +
                             std::to_string(range.elements[2].elements.size() > 1
                                                ? range.elements[2].elements[1].integer
                                                : 0));
          }
          std::sort(ranges.begin(), ranges.end());
          for (const std::string& r : ranges) view += r + " ";
          views.insert(view);
        }
        if (views.size() != 1) {
          problem = "nodes disagree on the slot map";
          return false;
        }
        return true;
      },
      timeout, milliseconds(100));
  if (healthy) return ::testing::AssertionSuccess();
  RedisServer* via = FirstRunning();
  return ::testing::AssertionFailure()
         << "cluster not healthy: " << problem << "\n"
         << (via != nullptr ? via->Call({"CLUSTER", "NODES"}).str : std::string("no node up"));
}

::testing::AssertionResult RedisCluster::MoveSlot(int slot, RedisServer& from, RedisServer& to) {
  const std::string from_id = NodeId(from);
  const std::string to_id = NodeId(to);
  const std::string s = std::to_string(slot);
  Reply reply = to.Call({"CLUSTER", "SETSLOT", s, "IMPORTING", from_id});
  if (reply.type != '+') return ::testing::AssertionFailure() << "IMPORTING: " << reply.str;
  reply = from.Call({"CLUSTER", "SETSLOT", s, "MIGRATING", to_id});
  if (reply.type != '+') return ::testing::AssertionFailure() << "MIGRATING: " << reply.str;
  for (int batch = 0; batch < 10000; ++batch) {
    Reply keys = from.Call({"CLUSTER", "GETKEYSINSLOT", s, "100"});
    if (keys.type != '*') return ::testing::AssertionFailure() << "GETKEYSINSLOT: " << keys.str;
    if (keys.elements.empty()) break;
    std::vector<std::string> migrate = {"MIGRATE", "127.0.0.1", std::to_string(to.port()), "", "0",
                                        "10000",   "KEYS"};
    for (const Reply& key : keys.elements) migrate.push_back(key.str);
    reply = from.Call(migrate);
    if (reply.type != '+') return ::testing::AssertionFailure() << "MIGRATE: " << reply.str;
  }
  // The importing node first, so it owns the slot before the source stops redirecting to it.
  std::vector<RedisServer*> order = {&to, &from};
  for (RedisServer* master : Masters()) {
    if (master != &to && master != &from) order.push_back(master);
  }
  for (RedisServer* node : order) {
    reply = node->Call({"CLUSTER", "SETSLOT", s, "NODE", to_id});
    if (reply.type != '+') {
      return ::testing::AssertionFailure() << node->Describe() << " SETSLOT NODE: " << reply.str;
    }
  }
  const bool agreed = WaitUntil(
      [&] {
        for (auto& node : nodes_) {
          if (node->running() && MasterOfSlot(slot, node.get()) != &to) return false;
        }
        return true;
      },
      seconds(20), milliseconds(50));
  if (!agreed) return ::testing::AssertionFailure() << "nodes did not agree on slot " << slot;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult RedisCluster::Failover(RedisServer& replica) {
  Reply reply = replica.Call({"CLUSTER", "FAILOVER"});
  if (reply.type != '+') return ::testing::AssertionFailure() << "CLUSTER FAILOVER: " << reply.str;
  const bool promoted =
      WaitUntil([&] { return replica.InfoField("replication", "role") == "master"; }, seconds(20),
                milliseconds(50));
  if (!promoted) {
    return ::testing::AssertionFailure() << replica.Describe() << " was not promoted\n"
                                         << replica.LogTail();
  }
  return WaitHealthy(/*with_replicas=*/true);
}

::testing::AssertionResult RedisCluster::KillMaster(RedisServer& master, RedisServer** promoted,
                                                    milliseconds timeout) {
  std::vector<RedisServer*> candidates = ReplicasOf(master);
  if (candidates.empty()) {
    return ::testing::AssertionFailure() << master.Describe() << " has no replica to promote";
  }
  master.Kill9();
  RedisServer* winner = nullptr;
  const bool done = WaitUntil(
      [&] {
        for (RedisServer* replica : candidates) {
          if (replica->running() && replica->InfoField("replication", "role") == "master") {
            winner = replica;
            return true;
          }
        }
        return false;
      },
      timeout, milliseconds(50));
  if (!done) {
    return ::testing::AssertionFailure() << "no replica of the killed master was promoted\n"
                                         << candidates[0]->LogTail();
  }
  if (promoted != nullptr) *promoted = winner;
  return WaitHealthy(/*with_replicas=*/false, timeout);
}

rl_test::RunResult RedisCluster::Cli(const std::vector<std::string>& args, bool follow_redirects,
                                     RedisServer* via) {
  if (via == nullptr) via = FirstRunning();
  std::vector<std::string> argv = {RedisCliPath()};
  if (follow_redirects) argv.push_back("-c");
  argv.insert(argv.end(), {"-p", std::to_string(via != nullptr ? via->port() : 0)});
  argv.insert(argv.end(), args.begin(), args.end());
  return rl_test::Run(argv, seconds(20));
}

}  // namespace rl::test

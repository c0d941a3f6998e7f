// rl.so reads what earlier versions persisted or replicated with the meaning it had: there a
// window, BLOCK or LEASE without a unit was milliseconds. Three ways such text arrives, each a
// fixture written here byte by byte: an old single-file AOF replayed at start, the policies aux
// data of an RDB, and a primary not yet upgraded that streams RL.POLICY SET to this replica. The
// same text typed by a client is refused with the fix in the message.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "probe_util.h"
#include "rl_util.h"

namespace rl::test {
namespace {

// The policy text earlier versions took, and what it means (milliseconds) in canonical form.
const std::vector<std::string> kOldSpec = {"TOKEN_BUCKET", "10", "60000", "BLOCK", "5000"};
constexpr const char* kOldCanonical = "TOKEN_BUCKET 10 1m BLOCK 5s";

std::string Command(const std::vector<std::string>& args) { return RespClient::Encode(args); }

std::string AsciiUpper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> PolicySet(const std::string& name) {
  std::vector<std::string> args = {"RL.POLICY", "SET", name};
  args.insert(args.end(), kOldSpec.begin(), kOldSpec.end());
  return args;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// RDB length encoding (rdbSaveLen).
std::string RdbLen(uint64_t n) {
  std::string out;
  if (n < 64) return std::string(1, static_cast<char>(n));
  if (n < 16384) {
    out += static_cast<char>(0x40 | (n >> 8));
    out += static_cast<char>(n & 0xff);
    return out;
  }
  out += static_cast<char>(0x81);
  for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xff);
  return out;
}

// An RDB (version 9) holding only rl.so's policies aux data, as AuxSave writes it: a count, then
// name and spec strings, each value behind its module opcode (2 = unsigned, 5 = string).
std::string RdbWithPolicies(const std::vector<std::pair<std::string, std::string>>& policies) {
  // The module type id: "ratelimit" in Redis's 6-bit type-name charset, then the 10-bit encver.
  const std::string charset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  uint64_t id = 0;
  for (char c : std::string("ratelimit")) id = (id << 6) | charset.find(c);
  id = (id << 10) | 1;
  std::string rdb = "REDIS0009";
  rdb += static_cast<char>(247);              // RDB_OPCODE_MODULE_AUX
  rdb += RdbLen(id) + RdbLen(2) + RdbLen(1);  // when: REDISMODULE_AUX_BEFORE_RDB
  rdb += RdbLen(2) + RdbLen(policies.size());
  for (const auto& [name, spec] : policies) {
    rdb += RdbLen(5) + RdbLen(name.size()) + name;
    rdb += RdbLen(5) + RdbLen(spec.size()) + spec;
  }
  rdb += RdbLen(0);               // RDB_MODULE_OPCODE_EOF
  rdb += static_cast<char>(255);  // RDB_OPCODE_EOF
  const uint64_t crc = Crc64(rdb);
  for (int i = 0; i < 8; ++i) rdb += static_cast<char>((crc >> (8 * i)) & 0xff);
  return rdb;
}

void ExpectTypedTextRefused(RedisServer& server) {
  EXPECT_EQ(server.Call({"RL.POLICY", "SET", "new", "TOKEN_BUCKET", "10", "60"}).str,
            "ERR window '60' needs a unit: 60s, 1m, 250ms");
  EXPECT_EQ(server.Call({"RL.CHECK", "k", "GCRA", "10", "1s", "BLOCK", "30"}).str,
            "ERR BLOCK '30' needs a unit: 30s, 1m, 250ms");
}

TEST(RlLegacyUnitsTest, OldAofWithBareWindowsLoadsAsMilliseconds) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer server(RlOptions().With("appendonly yes"));
  // An AOF of a version before appenddirname: one file, which Redis 7 loads and upgrades.
  WriteFile(server.dir() + "/appendonly.aof", Command({"SELECT", "0"}) + Command(PolicySet("old")));
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(server.Call({"RL.POLICY", "GET", "old"}).str, kOldCanonical) << server.LogTail();
  ExpectTypedTextRefused(server);
}

TEST(RlLegacyUnitsTest, RdbPoliciesWithBareWindowsLoadAsMilliseconds) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  RedisServer server(RlOptions());
  WriteFile(server.dir() + "/dump.rdb",
            RdbWithPolicies({{"old", "TOKEN_BUCKET 10 60000 BLOCK 5000"},
                             {"lease", "CONCURRENCY 2 LEASE 30000 FIXED_WINDOW 5 3600000"}}));
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(server.Call({"RL.POLICY", "GET", "old"}).str, kOldCanonical) << server.LogTail();
  EXPECT_EQ(server.Call({"RL.POLICY", "GET", "lease"}).str,
            "CONCURRENCY 2 LEASE 30s FIXED_WINDOW 5 1h");
  ExpectTypedTextRefused(server);
}

// One RESP array of bulk strings from the front of `in` (removed from it), or nothing while it
// is incomplete.
std::optional<std::vector<std::string>> TakeCommand(std::string& in) {
  size_t eol = in.find("\r\n");
  if (in.empty() || in[0] != '*' || eol == std::string::npos) return std::nullopt;
  const int n = std::stoi(in.substr(1, eol - 1));
  size_t at = eol + 2;
  std::vector<std::string> args;
  for (int i = 0; i < n; ++i) {
    eol = in.find("\r\n", at);
    if (at >= in.size() || in[at] != '$' || eol == std::string::npos) return std::nullopt;
    const size_t len = std::stoul(in.substr(at + 1, eol - at - 1));
    if (in.size() < eol + 2 + len + 2) return std::nullopt;
    args.push_back(in.substr(eol + 2, len));
    at = eol + 2 + len + 2;
  }
  in.erase(0, at);
  return args;
}

// The primary's side of a full sync, by hand: replies to the replica's handshake (PING,
// REPLCONF..., PSYNC), sends `rdb`, then `stream`. Returns the connection (the replica applies
// the stream while it stays open), or -1 when the replica never got that far.
int ServeFullSync(int listener, const std::string& rdb, const std::string& stream) {
  pollfd p{listener, POLLIN, 0};
  if (poll(&p, 1, 20000) != 1) return -1;
  const int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) return -1;
  std::string in;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd r{fd, POLLIN, 0};
    if (poll(&r, 1, 1000) != 1) continue;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
    while (std::optional<std::vector<std::string>> cmd = TakeCommand(in)) {
      const std::string name = cmd->empty() ? "" : AsciiUpper((*cmd)[0]);
      std::string out = name == "PING" ? "+PONG\r\n" : "+OK\r\n";  // REPLCONF ...: OK
      if (name == "PSYNC") {
        out = "+FULLRESYNC 0123456789012345678901234567890123456789 0\r\n$" +
              std::to_string(rdb.size()) + "\r\n" + rdb + stream;
      }
      if (write(fd, out.data(), out.size()) != static_cast<ssize_t>(out.size())) break;
      if (name == "PSYNC") return fd;
    }
  }
  close(fd);
  return -1;
}

TEST(RlLegacyUnitsTest, APrimaryNotYetUpgradedReplicatesBareWindowsAsMilliseconds) {
  if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int primary_port = ntohs(addr.sin_port);

  RedisServer replica(RlOptions());
  ASSERT_TRUE(replica.Start());
  ASSERT_EQ(replica.Call({"REPLICAOF", "127.0.0.1", std::to_string(primary_port)}).str, "OK");
  // The full sync's RDB carries one old policy in the aux data; the stream sets another, as an
  // earlier rl.so replicates RL.POLICY SET: verbatim.
  const int link =
      ServeFullSync(listener, RdbWithPolicies({{"synced", "TOKEN_BUCKET 10 60000 BLOCK 5000"}}),
                    Command({"SELECT", "0"}) + Command(PolicySet("streamed")));
  ASSERT_GE(link, 0) << replica.LogTail();
  const bool streamed = WaitUntil(
      [&] {
        return replica.Call({"RL.POLICY", "GET", "streamed"}).str == kOldCanonical;
      },
      std::chrono::seconds(10));
  EXPECT_TRUE(streamed) << replica.Call({"RL.POLICY", "GET", "streamed"}).str << "\n"
                        << replica.LogTail();
  EXPECT_EQ(replica.Call({"RL.POLICY", "GET", "synced"}).str, kOldCanonical);
  EXPECT_EQ(replica.Call({"REPLICAOF", "NO", "ONE"}).str, "OK");
  ExpectTypedTextRefused(replica);
  close(link);
  close(listener);
}

}  // namespace
}  // namespace rl::test

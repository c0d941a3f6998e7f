// The probe module in one real redis-server: every command through a raw RESP2/RESP3 client and
// through redis-cli, error texts, WRONGTYPE, TYPE and MEMORY USAGE, which type callbacks the
// server calls, context flags, COMMAND INFO / DOCS / GETKEYS built from the declared key specs
// and argument structs, and ACL read-only key patterns honouring the key-spec flags.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "probe_util.h"
#include "redis_harness.h"

namespace rl::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

class ProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
    ASSERT_TRUE(server_.Start());
  }
  Reply Call(const std::vector<std::string>& args) { return server_.Call(args); }

  RedisServer server_{ProbeOptions()};
};

// Flat RESP2 array or RESP3 map: the value after `key`.
const Reply* Field(const Reply& reply, const std::string& key) { return reply.Get(key); }

// The strings anywhere inside a (nested) reply, for loose "mentions" checks on COMMAND output.
void Collect(const Reply& reply, std::vector<std::string>* out) {
  if (!reply.str.empty()) out->push_back(reply.str);
  for (const Reply& e : reply.elements) Collect(e, out);
}
bool Mentions(const Reply& reply, const std::string& text) {
  std::vector<std::string> all;
  Collect(reply, &all);
  for (const std::string& s : all) {
    if (s == text) return true;
  }
  return false;
}

TEST_F(ProbeTest, LoadsWithItsNameVersionsAndArguments) {
  Reply modules = Call({"MODULE", "LIST"});
  ASSERT_EQ(modules.elements.size(), 1u);
  ASSERT_NE(Field(modules.elements[0], "name"), nullptr);
  EXPECT_EQ(Field(modules.elements[0], "name")->str, "probe");
  EXPECT_EQ(Field(modules.elements[0], "ver")->integer, 1);
  // GetServerVersion is 0x00MMmmpp of the running server: Valkey's own version (its INFO keeps
  // redis_version at the Redis release it is compatible with, 7.2.4 for Valkey 8). The server's
  // type methods struct is version 4 in Redis 7.0, 5 (aux_save2) from Redis 7.2 and in Valkey 8;
  // the probe, like rl.so, declares version 4, which both accept.
  std::string version = server_.InfoField("server", "valkey_version");
  if (version.empty()) version = server_.InfoField("server", "redis_version");
  int major = 0, minor = 0, patch = 0;
  ASSERT_EQ(std::sscanf(version.c_str(), "%d.%d.%d", &major, &minor, &patch), 3);
  EXPECT_EQ(ProbeStat(server_, "server_version"), (major << 16) | (minor << 8) | patch);
  EXPECT_GE(ProbeStat(server_, "type_method_version"), 4);
  EXPECT_NE(server_.ReadLog().find("probe: loaded (0 arguments)"), std::string::npos);
}

TEST(ProbeLoadTest, PassesLoadmoduleArguments) {
  if (!RedisAvailable()) GTEST_SKIP();
  RedisServer server(RedisOptions().LoadModule(std::string(RL_ABI_PROBE_PATH) + " one two"));
  ASSERT_TRUE(server.Start());
  EXPECT_NE(server.ReadLog().find("probe: loaded (2 arguments)"), std::string::npos);
}

TEST_F(ProbeTest, SetGetMetaAndExpiry) {
  EXPECT_TRUE(Call({"PROBE.GET", "k"}).is_null());
  EXPECT_TRUE(Call({"PROBE.META", "k"}).is_null());
  const long long before = Call({"PROBE.TIME"}).elements[0].integer;
  ASSERT_EQ(Call({"PROBE.SET", "k", "hello"}).str, "OK");
  EXPECT_EQ(Call({"PROBE.GET", "k"}).str, "hello");
  Reply meta = Call({"PROBE.META", "k"});
  ASSERT_EQ(meta.elements.size(), 4u);  // the postponed length was set
  EXPECT_GE(meta.elements[0].integer, before);
  EXPECT_EQ(meta.elements[1].integer, -1);  // REDISMODULE_NO_EXPIRE
  EXPECT_EQ(meta.elements[2].integer, -1);
  EXPECT_EQ(meta.elements[3].integer, 5);
  EXPECT_EQ(Call({"TYPE", "k"}).str, "probe-ABI");

  // PX: SetExpire, read back as absolute time.
  ASSERT_EQ(Call({"PROBE.SET", "k", "v2", "PX", "100000"}).str, "OK");
  meta = Call({"PROBE.META", "k"});
  EXPECT_GT(meta.elements[1].integer, 90000);
  EXPECT_LE(meta.elements[1].integer, 100000);
  EXPECT_EQ(meta.elements[2].integer, Call({"PEXPIRETIME", "k"}).integer);
  // PXAT and CREATED: SetAbsExpire and a caller-chosen creation time.
  const long long at = before + 200000;
  ASSERT_EQ(Call({"PROBE.SET", "k", "v3", "PXAT", std::to_string(at), "CREATED", "12345"}).str,
            "OK");
  meta = Call({"PROBE.META", "k"});
  EXPECT_EQ(meta.elements[0].integer, 12345);
  EXPECT_EQ(meta.elements[2].integer, at);
  EXPECT_EQ(Call({"PEXPIRETIME", "k"}).integer, at);
  // A plain SET replaces the value (ModuleTypeReplaceValue) and removes the TTL.
  ASSERT_EQ(Call({"PROBE.SET", "k", "v4"}).str, "OK");
  EXPECT_EQ(Call({"PTTL", "k"}).integer, -1);
  EXPECT_EQ(Call({"PROBE.GET", "k"}).str, "v4");

  // The server expires module keys like any other.
  ASSERT_EQ(Call({"PROBE.SET", "short", "x", "PX", "30"}).str, "OK");
  EXPECT_TRUE(WaitUntil([&] { return Call({"PROBE.GET", "short"}).is_null(); }, seconds(5)));

  EXPECT_EQ(Call({"PROBE.DEL", "k"}).integer, 1);
  EXPECT_EQ(Call({"PROBE.DEL", "k"}).integer, 0);
  EXPECT_EQ(Call({"EXISTS", "k"}).integer, 0);
}

TEST_F(ProbeTest, ArgumentErrors) {
  // Arity from SetCommandInfo is checked by the server before the module runs.
  EXPECT_EQ(Call({"PROBE.SET", "k"}).str, "ERR wrong number of arguments for 'probe.set' command");
  EXPECT_EQ(Call({"PROBE.GET", "k", "extra"}).str,
            "ERR wrong number of arguments for 'probe.get' command");
  // RedisModule_WrongArity: an option without its value.
  EXPECT_EQ(Call({"PROBE.SET", "k", "v", "PX"}).str,
            "ERR wrong number of arguments for 'probe.set' command");
  EXPECT_EQ(Call({"PROBE.SET", "k", "v", "PX", "abc"}).str,
            "ERR value is not an integer or out of range");
  EXPECT_EQ(Call({"PROBE.SET", "k", "v", "PX", "0"}).str, "ERR syntax error");
  EXPECT_EQ(Call({"PROBE.SET", "k", "v", "PX", "1", "PXAT", "2"}).str, "ERR syntax error");
  EXPECT_EQ(Call({"PROBE.CONF"}).str, "ERR wrong number of arguments for 'probe.conf' command");
  EXPECT_EQ(Call({"PROBE.CONF", "nope"}).str,
            "ERR unknown subcommand 'nope'. Try PROBE.CONF HELP.");
  EXPECT_EQ(Call({"EXISTS", "k"}).integer, 0);
}

TEST_F(ProbeTest, WrongTypeBothWays) {
  ASSERT_EQ(Call({"SET", "s", "x"}).str, "OK");
  ASSERT_EQ(Call({"PROBE.SET", "p", "v"}).str, "OK");
  for (const auto& command : std::vector<std::vector<std::string>>{
           {"PROBE.GET", "s"}, {"PROBE.SET", "s", "v"}, {"PROBE.META", "s"}, {"PROBE.DEL", "s"}}) {
    Reply reply = Call(command);
    EXPECT_TRUE(reply.is_error()) << command[0];
    EXPECT_EQ(reply.str, kWrongType) << command[0];
  }
  EXPECT_EQ(Call({"GET", "p"}).str, kWrongType);
  EXPECT_EQ(Call({"GET", "s"}).str, "x");  // untouched
  EXPECT_EQ(Call({"PROBE.TWO", "s", "p"}).integer, 1);
}

TEST_F(ProbeTest, MapDowngradesToFlatArrayInResp2) {
  Reply resp2 = Call({"PROBE.MAP"});
  ASSERT_EQ(resp2.type, '*');
  ASSERT_EQ(resp2.elements.size(), 10u);
  EXPECT_EQ(resp2.Get("int")->integer, 42);
  EXPECT_EQ(resp2.Get("double")->type, '$');
  EXPECT_EQ(resp2.Get("double")->str, "1.5");
  EXPECT_EQ(resp2.Get("verbatim")->type, '$');
  EXPECT_EQ(resp2.Get("verbatim")->str, "hello");
  EXPECT_TRUE(resp2.Get("null")->is_null());
  EXPECT_EQ(resp2.Get("array")->Ints(), (std::vector<int64_t>{1, 2}));

  auto resp3 = server_.Connect();
  ASSERT_EQ(resp3->Call({"HELLO", "3"}).type, '%');
  Reply map = resp3->Call({"PROBE.MAP"});
  ASSERT_EQ(map.type, '%');
  ASSERT_EQ(map.integer, 5);
  EXPECT_EQ(map.Get("int")->integer, 42);
  EXPECT_EQ(map.Get("double")->type, ',');
  EXPECT_EQ(map.Get("double")->str, "1.5");
  EXPECT_EQ(map.Get("verbatim")->type, '=');
  EXPECT_EQ(map.Get("verbatim")->str, "hello");  // "txt:" stripped by the client
  EXPECT_EQ(map.Get("null")->type, '_');
  EXPECT_EQ(map.Get("array")->Ints(), (std::vector<int64_t>{1, 2}));
}

TEST_F(ProbeTest, ContextFlagsClientIdAndClocks) {
  constexpr long long kMulti = 1 << 1, kMaster = 1 << 2, kSlave = 1 << 3, kCluster = 1 << 5,
                      kLua = 1 << 0, kAof = 1 << 6, kRdb = 1 << 7, kMaxmemory = 1 << 8,
                      kEvict = 1 << 9, kOom = 1 << 10, kOomWarning = 1 << 11,
                      kDenyBlocking = 1 << 21, kResp3 = 1 << 22;
  const long long flags = Call({"PROBE.CTX"}).integer;
  EXPECT_TRUE(flags & kMaster);
  EXPECT_FALSE(flags & (kSlave | kCluster | kMulti | kLua | kAof | kRdb | kOom | kResp3));

  auto client = server_.Connect();
  EXPECT_EQ(client->Call({"PROBE.CLIENTID"}).integer, client->Call({"CLIENT", "ID"}).integer);
  ASSERT_EQ(client->Call({"MULTI"}).str, "OK");
  ASSERT_EQ(client->Call({"PROBE.CTX"}).str, "QUEUED");
  Reply exec = client->Call({"EXEC"});
  ASSERT_EQ(exec.elements.size(), 1u);
  EXPECT_EQ(exec.elements[0].integer & (kMulti | kDenyBlocking), kMulti | kDenyBlocking);
  EXPECT_EQ(Call({"EVAL", "return redis.call('PROBE.CTX')", "0"}).integer & (kLua | kDenyBlocking),
            kLua | kDenyBlocking);
  ASSERT_EQ(client->Call({"HELLO", "3"}).type, '%');
  EXPECT_TRUE(client->Call({"PROBE.CTX"}).integer & kResp3);

  // Persistence settings show up at once.
  ASSERT_EQ(Call({"CONFIG", "SET", "appendonly", "yes"}).str, "OK");
  ASSERT_EQ(Call({"CONFIG", "SET", "save", "3600 1"}).str, "OK");
  EXPECT_EQ(Call({"PROBE.CTX"}).integer & (kAof | kRdb), kAof | kRdb);

  // Over maxmemory: the OOM flags, and "deny-oom" makes the server refuse PROBE.SET.
  ASSERT_EQ(Call({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}).str, "OK");
  ASSERT_EQ(Call({"CONFIG", "SET", "maxmemory", "1"}).str, "OK");
  EXPECT_EQ(Call({"PROBE.CTX"}).integer & (kMaxmemory | kEvict | kOom | kOomWarning),
            kMaxmemory | kEvict | kOom | kOomWarning);
  ASSERT_EQ(Call({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).str, "OK");
  EXPECT_EQ(Call({"PROBE.SET", "k", "v"}).str,
            "OOM command not allowed when used memory > 'maxmemory'.");
  ASSERT_EQ(Call({"CONFIG", "SET", "maxmemory", "0"}).str, "OK");
  EXPECT_EQ(ProbeStat(server_, "set_replicated"), 0);
  EXPECT_EQ(ProbeStat(server_, "set_loading"), 0);

  Reply time = Call({"TIME"});
  const long long server_ms =
      std::stoll(time.elements[0].str) * 1000 + std::stoll(time.elements[1].str) / 1000;
  Reply first = Call({"PROBE.TIME"});
  Reply second = Call({"PROBE.TIME"});
  EXPECT_NEAR(static_cast<double>(first.elements[0].integer), static_cast<double>(server_ms),
              10000.0);
  EXPECT_GT(second.elements[1].integer, first.elements[1].integer);  // monotonic microseconds
}

TEST_F(ProbeTest, MemoryUsageCopyUnlinkAndDigestCallbacks) {
  const std::string value(1000, 'x');
  ASSERT_EQ(Call({"PROBE.SET", "k", value}).str, "OK");
  Reply usage = Call({"MEMORY", "USAGE", "k"});
  ASSERT_EQ(usage.type, ':');
  EXPECT_GT(usage.integer, 1000);
  // Redis 7.0 calls the version 4 callbacks (mem_usage2, copy2, unlink2, free_effort2) when the
  // struct sets them: each reached its own slot, so the layout after aux_save_triggers is right.
  EXPECT_GE(ProbeStat(server_, "mem_usage2"), 1);
  EXPECT_EQ(ProbeStat(server_, "mem_usage"), 0);

  EXPECT_EQ(Call({"COPY", "k", "k2"}).integer, 1);
  EXPECT_EQ(ProbeStat(server_, "copy2"), 1);
  EXPECT_EQ(ProbeStat(server_, "copy"), 0);
  EXPECT_EQ(Call({"PROBE.GET", "k2"}).str, value);
  // A copy keeps the creation time, so the digests match.
  Reply digest = Call({"DEBUG", "DIGEST-VALUE", "k", "k2"});
  ASSERT_EQ(digest.elements.size(), 2u) << digest.str;
  EXPECT_EQ(digest.elements[0].str, digest.elements[1].str);
  EXPECT_NE(digest.elements[0].str, std::string(40, '0'));
  EXPECT_GE(ProbeStat(server_, "digest"), 2);

  EXPECT_EQ(Call({"UNLINK", "k2"}).integer, 1);
  EXPECT_TRUE(WaitUntil([&] { return ProbeStat(server_, "free") == 1; }, seconds(5)));
  EXPECT_EQ(ProbeStat(server_, "unlink2"), 1);
  EXPECT_EQ(ProbeStat(server_, "free_effort2"), 1);
  EXPECT_EQ(ProbeStat(server_, "unlink"), 0);
  EXPECT_EQ(ProbeStat(server_, "free_effort"), 0);
  EXPECT_EQ(Call({"DEL", "k"}).integer, 1);
  EXPECT_TRUE(WaitUntil([&] { return ProbeStat(server_, "free") == 2; }, seconds(5)));
}

TEST_F(ProbeTest, CommandInfoShowsTheKeySpecs) {
  Reply info = Call({"COMMAND", "INFO", "probe.set", "probe.get", "probe.del"});
  ASSERT_EQ(info.elements.size(), 3u);
  const Reply& set = info.elements[0];
  ASSERT_GE(set.elements.size(), 9u);
  EXPECT_EQ(set.elements[0].str, "probe.set");
  EXPECT_EQ(set.elements[1].integer, -3);
  EXPECT_TRUE(Mentions(set.elements[2], "write"));
  EXPECT_TRUE(Mentions(set.elements[2], "denyoom"));
  EXPECT_EQ(set.elements[3].integer, 1);  // first key
  EXPECT_EQ(set.elements[4].integer, 1);  // last key
  EXPECT_EQ(set.elements[5].integer, 1);  // step
  EXPECT_TRUE(Mentions(set.elements[7], "nondeterministic_output"));
  ASSERT_EQ(set.elements[8].elements.size(), 1u);  // one key spec
  const Reply& spec = set.elements[8].elements[0];
  EXPECT_EQ(spec.Get("notes")->str, "the probe value");
  EXPECT_EQ(spec.Get("flags")->elements.size(), 2u);
  EXPECT_TRUE(Mentions(*spec.Get("flags"), "RW"));
  EXPECT_TRUE(Mentions(*spec.Get("flags"), "update"));
  EXPECT_EQ(spec.Get("begin_search")->Get("type")->str, "index");
  EXPECT_EQ(spec.Get("begin_search")->Get("spec")->Get("index")->integer, 1);
  EXPECT_EQ(spec.Get("find_keys")->Get("type")->str, "range");
  EXPECT_EQ(spec.Get("find_keys")->Get("spec")->Get("lastkey")->integer, 0);
  EXPECT_EQ(spec.Get("find_keys")->Get("spec")->Get("keystep")->integer, 1);
  EXPECT_EQ(spec.Get("find_keys")->Get("spec")->Get("limit")->integer, 0);

  const Reply& get_spec = info.elements[1].elements[8].elements[0];
  EXPECT_TRUE(Mentions(*get_spec.Get("flags"), "RO"));
  EXPECT_TRUE(Mentions(*get_spec.Get("flags"), "access"));
  EXPECT_TRUE(Mentions(info.elements[1].elements[2], "readonly"));
  const Reply& del_spec = info.elements[2].elements[8].elements[0];
  EXPECT_TRUE(Mentions(*del_spec.Get("flags"), "RM"));
  EXPECT_TRUE(Mentions(*del_spec.Get("flags"), "delete"));

  EXPECT_EQ(Call({"COMMAND", "GETKEYS", "probe.set", "key1", "v", "PX", "5"}).elements.size(), 1u);
  EXPECT_EQ(Call({"COMMAND", "GETKEYS", "probe.set", "key1", "v"}).elements[0].str, "key1");
  // The getkeys-api command: the module's KeyAtPos answers.
  Reply two = Call({"COMMAND", "GETKEYS", "probe.two", "a", "b"});
  ASSERT_EQ(two.elements.size(), 2u);
  EXPECT_EQ(two.elements[0].str, "a");
  EXPECT_EQ(two.elements[1].str, "b");
  EXPECT_TRUE(
      Mentions(Call({"COMMAND", "INFO", "probe.two"}).elements[0].elements[2], "movablekeys"));

  // The container and its subcommands.
  Reply conf = Call({"COMMAND", "INFO", "probe.conf"}).elements[0];
  ASSERT_GE(conf.elements.size(), 10u);
  EXPECT_TRUE(Mentions(conf.elements[9], "probe.conf|set"));
  EXPECT_TRUE(Mentions(conf.elements[9], "probe.conf|get"));
}

TEST_F(ProbeTest, CommandDocsShowTheArgumentStructs) {
  Reply docs = Call({"COMMAND", "DOCS", "probe.set"});
  ASSERT_EQ(docs.elements.size(), 2u);
  const Reply& doc = docs.elements[1];
  EXPECT_EQ(doc.Get("summary")->str, "Stores a probe value");
  EXPECT_EQ(doc.Get("complexity")->str, "O(1)");
  EXPECT_EQ(doc.Get("since")->str, "1.0.0");
  EXPECT_EQ(doc.Get("module")->str, "probe");
  ASSERT_NE(doc.Get("history"), nullptr);
  EXPECT_TRUE(Mentions(*doc.Get("history"), "Added CREATED."));
  const Reply* args = doc.Get("arguments");
  ASSERT_NE(args, nullptr);
  ASSERT_EQ(args->elements.size(), 4u);
  EXPECT_EQ(args->elements[0].Get("type")->str, "key");
  EXPECT_EQ(args->elements[0].Get("key_spec_index")->integer, 0);
  EXPECT_EQ(args->elements[1].Get("summary")->str, "the bytes to store");
  EXPECT_EQ(args->elements[1].Get("since")->str, "1.0.0");
  // The ONEOF's subargs pointer sits after deprecated_since: read from the right offset.
  const Reply& expiration = args->elements[2];
  EXPECT_EQ(expiration.Get("type")->str, "oneof");
  ASSERT_NE(expiration.Get("arguments"), nullptr);
  ASSERT_EQ(expiration.Get("arguments")->elements.size(), 2u);
  EXPECT_EQ(expiration.Get("arguments")->elements[0].Get("token")->str, "PX");
  EXPECT_EQ(expiration.Get("arguments")->elements[1].Get("token")->str, "PXAT");
  EXPECT_EQ(args->elements[3].Get("token")->str, "CREATED");
  EXPECT_TRUE(Mentions(*args->elements[3].Get("flags"), "optional"));
}

TEST_F(ProbeTest, AclReadOnlyKeyPatternsFollowTheKeySpecFlags) {
  ASSERT_EQ(Call({"PROBE.SET", "k", "v"}).str, "OK");
  ASSERT_EQ(Call({"ACL", "SETUSER", "reader", "on", "nopass", "%R~*", "+@all"}).str, "OK");
  auto reader = server_.Connect();
  ASSERT_EQ(reader->Call({"AUTH", "reader", "any"}).str, "OK");
  EXPECT_EQ(reader->Call({"PROBE.GET", "k"}).str, "v");              // RO key spec
  EXPECT_EQ(reader->Call({"PROBE.META", "k"}).elements.size(), 4u);  // RO key spec
  // The server's refusal of a write to a read-only pattern, as SET gets it (the text differs:
  // Redis 7.0 "NOPERM this user has no permissions to access one of the keys used as
  // arguments", Valkey 8 "NOPERM No permissions to access a key").
  const std::string noperm = reader->Call({"SET", "k", "w"}).str;
  ASSERT_EQ(noperm.rfind("NOPERM", 0), 0u) << noperm;
  EXPECT_EQ(reader->Call({"PROBE.SET", "k", "w"}).str, noperm);  // RW key spec
  EXPECT_EQ(reader->Call({"PROBE.DEL", "k"}).str, noperm);       // RM key spec
  // RedisModule_KeyAtPos reports keys without flags, which ACL treats as read + write: a
  // read-only command must declare key specs (or KeyAtPosWithFlags) to be usable by %R~ users.
  EXPECT_EQ(reader->Call({"PROBE.TWO", "k", "k"}).str, noperm);
  EXPECT_EQ(Call({"PROBE.GET", "k"}).str, "v");
}

// GetUsedMemoryRatio is INFO's used_memory (less replica and AOF buffers, none here) over
// maxmemory, 0 without maxmemory; DbSize is DBSIZE of the client's database.
TEST_F(ProbeTest, UsedMemoryRatioAndDbSize) {
  EXPECT_EQ(Call({"PROBE.MEM"}).Ints(), (std::vector<int64_t>{0, 0}));
  ASSERT_EQ(Call({"PROBE.SET", "a", "1"}).str, "OK");
  ASSERT_EQ(Call({"PROBE.SET", "b", "2"}).str, "OK");
  EXPECT_EQ(Call({"PROBE.MEM"}).Ints().at(1), Call({"DBSIZE"}).integer);
  EXPECT_EQ(Call({"PROBE.MEM"}).Ints().at(1), 2);
  auto client = server_.Connect();
  ASSERT_EQ(client->Call({"SELECT", "1"}).str, "OK");
  EXPECT_EQ(client->Call({"PROBE.MEM"}).Ints().at(1), 0) << "per database";
  const long long maxmemory = 64LL << 20;
  ASSERT_EQ(Call({"CONFIG", "SET", "maxmemory", std::to_string(maxmemory)}).str, "OK");
  const double used = std::stod(server_.InfoField("memory", "used_memory"));
  const double ratio = static_cast<double>(Call({"PROBE.MEM"}).Ints().at(0)) / 1e6;
  EXPECT_NEAR(ratio, used / static_cast<double>(maxmemory), 0.002) << used;
  EXPECT_GT(ratio, 0.0);
  ASSERT_EQ(Call({"CONFIG", "SET", "maxmemory", "0"}).str, "OK");
  EXPECT_EQ(Call({"PROBE.MEM"}).Ints().at(0), 0);
}

// The module ACL API: the caller's user, and what that user may run on which key.
TEST_F(ProbeTest, AclUserOfTheCaller) {
  const Reply root = Call({"PROBE.MAYDEL", "k"});
  ASSERT_EQ(root.elements.size(), 2u);
  EXPECT_EQ(root.elements[0].str, "default");
  EXPECT_EQ(root.elements[1].integer, 1);
  ASSERT_EQ(Call({"ACL", "SETUSER", "u", "on", ">pw", "~a:*", "+@all", "-@keyspace"}).str, "OK");
  auto client = server_.Connect();
  ASSERT_EQ(client->Call({"AUTH", "u", "pw"}).str, "OK");
  const Reply denied = client->Call({"PROBE.MAYDEL", "a:1"});
  ASSERT_EQ(denied.elements.size(), 2u);
  EXPECT_EQ(denied.elements[0].str, "u");
  EXPECT_EQ(denied.elements[1].integer, 0) << "DEL is @keyspace";
  ASSERT_EQ(Call({"ACL", "SETUSER", "u", "+del"}).str, "OK");
  EXPECT_EQ(client->Call({"PROBE.MAYDEL", "a:1"}).elements.at(1).integer, 1);
  EXPECT_EQ(client->Call({"PROBE.MAYDEL", "b:1"}).elements.at(1).integer, 0) << "key pattern";
}

TEST_F(ProbeTest, ConfSubcommandsAndInfoSection) {
  EXPECT_TRUE(Call({"PROBE.CONF", "GET"}).is_null());
  EXPECT_EQ(Call({"PROBE.CONF", "SET", "alpha"}).str, "OK");
  EXPECT_EQ(Call({"PROBE.CONF", "GET"}).str, "alpha");
  EXPECT_EQ(server_.InfoField("probe", "probe_conf"), "alpha");
  // INFO <module> lists the module's sections, named <module>_<section>.
  const std::string info = Call({"INFO", "probe"}).str;
  EXPECT_NE(info.find("# probe_stats"), std::string::npos) << info;
}

TEST_F(ProbeTest, RedisCliRunsEveryCommand) {
  auto cli = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {RedisCliPath(), "-p", std::to_string(server_.port())};
    argv.insert(argv.end(), args.begin(), args.end());
    rl_test::RunResult run = rl_test::Run(argv, seconds(10));
    EXPECT_EQ(run.exit_status, 0);
    return run.output;
  };
  EXPECT_EQ(cli({"PROBE.SET", "c", "from-cli", "PX", "60000"}), "OK\n");
  EXPECT_EQ(cli({"PROBE.GET", "c"}), "from-cli\n");
  EXPECT_EQ(cli({"TYPE", "c"}), "probe-ABI\n");
  EXPECT_EQ(cli({"PROBE.CONF", "SET", "x"}), "OK\n");
  EXPECT_EQ(cli({"PROBE.CONF", "GET"}), "x\n");
  EXPECT_EQ(cli({"PROBE.TWO", "c", "nothing"}), "1\n");
  const std::string map = cli({"-3", "PROBE.MAP"});  // RESP3: one "key value" per line
  EXPECT_NE(map.find("int 42\n"), std::string::npos) << map;
  EXPECT_NE(map.find("verbatim hello\n"), std::string::npos) << map;
  EXPECT_EQ(cli({"PROBE.DEL", "c"}), "1\n");
}

}  // namespace
}  // namespace rl::test

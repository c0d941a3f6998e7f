// rl.so's versioned policy set on single nodes (module/policies.h, policy_sync.h): a client's
// change publishes a new version (RL.POLICY VERSION, INFO rl); after a restart the stored
// versioned set wins over the POLICIES file, which RL.POLICY RELOAD reads again and publishes;
// replicas and the AOF receive the versioned set. rl_cluster_test.cc covers the cluster bus.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "probe_util.h"
#include "redis_harness.h"
#include "rl_util.h"

namespace rl::test {
namespace {

class RlPolicySetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << "redis-server/redis-cli not installed";
  }
  TempFile file_{"[policies]\napi = \"GCRA 10 1m\"\n"};
  RedisOptions Options() { return RlOptions("POLICIES " + file_.path()); }
  void Rewrite(const std::string& text) { std::ofstream(file_.path(), std::ios::trunc) << text; }
};

std::string Field(const Reply& version, const char* name) {
  const Reply* r = version.Get(name);
  if (r == nullptr) return "<none>";
  return r->type == ':' ? std::to_string(r->integer) : r->str;
}

std::string Version(RedisServer& server) {
  return Field(server.Call({"RL.POLICY", "VERSION"}), "version");
}

TEST_F(RlPolicySetTest, VersionedSetWinsOverTheFileAndReloadPublishesIt) {
  RedisServer server(Options());
  ASSERT_TRUE(server.Start());
  const Reply first = server.Call({"RL.POLICY", "VERSION"});
  EXPECT_EQ(Field(first, "version"), "0") << Show(first);  // the file's set, never published
  EXPECT_EQ(Field(first, "nodes"), "1");
  EXPECT_EQ(Field(first, "agreed"), "1");
  ASSERT_EQ(server.Call({"RL.POLICY", "SET", "b", "GCRA", "5", "1s"}).str, "OK");
  const std::string v1 = Version(server);
  EXPECT_NE(v1, "0");
  EXPECT_EQ(server.InfoField("rl", "rl_policies_version"), v1);
  EXPECT_EQ(server.Call({"RL.POLICY", "DEL", "api"}).integer, 1);
  const std::string v2 = Version(server);
  EXPECT_NE(v2, v1);
  EXPECT_EQ(Show(server.Call({"RL.POLICY", "LIST"})), R"(["b" "GCRA 5 1s"])");

  // The file changes; the stored versioned set still wins at the next start (the deletion of a
  // file policy included).
  Rewrite("[policies]\nnew = \"GCRA 1 1m\"\napi = \"GCRA 99 1m\"\n");
  ASSERT_TRUE(server.Restart(RedisServer::Shutdown::kSave));
  EXPECT_EQ(Show(server.Call({"RL.POLICY", "LIST"})), R"(["b" "GCRA 5 1s"])");
  EXPECT_EQ(Version(server), v2);

  // RELOAD: the file, read again, is the whole set, under a newer version; a file that does not
  // parse changes nothing.
  ASSERT_EQ(server.Call({"RL.POLICY", "RELOAD"}).str, "OK");
  EXPECT_EQ(Show(server.Call({"RL.POLICY", "LIST"})), R"(["api" "GCRA 99 1m" "new" "GCRA 1 1m"])");
  const std::string v3 = Version(server);
  EXPECT_NE(v3, v2);
  Rewrite("[policies]\nbad = \"GCRA 0 1m\"\n");
  EXPECT_TRUE(server.Call({"RL.POLICY", "RELOAD"}).is_error());
  EXPECT_EQ(Version(server), v3);
  EXPECT_EQ(server.Call({"RL.POLICY", "GET", "new"}).str, "GCRA 1 1m");
  ASSERT_EQ(server.Call({"DEBUG", "RELOAD"}).str, "OK");
  EXPECT_EQ(Version(server), v3);

  // Without a file there is nothing to reload.
  RedisServer bare(RlOptions());
  ASSERT_TRUE(bare.Start());
  EXPECT_EQ(bare.Call({"RL.POLICY", "RELOAD"}).str, "ERR no POLICIES file was given at load");
}

// A replica and the AOF receive the whole versioned set (RL.POLICYSET), so the replica holds the
// master's version and an AOF replay restores it.
TEST_F(RlPolicySetTest, ReplicaAndAofHoldTheMastersVersion) {
  RedisReplicaPair pair(Options().With("appendonly yes").With("appendfsync always"));
  ASSERT_TRUE(pair.Start());
  ASSERT_EQ(pair.master.Call({"RL.POLICY", "SET", "b", "TOKEN_BUCKET", "5", "1s"}).str, "OK");
  const std::string v = Version(pair.master);
  EXPECT_TRUE(WaitUntil([&] { return Version(pair.replica) == v; }, std::chrono::seconds(10)))
      << Version(pair.replica) << " vs " << v;
  EXPECT_EQ(pair.replica.Call({"RL.POLICY", "GET", "b"}).str, "TOKEN_BUCKET 5 1s");
  // A replica refuses changes of its own.
  EXPECT_TRUE(pair.replica.Call({"RL.POLICY", "RELOAD"}).is_error());
  EXPECT_NE(ReadAofFiles(pair.master.dir()).find("rl.policyset"), std::string::npos);
  pair.master.Kill9();
  ASSERT_TRUE(pair.master.Start());
  EXPECT_EQ(Version(pair.master), v);
  EXPECT_EQ(pair.master.Call({"RL.POLICY", "GET", "b"}).str, "TOKEN_BUCKET 5 1s");
  // RL.POLICYSET from a client: malformed is refused, an older set changes nothing.
  EXPECT_TRUE(pair.master.Call({"RL.POLICYSET", "x"}).is_error());
  EXPECT_EQ(pair.master.Call({"RL.POLICYSET", "5:rlps11:12:ab1:0"}).str, "OK");
  EXPECT_EQ(Version(pair.master), v);
}

}  // namespace
}  // namespace rl::test

// Policy text an earlier version wrote into a snapshot keeps its meaning: a window, BLOCK or LEASE
// without a unit was milliseconds, and such a snapshot still loads that way, while the same text
// typed today is refused with the fix in the message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "resp_client.h"
#include "rl/limiter.h"
#include "server_process.h"
#include "snapshot_format.h"
#include "test_files.h"

namespace rl::test {
namespace {

TEST(LegacyPolicyTextTest, SnapshotPolicyWithBareWindowsLoadsAsMilliseconds) {
  const rl_test::TempDir temp("rl-legacy-policy");
  ASSERT_FALSE(temp.path().empty());
  const std::string dir = temp.path(), file = dir + "/state.rlsnap";
  {
    // The fixture: an empty engine and two runtime policies in the text earlier versions took.
    rl::Limiter empty;
    std::string engine, prefix, suffix;
    ASSERT_TRUE(empty.ExportState(&engine).ok());
    const int64_t wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
    rl::server::EncodeSnapshot(
        wall_ms, 0,
        {{"old", "TOKEN_BUCKET 10 60000 BLOCK 5000", true},
         {"lease", "CONCURRENCY 2 LEASE 30000 FIXED_WINDOW 5 3600000", true}},
        engine, &prefix, &suffix);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << prefix << engine << suffix;
  }
  {
    // --snapshot-strict: a file that does not load stops the server instead of starting empty.
    ServerProcess server({"--threads", "1", "--snapshot", file, "--snapshot-strict"});
    ASSERT_GT(server.port(), 0) << "the snapshot did not load";
    RespClient c(server.port());
    EXPECT_EQ(c.Call({"RL.POLICY", "GET", "old"}).str, "TOKEN_BUCKET 10 1m BLOCK 5s");
    EXPECT_EQ(c.Call({"RL.POLICY", "GET", "lease"}).str,
              "CONCURRENCY 2 LEASE 30s FIXED_WINDOW 5 1h");
    // The same text typed today.
    EXPECT_EQ(c.Call({"RL.POLICY", "SET", "new", "TOKEN_BUCKET", "10", "60000"}).str,
              "ERR window '60000' needs a unit: 60000s, 1m, 250ms");
    EXPECT_EQ(c.Call({"RL.CHECK", "k", "TOKEN_BUCKET", "10", "60"}).str,
              "ERR window '60' needs a unit: 60s, 1m, 250ms");
    EXPECT_EQ(server.Terminate(), 0);
  }
}

}  // namespace
}  // namespace rl::test

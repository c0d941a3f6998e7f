// Snapshot counts under concurrent writes: the states a save reports (INFO
// snapshot_last_save_keys, the file's header) are the states it wrote, so a restart loads exactly
// that many ("loaded 875255 of 870591 states" was a count taken before the export while checks
// kept adding keys).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "resp_client.h"
#include "server_process.h"
#include "test_files.h"

namespace rl::test {
namespace {

int64_t Field(const std::string& info, const std::string& field) {
  size_t at = info.find("\n" + field + ":");
  if (at == std::string::npos) return -1;
  return std::stoll(info.substr(at + field.size() + 2));
}

// Pipelines RL.CHECK on keys prefix0..prefix(n-1) with an hour-long window (nothing refills
// before the test ends) and reads the replies; false when one did not come.
bool CheckKeys(RespClient& c, const std::string& prefix, int n) {
  std::string batch;
  for (int i = 0; i < n; ++i) {
    batch +=
        RespClient::Encode({"RL.CHECK", prefix + std::to_string(i), "FIXED_WINDOW", "5", "1h"});
  }
  if (!c.SendRaw(batch)) return false;
  for (int i = 0; i < n; ++i) {
    if (c.Read().type != '*') return false;
  }
  return true;
}

TEST(SnapshotCountsTest, SavedCountIsWhatALoadFindsUnderConcurrentWrites) {
  const rl_test::TempDir temp("rl-snapshot-counts");
  ASSERT_FALSE(temp.path().empty());
  const std::string dir = temp.path(), file = dir + "/state.rlsnap";
  const std::vector<std::string> flags = {"--threads",           "2", "--snapshot", file,
                                          "--snapshot-interval", "1h"};
  int64_t saved = 0;
  {
    ServerProcess server(flags);
    ASSERT_GT(server.port(), 0);
    RespClient admin(server.port());
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(CheckKeys(admin, "base" + std::to_string(i) + ":", 10000));
    }

    // Two writers add fresh keys while the saves run.
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w) {
      writers.emplace_back([&, w] {
        RespClient c(server.port());
        for (int round = 0; !stop; ++round) {
          if (!CheckKeys(c, "w" + std::to_string(w) + ":" + std::to_string(round) + ":", 500)) {
            break;  // the server was killed
          }
        }
      });
    }
    std::string info;
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(admin.Call({"SAVE"}).str, "OK");
      info = admin.Call({"INFO", "persistence"}).str;
    }
    saved = Field(info, "snapshot_last_save_keys");
    // The last SAVE's file is the one that counts: no save after it (kill -9, 1 h interval).
    stop = true;
    server.Signal(SIGKILL);
    for (auto& t : writers) t.join();
    server.Wait(10000);
  }
  ASSERT_GT(saved, 200000);
  ServerProcess again(flags);
  ASSERT_GT(again.port(), 0);
  RespClient c(again.port());
  std::string info = c.Call({"INFO", "persistence"}).str;
  EXPECT_NE(info.find("snapshot_load_status:ok"), std::string::npos) << info;
  EXPECT_EQ(Field(info, "snapshot_load_file_keys"), saved) << "the file holds what was reported";
  EXPECT_EQ(Field(info, "snapshot_load_keys"), saved) << "and all of it loads (nothing refilled)";
  EXPECT_EQ(c.Call({"DBSIZE"}).integer, saved);
  EXPECT_EQ(again.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

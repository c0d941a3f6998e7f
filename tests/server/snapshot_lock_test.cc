// One snapshot file, one server: a second rl-server on the same --snapshot refuses to start and
// names the holder's pid; the file is free again once the holder exits; temp files an
// interrupted save left are removed at start, and saves never leave one behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "resp_client.h"
#include "server_process.h"
#include "test_files.h"

namespace rl::test {
namespace {

class SnapshotLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temp_.path().empty());
    dir_ = temp_.path();
    file_ = dir_ + "/state.rlsnap";
  }

  std::vector<std::string> TempFiles() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      std::string name = e.path().filename().string();
      if (name.find(".tmp") != std::string::npos) out.push_back(name);
    }
    return out;
  }

  const rl_test::TempDir temp_{"rl-snapshot-lock-test"};
  std::string dir_;
  std::string file_;
};

TEST_F(SnapshotLockTest, ASecondServerOnTheSameFileRefusesToStartNamingTheHolder) {
  ServerProcess first({"--snapshot", file_, "--snapshot-interval", "20ms"});
  ASSERT_GT(first.port(), 0);
  RespClient c(first.port());
  ASSERT_EQ(c.Call({"RL.CHECK", "k", "GCRA", "5", "1h"}).Ints()[0], 1);

  const std::string log = dir_ + "/second.log";
  ServerOptions options;
  options.quiet = false;
  options.stderr_path = log;
  ServerProcess second({"--snapshot", file_}, options);
  EXPECT_EQ(second.port(), 0) << "a second server started on the same snapshot file";
  EXPECT_EQ(second.Wait(10000), 1);
  const std::string err = rl_test::ReadFile(log);
  EXPECT_NE(err.find("in use by another rl-server"), std::string::npos) << err;
  EXPECT_NE(err.find("pid " + std::to_string(first.pid())), std::string::npos) << err;

  // The first server is untouched and saves as before.
  ASSERT_EQ(c.Call({"SAVE"}).str, "OK");
  EXPECT_EQ(first.Terminate(), 0);
  EXPECT_TRUE(TempFiles().empty()) << TempFiles()[0];

  // Free again once the holder is gone (the lock file stays; the lock does not).
  ServerProcess third({"--snapshot", file_});
  EXPECT_GT(third.port(), 0);
  EXPECT_EQ(third.Terminate(), 0);
}

TEST_F(SnapshotLockTest, TempFilesOfAnInterruptedSaveAreRemovedAtStart) {
  std::ofstream(file_ + ".tmp") << "left over by an older version's crash";
  std::ofstream(file_ + ".tmp.a1B2c3") << "left over by a crash mid-write";
  std::ofstream(dir_ + "/other.tmp") << "not ours";
  std::ofstream(file_ + ".tmp.json") << "not a temp file of a save";
  ServerProcess server({"--snapshot", file_});
  ASSERT_GT(server.port(), 0);
  std::vector<std::string> left = TempFiles();
  std::sort(left.begin(), left.end());
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0], "other.tmp");
  EXPECT_EQ(left[1], "state.rlsnap.tmp.json");
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

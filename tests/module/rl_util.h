// Helpers shared by the rl.so tests (tests/module/rl_*_test.cc): server options that load rl.so,
// INFO rl counters, reply checks, and forged state encodings for the bad-input tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "redis_harness.h"

namespace rl::test {

// Path of the rl.so under test (the build tree's).
std::string RlModulePath();

// Options that load rl.so; `load_args` follow the path ("POLICIES /path/rl.toml").
RedisOptions RlOptions(const std::string& load_args = "");

// One counter of INFO rl ("rl_<name>:N"), -1 when absent.
long long RlStat(RedisServer& server, const std::string& name);

// A test fixture: one redis-server with rl.so per test suite (tests/module/CMakeLists.txt runs
// such binaries as one ctest test, so the suite's tests really share it), emptied before each
// test, checked alive after it.
class RlServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!RedisAvailable()) return;
    server_ = new RedisServer(RlOptions());
    started_ = static_cast<bool>(server_->Start());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!RedisAvailable()) GTEST_SKIP() << ServerName() << " or its cli not installed";
    ASSERT_TRUE(started_) << server_->LogTail();
    ASSERT_EQ(server_->Call({"FLUSHALL"}).str, "OK");  // when the binary runs every test at once
  }
  void TearDown() override {
    EXPECT_TRUE(server_->running()) << "redis-server died\n" << server_->LogTail();
  }
  int port() const { return server_->port(); }
  RedisServer& server() { return *server_; }

  static inline RedisServer* server_ = nullptr;
  static inline bool started_ = false;
};

// A temp file holding `text` (removed by the destructor).
class TempFile {
 public:
  explicit TempFile(const std::string& text, const std::string& suffix = ".toml");
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// "[1 5 4 0 200]" style text of a reply, for messages.
std::string Show(const Reply& reply);

// The five decision fields of an RL.CHECK / RL.PEEK reply in either protocol (RESP2 array,
// RESP3 map); empty when the reply is not a decision.
std::vector<int64_t> DecisionOf(const Reply& reply);

// The server's wall clock in ms from a TIME reply (seconds and microseconds). Seconds alone are
// up to 999 ms early: a forged state stamped with them can lose a run from a 1 s window.
int64_t TimeMs(const Reply& time);

// One entry of rl::KeyState's encoding (core/src/key_state.cc: version 1, little-endian), to
// forge RL.SETSTATE arguments and RESTORE payloads.
struct EncodedEntry {
  uint64_t scope = 0;  // 0 = inline limits
  uint8_t algorithm = 0;
  uint64_t window_ms = 1000;
  int64_t expiry_ms = 0;
  std::vector<int64_t> words;                     // two or three words
  std::vector<std::pair<int64_t, int64_t>> runs;  // sliding log: (time ms, count)
  bool log = false;
};
std::string EncodeState(const std::vector<EncodedEntry>& entries);

}  // namespace rl::test

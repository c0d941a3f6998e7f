// Issue 10 item 1 against the real rl-server: a pipelined flood of distinct keys at --max-keys
// must never free a key that is at its limit; when nothing is safe to evict, --overflow decides
// new keys and INFO counts them.
#include <gtest/gtest.h>

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "resp_client.h"
#include "server_process.h"

namespace rl::test {
namespace {

// "name:value" from an INFO reply; -1 when absent.
int64_t InfoField(const std::string& info, const std::string& name) {
  const size_t at = info.find("\r\n" + name + ":");
  if (at == std::string::npos) return -1;
  return std::strtoll(info.c_str() + at + name.size() + 3, nullptr, 10);
}

struct Case {
  const char* algorithm;
  // Longer than the hot key's, so the hot key is strictly the soonest to expire (the coarse
  // expiry would make same-window keys tie).
  const char* flood_window;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.algorithm << " flood " << c.flood_window; }

class KeyFloodTest : public ::testing::TestWithParam<Case> {};

TEST_P(KeyFloodTest, HotKeyAtItsLimitIsNeverAllowedAgain) {
  ServerProcess server({"--max-keys", "1000", "--threads", "1"});
  ASSERT_GT(server.port(), 0);
  RespClient hot(server.port());
  RespClient flood(server.port());
  ASSERT_TRUE(hot.connected() && flood.connected());
  const std::string algorithm = GetParam().algorithm;
  const std::vector<std::string> hot_check = {"RL.CHECK", "hot", algorithm, "10", "1m"};
  int allowed = 0;
  for (int i = 0; i < 10; ++i) allowed += hot.Call(hot_check).elements.at(0).integer;
  ASSERT_EQ(allowed, 10);

  // 40 pipelined batches of 500 new keys (20 times the bound), the hot key checked after each.
  constexpr int kBatches = 40, kBatch = 500;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int flood_allowed = 0, batches = 0;
  for (; batches < kBatches && std::chrono::steady_clock::now() < deadline; ++batches) {
    std::string pipeline;
    for (int i = 0; i < kBatch; ++i) {
      pipeline += RespClient::Encode({"RL.CHECK", "flood:" + std::to_string(batches * kBatch + i),
                                      algorithm, "10", GetParam().flood_window});
    }
    ASSERT_TRUE(flood.SendRaw(pipeline));
    for (int i = 0; i < kBatch; ++i) {
      Reply r = flood.Read();
      ASSERT_EQ(r.type, '*') << r.str;
      flood_allowed += r.elements.at(0).integer;
    }
    Reply r = hot.Call(hot_check);
    ASSERT_EQ(r.type, '*');
    allowed += r.elements.at(0).integer;
  }
  EXPECT_EQ(batches, kBatches);
  EXPECT_EQ(allowed, 10) << algorithm << " 10 1m was allowed beyond its limit";
  EXPECT_EQ(flood_allowed, batches * kBatch);
  Reply info = hot.Call({"INFO"});
  EXPECT_GT(InfoField(info.str, "evicted_keys"), 0) << "near-fresh flood states make room";
  EXPECT_LE(hot.Call({"DBSIZE"}).integer, 1000);
}

// Fills a one-shard store of 100 states with keys at their limit: nothing is safe to evict.
void FillWithLimitedKeys(RespClient& c) {
  std::string pipeline;
  for (int i = 0; i < 100; ++i) {
    pipeline +=
        RespClient::Encode({"RL.CHECK", "full:" + std::to_string(i), "FIXED_WINDOW", "1", "1h"});
  }
  ASSERT_TRUE(c.SendRaw(pipeline));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(c.Read().Ints().at(0), 1);
}

TEST(KeyOverflowTest, FailClosedDeniesNewKeysAndCountsThem) {
  ServerProcess server({"--max-keys", "100", "--overflow", "fail-closed"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  FillWithLimitedKeys(c);
  Reply r = c.Call({"RL.CHECK", "newcomer", "TOKEN_BUCKET", "10", "1m"});
  ASSERT_EQ(r.type, '*');
  const std::vector<int64_t> v = r.Ints();  // allowed, limit, remaining, retry, reset
  EXPECT_EQ(v.at(0), 0);
  EXPECT_EQ(v.at(1), 10);
  EXPECT_EQ(v.at(2), 0);
  EXPECT_GT(v.at(3), 3500 * 1000) << "until the first full key's hour ends";
  EXPECT_LE(v.at(3), 3600 * 1000 + 1024);
  EXPECT_EQ(c.Call({"DBSIZE"}).integer, 100);
  const std::string info = c.Call({"INFO"}).str;
  EXPECT_NE(info.find("overflow_mode:fail-closed\r\n"), std::string::npos) << info;
  EXPECT_EQ(InfoField(info, "rl_overflows"), 1);
  EXPECT_EQ(InfoField(info, "evicted_keys"), 0);
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(KeyOverflowTest, FailOpenIsTheDefaultAndBadValuesAreRefused) {
  ServerProcess server({"--max-keys", "100"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  FillWithLimitedKeys(c);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(c.Call({"RL.CHECK", "newcomer", "FIXED_WINDOW", "1", "1h"}).Ints().at(0), 1);
  }
  const std::string info = c.Call({"INFO"}).str;
  EXPECT_NE(info.find("overflow_mode:fail-open\r\n"), std::string::npos) << info;
  EXPECT_EQ(InfoField(info, "rl_overflows"), 3);
  EXPECT_EQ(server.Terminate(), 0);
  ServerProcess bad({"--overflow", "sideways"});
  EXPECT_EQ(bad.port(), 0) << "refused at start";
}

INSTANTIATE_TEST_SUITE_P(Algorithms, KeyFloodTest,
                         ::testing::Values(Case{"SLIDING_LOG", "2m"}, Case{"FIXED_WINDOW", "2m"},
                                           Case{"TOKEN_BUCKET", "1h"}),
                         [](const auto& info) { return std::string(info.param.algorithm); });

}  // namespace
}  // namespace rl::test

// What the real server says about itself: a deleted policy's statistics go with it (on every I/O
// thread, totals kept), INFO's per-policy lines are bounded (the busiest shown, the rest
// counted), RL.POLICY HELP answers with help lines, and CLIENT LIST lists every connected client
// of every I/O thread in Redis's format.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "resp_client.h"
#include "server_process.h"

namespace rl::test {
namespace {

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The value of `field:` in an INFO text, or "" when absent.
std::string Field(const std::string& info, const std::string& field) {
  size_t at = info.find("\n" + field + ":");
  if (at == std::string::npos) return "";
  at += field.size() + 2;
  return info.substr(at, info.find('\r', at) - at);
}

// Sends `commands` pipelined and reads every reply.
void Pipeline(RespClient& c, const std::vector<std::vector<std::string>>& commands) {
  std::string batch;
  for (const auto& cmd : commands) batch += RespClient::Encode(cmd);
  ASSERT_TRUE(c.SendRaw(batch));
  for (size_t i = 0; i < commands.size(); ++i) ASSERT_NE(c.Read().type, 'X') << i;
}

TEST(IntrospectionTest, DeletedPoliciesLeaveNoStatistics) {
  ServerProcess server({"--threads", "2"});
  ASSERT_GT(server.port(), 0);
  // Two clients: connections are handed out round-robin, so checks land on both I/O threads.
  RespClient a(server.port()), b(server.port());
  ASSERT_EQ(a.Call({"RL.POLICY", "SET", "keep", "GCRA", "10", "1s"}).str, "OK");
  ASSERT_EQ(a.Call({"RL.CHECK", "u", "POLICY", "keep"}).type, '*');
  const int kPolicies = 2000;
  for (int round = 0; round < kPolicies / 500; ++round) {
    std::vector<std::vector<std::string>> set, check, del;
    for (int i = round * 500; i < (round + 1) * 500; ++i) {
      std::string name = "gone" + std::to_string(i);
      set.push_back({"RL.POLICY", "SET", name, "GCRA", "10", "1s"});
      check.push_back({"RL.CHECK", "u", "POLICY", name});
      del.push_back({"RL.POLICY", "DEL", name});
    }
    Pipeline(a, set);
    Pipeline(a, check);
    Pipeline(b, check);
    Pipeline(b, del);
  }
  // Forgetting runs on each I/O thread after the DEL: poll.
  std::string stats;
  for (int i = 0; i < 100; ++i) {
    stats = a.Call({"INFO", "stats"}).str;
    if (Count(stats, "policy_gone") == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(Count(stats, "policy_gone"), 0u) << "lines of deleted policies";
  EXPECT_EQ(Field(stats, "policy_keep"),
            "checks=1,allowed=1,denied=0,shadow_denied=0,near_limit=0");
  // The server-wide totals still count every check that was made.
  EXPECT_EQ(Field(stats, "rl_checks"), std::to_string(1 + 2 * kPolicies));
  EXPECT_LT(stats.size(), 4096u);
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(IntrospectionTest, InfoShowsTheBusiestHundredPoliciesAndCountsTheRest) {
  ServerProcess server({"--threads", "1"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  const int kPolicies = 300;
  std::vector<std::vector<std::string>> set, check;
  for (int i = 0; i < kPolicies; ++i) {
    std::string name = "p" + std::to_string(1000 + i);
    set.push_back({"RL.POLICY", "SET", name, "GCRA", "10", "1s"});
    check.push_back({"RL.CHECK", "u", "POLICY", name});
  }
  Pipeline(c, set);
  Pipeline(c, check);
  // Five policies get a second check: they are the busiest and must be among the lines shown.
  for (int i : {7, 77, 150, 222, 299}) {
    ASSERT_EQ(c.Call({"RL.CHECK", "v", "POLICY", "p" + std::to_string(1000 + i)}).type, '*');
  }
  std::string stats = c.Call({"INFO", "stats"}).str;
  EXPECT_EQ(Count(stats, "\npolicy_p"), 100u);
  EXPECT_EQ(Field(stats, "policy_lines_omitted"), std::to_string(kPolicies - 100));
  for (int i : {7, 77, 150, 222, 299}) {
    EXPECT_EQ(Field(stats, "policy_p" + std::to_string(1000 + i)).substr(0, 9), "checks=2,") << i;
  }
  EXPECT_EQ(Field(stats, "rl_checks"), std::to_string(kPolicies + 5));
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

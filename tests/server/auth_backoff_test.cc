// Password guessing against the real server: a wrong AUTH (or HELLO ... AUTH) pauses its
// connection, growing to a second, and the tenth in a row closes it, so a pipeline of thousands
// of guesses followed by the right password never logs in; other clients, on the same I/O
// thread, are not slowed; INFO counts the failures and the closes.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "resp_client.h"
#include "server_process.h"

namespace rl::test {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MillisSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

std::string InfoField(RespClient& c, const std::string& field) {
  std::string info = c.Call({"INFO", "stats"}).str;
  size_t pos = info.find(field + ":");
  if (pos == std::string::npos) return "";
  size_t start = pos + field.size() + 1;
  return info.substr(start, info.find("\r\n", start) - start);
}

TEST(AuthBackoffTest, APipelineOfGuessesNeverLogsInAndOthersAreNotSlowed) {
  // One I/O thread: a pause that blocked it would show in the other client's latency.
  ServerProcess server({"--requirepass", "secret", "--threads", "1"});
  ASSERT_GT(server.port(), 0);
  RespClient other(server.port());
  ASSERT_EQ(other.Call({"AUTH", "secret"}).str, "OK");

  RespClient guesser(server.port(), 20000);
  std::string pipeline;
  for (int i = 0; i < 5000; ++i)
    pipeline += RespClient::Encode({"AUTH", "guess" + std::to_string(i)});
  pipeline += RespClient::Encode({"AUTH", "secret"});
  pipeline += RespClient::Encode({"PING"});
  const auto start = Clock::now();
  // The server stops reading while it pauses, so the send blocks once the socket buffers fill;
  // it ends with an error when the server closes the connection.
  std::thread sender([&] { guesser.SendRaw(pipeline); });

  int wrong = 0;
  int64_t other_total_ms = 0;
  for (;;) {
    Reply r = guesser.Read();
    if (r.closed()) break;
    ASSERT_TRUE(r.is_error()) << "logged in after " << wrong << " wrong guesses: " << r.str;
    ASSERT_EQ(r.str.rfind("WRONGPASS", 0), 0u) << r.str;
    ++wrong;
    ASSERT_LE(wrong, 10) << "the connection should have been closed";
    // While the guesser waits out its pause, the other client is answered at once.
    const auto ping = Clock::now();
    ASSERT_EQ(other.Call({"PING"}).str, "PONG");
    other_total_ms += MillisSince(ping);
  }
  const int64_t elapsed = MillisSince(start);
  sender.join();
  EXPECT_EQ(wrong, 10);
  // 100 + 200 + 400 + 800 ms, then 1 s for each of the other six.
  EXPECT_GE(elapsed, 7000) << "guesses were answered too fast";
  // Had a pause held the thread, each PING would have waited most of one (6.5 s in all).
  EXPECT_LT(other_total_ms, 2500) << "another client waited for the guesser's pauses";
  EXPECT_EQ(InfoField(other, "auth_failures"), "10");
  EXPECT_EQ(InfoField(other, "acl_access_denied_auth"), "10");
  EXPECT_EQ(InfoField(other, "auth_failure_disconnections"), "1");
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(AuthBackoffTest, ATypoCostsAPauseAndTheRightPasswordResetsTheCount) {
  ServerProcess server({"--requirepass", "secret"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  auto start = Clock::now();
  EXPECT_EQ(c.Call({"AUTH", "secert"}).str.rfind("WRONGPASS", 0), 0u);
  EXPECT_GE(MillisSince(start), 100);
  EXPECT_EQ(c.Call({"HELLO", "3", "AUTH", "default", "nope"}).str.rfind("WRONGPASS", 0), 0u);
  EXPECT_EQ(c.Call({"AUTH", "secret"}).str, "OK");
  // Nine more wrong ones in a row do not close the connection: the count started over.
  for (int i = 0; i < 9; ++i) EXPECT_TRUE(c.Call({"AUTH", "wrong"}).is_error());
  EXPECT_EQ(c.Call({"PING"}).str, "PONG") << "still authenticated and open";
  EXPECT_EQ(InfoField(c, "auth_failures"), "11");
  EXPECT_EQ(InfoField(c, "auth_failure_disconnections"), "0");
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

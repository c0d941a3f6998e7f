// Shutdown of the real server while clients do not read their replies: SIGTERM and SIGINT exit 0
// once the grace period has passed (this used to crash with SIGSEGV when the I/O contexts were
// torn down after the connection list), and a second SIGTERM during the grace period closes the
// remaining clients at once, saves the snapshot and exits 1.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "resp_client.h"
#include "server_process.h"
#include "test_files.h"

namespace rl::test {
namespace {

using Clock = std::chrono::steady_clock;

// Connects `n` clients that each pipeline ~8 MB of ECHO replies and never read them, so the
// server's writes to them stay pending (the replies stay under the 64 MB output limit).
std::vector<std::unique_ptr<RespClient>> StuckClients(int port, int n) {
  std::string batch;
  const std::string payload(1000, 'x');
  for (int i = 0; i < 8000; ++i) batch += RespClient::Encode({"ECHO", payload});
  std::vector<std::unique_ptr<RespClient>> clients;
  for (int i = 0; i < n; ++i) {
    auto c = std::make_unique<RespClient>(port);
    int small = 4096;
    setsockopt(c->fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    // Only as much as the server takes in before its backpressure stops reading; on a loaded
    // machine that is less than the whole batch, and the send then times out (fine: the server
    // holds replies this client never reads either way).
    c->SendRaw(batch);
    clients.push_back(std::move(c));
  }
  // A client that reads proves the commands above were taken in (connections are handed out
  // round-robin, so with n >= threads every I/O thread holds a stuck one).
  RespClient probe(port);
  EXPECT_EQ(probe.Call({"PING"}).str, "PONG");
  return clients;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A short grace period (the default is 5 s): the path is the same, the wait shorter.
TEST(ShutdownTest, SigtermWithNonReadingClientsExitsZeroAfterTheGracePeriod) {
  ServerProcess server({"--threads", "2", "--shutdown-grace", "500ms"});
  ASSERT_GT(server.port(), 0);
  auto clients = StuckClients(server.port(), 3);
  auto start = Clock::now();
  // -1 would be a crash (a signal) or a hang.
  EXPECT_EQ(server.Terminate(30000), 0);
  EXPECT_GE(SecondsSince(start), 0.45) << "the grace period let the clients read";
}

TEST(ShutdownTest, SigintWithNonReadingClientsExitsZero) {
  ServerProcess server({"--threads", "2", "--shutdown-grace", "300ms"});
  ASSERT_GT(server.port(), 0);
  auto clients = StuckClients(server.port(), 2);
  server.Signal(SIGINT);
  EXPECT_EQ(server.Wait(30000), 0);
}

TEST(ShutdownTest, SecondSigtermDuringTheGracePeriodExitsPromptlyAfterSaving) {
  const rl_test::TempDir temp("rl-shutdown-test");
  ASSERT_FALSE(temp.path().empty());
  std::string dir = temp.path();
  std::string snapshot = dir + "/state.rlsnap";
  {
    ServerOptions logged;  // the log tells when the first SIGTERM has been taken
    logged.quiet = false;
    logged.stderr_path = dir + "/stderr.log";
    ServerProcess server({"--threads", "2", "--snapshot", snapshot}, logged);
    ASSERT_GT(server.port(), 0);
    RespClient c(server.port());
    ASSERT_EQ(c.Call({"RL.CHECK", "k", "FIXED_WINDOW", "5", "1h"}).Ints().at(0), 1);
    auto clients = StuckClients(server.port(), 3);
    auto start = Clock::now();
    server.Signal(SIGTERM);
    // The second signal must come during the grace period, not merge with the first.
    for (const auto deadline = Clock::now() + std::chrono::seconds(4);
         rl_test::ReadFile(logged.stderr_path).find("shutting down") == std::string::npos &&
         Clock::now() < deadline;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    server.Signal(SIGTERM);
    EXPECT_EQ(server.Wait(30000), 1) << "a cut-short shutdown exits 1";
    // Well before the 5 s grace period would have ended.
    EXPECT_LT(SecondsSince(start), 4.0);
  }
  EXPECT_TRUE(std::filesystem::exists(snapshot)) << "the state was saved anyway";
  ServerProcess again({"--threads", "2", "--snapshot", snapshot});
  ASSERT_GT(again.port(), 0);
  RespClient c(again.port());
  EXPECT_EQ(c.Call({"RL.PEEK", "k", "FIXED_WINDOW", "5", "1h"}).Ints().at(2), 3)
      << "the check before the shutdown was kept (5 - 1 taken - 1 peeked)";
  EXPECT_EQ(again.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

// rl-http-example as a real process on a free loopback port: 8 parallel requests against a limit
// of 5 give 5x200 and 3x429 with the headers, another API key is unaffected, /health is
// unlimited; with an unreachable remote limiter reads fail open (no rate-limit headers) and
// exports fail closed (503, not 429), logged once per outage; with --fallback-instances the outage
// is decided at this instance's share of the limits (real headers, 429 past it) until the server
// answers again; two instances on one rl-server share a single count, and a report holds a
// concurrency lease on it while it runs.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "http_client.h"
#include "server_process.h"
#include "subprocess.h"

namespace {

using std::chrono::milliseconds;

using rl_test::HttpReply;

HttpReply Request(int port, const std::string& method, const std::string& path,
                  const std::string& api_key = "") {
  return rl_test::HttpRequest(port, method, path, api_key);
}

// Fires `count` requests at once (one thread each); the replies in completion order.
std::vector<HttpReply> Parallel(const std::vector<int>& ports, int count, const std::string& path,
                                const std::string& api_key, const std::string& method = "GET") {
  std::vector<HttpReply> replies(count);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < count; ++i) {
    threads.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      replies[i] = Request(ports[i % ports.size()], method, path, api_key);
    });
  }
  go = true;
  for (std::thread& thread : threads) thread.join();
  return replies;
}

// Starts rl-http-example with `flags` on a free port; returns the port (0 on failure). Its log
// (stderr) goes to `log_path` when given.
int StartExample(rl_test::Subprocess& process, std::vector<std::string> flags,
                 const std::string& log_path = "") {
  std::vector<std::string> argv{RL_HTTP_EXAMPLE_PATH, "--port", "0"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  if (!process.Start(argv, log_path)) return 0;
  std::string line;
  if (!process.ReadLine(&line, milliseconds(5000))) return 0;
  // "rl-http-example listening on 127.0.0.1:PORT limiter=..."
  const size_t colon = line.rfind(':', line.find(" limiter="));
  return colon == std::string::npos ? 0 : std::atoi(line.c_str() + colon + 1);
}

void ExpectFiveOfEight(const std::vector<HttpReply>& replies) {
  int ok = 0;
  int limited = 0;
  for (const HttpReply& reply : replies) {
    if (reply.status == 200) ++ok;
    if (reply.status == 429) {
      ++limited;
      EXPECT_EQ(reply.body, R"({"error":"rate_limited"})");
      ASSERT_TRUE(reply.headers.count("retry-after"));
      EXPECT_GT(std::atoi(reply.headers.at("retry-after").c_str()), 0);
      EXPECT_EQ(reply.headers.at("x-ratelimit-remaining"), "0");
    }
    for (const char* name : {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset",
                             "ratelimit-policy", "ratelimit"}) {
      EXPECT_TRUE(reply.headers.count(name)) << name << " missing on " << reply.status;
    }
    if (reply.headers.count("x-ratelimit-limit")) {
      EXPECT_EQ(reply.headers.at("x-ratelimit-limit"), "5");
    }
  }
  EXPECT_EQ(ok, 5);
  EXPECT_EQ(limited, 3);
}

TEST(HttpExampleTest, LocalLimiterEightParallelRequestsFivePass) {
  rl_test::Subprocess example;
  const int port = StartExample(example, {"--limiter", "local"});
  ASSERT_GT(port, 0);

  ExpectFiveOfEight(Parallel({port}, 8, "/api/products", "key-A"));

  // Another API key, and an anonymous client (by IP), are unaffected.
  HttpReply other = Request(port, "GET", "/api/products", "key-B");
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.headers["x-ratelimit-remaining"], "4");
  EXPECT_EQ(other.headers["ratelimit-policy"], R"("products";q=5;w=60)");
  HttpReply anonymous = Request(port, "GET", "/api/products");
  EXPECT_EQ(anonymous.status, 200);

  // /health is unlimited and carries no rate-limit headers.
  for (int i = 0; i < 20; ++i) {
    HttpReply health = Request(port, "GET", "/health", "key-A");
    EXPECT_EQ(health.status, 200);
    EXPECT_FALSE(health.headers.count("x-ratelimit-limit"));
  }

  // Exports cost 10 of 30 per hour: three pass, the fourth is limited.
  std::vector<int> statuses;
  for (int i = 0; i < 4; ++i)
    statuses.push_back(Request(port, "POST", "/v1/exports", "key-C").status);
  EXPECT_EQ(statuses, (std::vector<int>{202, 202, 202, 429}));
}

std::string LogPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) /
          (name + "-" + std::to_string(::getpid()) + ".log"))
      .string();
}

// The lines of the example's log that contain `text`.
int CountLogLines(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  int count = 0;
  for (std::string line; std::getline(in, line);) count += line.find(text) != std::string::npos;
  return count;
}

void ExpectNoRateLimitHeaders(const HttpReply& reply) {
  for (const char* name : {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset",
                           "ratelimit-policy", "ratelimit"}) {
    EXPECT_FALSE(reply.headers.count(name)) << name << " on " << reply.status;
  }
}

TEST(HttpExampleTest, UnreachableRemoteLimiterReadsFailOpenExportsFailClosed) {
  rl_test::Subprocess example;
  const int dead_port = rl_test::FreeLoopbackPort();  // nothing listens there
  const std::string log = LogPath("unreachable");
  const int port = StartExample(example,
                                {"--limiter", "remote", "--server",
                                 "127.0.0.1:" + std::to_string(dead_port), "--timeout-ms", "50"},
                                log);
  ASSERT_GT(port, 0);
  const auto start = std::chrono::steady_clock::now();
  HttpReply read = Request(port, "GET", "/api/products", "key-A");
  HttpReply export_reply = Request(port, "POST", "/v1/exports", "key-A");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  // Fail-open: served, with no invented quota.
  EXPECT_EQ(read.status, 200);
  ExpectNoRateLimitHeaders(read);
  EXPECT_FALSE(read.headers.count("retry-after"));
  // Fail-closed: the limiter's outage is not the client's fault, so 503 with a distinct error.
  EXPECT_EQ(export_reply.status, 503);
  EXPECT_EQ(export_reply.body, R"({"error":"rate_limiter_unavailable"})");
  EXPECT_EQ(export_reply.headers["retry-after"], "1");
  ExpectNoRateLimitHeaders(export_reply);
  EXPECT_LT(elapsed, milliseconds(1000));

  // However many requests the outage decides, the log says so once.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Request(port, "GET", "/api/products", "key-B").status, 200);
    EXPECT_EQ(Request(port, "POST", "/v1/exports", "key-B").status, 503);
  }
  example.Kill();
  EXPECT_EQ(CountLogLines(log, "rate limiter unavailable"), 1);
  EXPECT_EQ(CountLogLines(log, "available again"), 0);
  std::filesystem::remove(log);
}

#ifdef RL_SERVER_PATH
// Starts rl-server on a port the kernel picks (so no other test can take it between choosing and
// binding); returns the port, 0 on failure.
int StartServer(rl_test::Subprocess& server) {
  rl::test::ServerOptions options;
  options.quiet = false;
  return rl::test::StartRlServer(server, RL_SERVER_PATH, {"--bind", "127.0.0.1"}, options);
}

TEST(HttpExampleTest, TwoRemoteInstancesShareOneCount) {
  rl_test::Subprocess server;
  const int server_port = StartServer(server);
  ASSERT_GT(server_port, 0);
  const std::vector<std::string> flags{"--limiter", "remote", "--server",
                                       "127.0.0.1:" + std::to_string(server_port)};
  rl_test::Subprocess a;
  rl_test::Subprocess b;
  const int port_a = StartExample(a, flags);
  const int port_b = StartExample(b, flags);
  ASSERT_GT(port_a, 0);
  ASSERT_GT(port_b, 0);

  ExpectFiveOfEight(Parallel({port_a, port_b}, 8, "/api/products", "key-A"));
  HttpReply other = Request(port_b, "GET", "/api/products", "key-B");
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.headers["x-ratelimit-remaining"], "4");
}

// Issue 16: POST /v1/reports holds a lease on rl-server (CONCURRENCY 3) while the report is
// built: of 4 parallel reports split over two instances, 3 run and 1 gets a 429 naming the
// concurrency limit; once they are done their leases are released, so the next one runs.
TEST(HttpExampleTest, ReportsHoldALeaseOnTheServerWhileTheyRun) {
  rl_test::Subprocess server;
  const int server_port = StartServer(server);
  ASSERT_GT(server_port, 0);
  // Long enough that all four are in flight together even on a loaded machine.
  const std::vector<std::string> flags{
      "--limiter",    "remote", "--server",    "127.0.0.1:" + std::to_string(server_port),
      "--timeout-ms", "2000",   "--report-ms", "1500"};
  rl_test::Subprocess a;
  rl_test::Subprocess b;
  const int port_a = StartExample(a, flags);
  const int port_b = StartExample(b, flags);
  ASSERT_GT(port_a, 0);
  ASSERT_GT(port_b, 0);

  int ok = 0;
  int limited = 0;
  for (HttpReply& reply : Parallel({port_a, port_b}, 4, "/v1/reports", "key-A", "POST")) {
    if (reply.status == 200) ++ok;
    if (reply.status == 429) {
      ++limited;
      EXPECT_EQ(reply.headers["x-ratelimit-limit"], "3");  // the slots, not the 20 per hour
      EXPECT_EQ(reply.headers["x-ratelimit-remaining"], "0");
    }
  }
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(limited, 1);
  HttpReply next = Request(port_b, "POST", "/v1/reports", "key-A");
  EXPECT_EQ(next.status, 200);  // all three leases were released when their requests ended
  EXPECT_EQ(next.headers["x-ratelimit-limit"], "3");
}

TEST(HttpExampleTest, OutageEpisodeEndsWhenTheServerAnswersAgain) {
  const int server_port = rl_test::FreeLoopbackPort();
  const std::string log = LogPath("episode");
  rl_test::Subprocess example;
  const int port = StartExample(
      example, {"--limiter", "remote", "--server", "127.0.0.1:" + std::to_string(server_port)},
      log);
  ASSERT_GT(port, 0);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Request(port, "POST", "/v1/exports", "key-A").status, 503);

  rl_test::Subprocess server;
  ASSERT_TRUE(
      server.Start({RL_SERVER_PATH, "--port", std::to_string(server_port), "--bind", "127.0.0.1"}));
  ASSERT_TRUE(rl_test::WaitForPort(server_port, milliseconds(5000)));
  // The client reconnects after its back-off (100 ms); poll until a request is answered.
  HttpReply reply;
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(5000);
  while (std::chrono::steady_clock::now() < deadline) {
    reply = Request(port, "POST", "/v1/exports", "key-A");
    if (reply.status != 503) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(reply.status, 202);
  EXPECT_EQ(reply.headers["x-ratelimit-remaining"], "20");
  example.Kill();
  EXPECT_EQ(CountLogLines(log, "rate limiter unavailable"), 1);
  EXPECT_EQ(CountLogLines(log, "rate limiter available again after"), 1);
  std::filesystem::remove(log);
}

// Issue 16: --fallback-instances 2 with rl-server down: this instance's share decides (products
// 5 per minute / 2 = 2, real headers, then 429; exports 30 per hour / 2 = 15, so one export of
// cost 10 passes, then 429 instead of the failure mode's 503). Once the server is up it decides
// again, and the log has one line for the outage, naming the fallback, and one for its end.
TEST(HttpExampleTest, FallbackDecidesAtThisInstancesShareWhileTheServerIsDown) {
  const int server_port = rl_test::FreeLoopbackPort();
  const std::string log = LogPath("fallback");
  rl_test::Subprocess example;
  const int port =
      StartExample(example,
                   {"--limiter", "remote", "--server", "127.0.0.1:" + std::to_string(server_port),
                    "--fallback-instances", "2"},
                   log);
  ASSERT_GT(port, 0);
  std::vector<int> statuses;
  for (int i = 0; i < 3; ++i) {
    HttpReply reply = Request(port, "GET", "/api/products", "key-A");
    statuses.push_back(reply.status);
    EXPECT_EQ(reply.headers["x-ratelimit-limit"], "2");
    EXPECT_EQ(reply.headers["x-ratelimit-remaining"], std::to_string(std::max(0, 1 - i)));
    EXPECT_EQ(reply.headers["ratelimit-policy"], R"("products";q=2;w=60)");
    if (reply.status == 429) {
      EXPECT_GT(std::atoi(reply.headers["retry-after"].c_str()), 0);
    }
  }
  EXPECT_EQ(statuses, (std::vector<int>{200, 200, 429}));
  EXPECT_EQ(Request(port, "POST", "/v1/exports", "key-A").status, 202);
  HttpReply export_reply = Request(port, "POST", "/v1/exports", "key-A");
  EXPECT_EQ(export_reply.status, 429);
  EXPECT_EQ(export_reply.body, R"({"error":"rate_limited"})");

  rl_test::Subprocess server;
  ASSERT_TRUE(
      server.Start({RL_SERVER_PATH, "--port", std::to_string(server_port), "--bind", "127.0.0.1"}));
  ASSERT_TRUE(rl_test::WaitForPort(server_port, milliseconds(5000)));
  HttpReply reply;
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(5000);
  while (std::chrono::steady_clock::now() < deadline) {
    reply = Request(port, "GET", "/api/products", "key-B");
    if (reply.headers["x-ratelimit-limit"] == "5") break;  // the server's limit, not the share
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.headers["x-ratelimit-limit"], "5");
  EXPECT_EQ(reply.headers["x-ratelimit-remaining"], "4");
  example.Kill();
  EXPECT_EQ(CountLogLines(log, "rate limiter unavailable"), 1);
  EXPECT_EQ(CountLogLines(log, "the local fallback decides at each policy's limits / 2"), 1);
  EXPECT_EQ(CountLogLines(log, "rate limiter available again after"), 1);
  EXPECT_EQ(CountLogLines(log, "the local fallback decided"), 1);
  std::filesystem::remove(log);
}
#endif

}  // namespace

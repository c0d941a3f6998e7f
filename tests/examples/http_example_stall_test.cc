// rl-http-example with a remote limiter whose rl-server is stopped (SIGSTOP: it still accepts
// connections, it answers nothing): each request must cost at most the limiter's timeout plus
// scheduling, however many clients wait at once, because no HTTP I/O thread waits for the
// limiter. 48 keep-alive clients against 4 I/O threads and a 50 ms timeout: a service whose
// handlers wait for the limiter queues requests behind the blocked threads (hundreds of ms).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server_process.h"
#include "subprocess.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

#ifdef RL_SERVER_PATH

int StartServer(rl_test::Subprocess& server) {
  rl::test::ServerOptions options;
  options.quiet = false;
  return rl::test::StartRlServer(server, RL_SERVER_PATH, {"--bind", "127.0.0.1"}, options);
}

int StartExample(rl_test::Subprocess& process, const std::vector<std::string>& flags) {
  std::vector<std::string> argv{RL_HTTP_EXAMPLE_PATH, "--port", "0"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  if (!process.Start(argv, std::string())) return 0;
  std::string line;
  if (!process.ReadLine(&line, milliseconds(5000))) return 0;
  const size_t colon = line.rfind(':', line.find(" limiter="));
  return colon == std::string::npos ? 0 : std::atoi(line.c_str() + colon + 1);
}

// One keep-alive HTTP/1.1 connection (5 s receive timeout, so a hung service fails the test
// instead of hanging it).
class KeepAlive {
 public:
  explicit KeepAlive(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Close();
  }
  ~KeepAlive() { Close(); }

  // GET `path`; the status, or 0 when the connection failed.
  int Get(const std::string& path, const std::string& api_key) {
    if (fd_ < 0) return 0;
    const std::string request =
        "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Api-Key: " + api_key + "\r\n\r\n";
    if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      return 0;
    }
    std::string in;
    size_t end = std::string::npos;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
      if (!Read(&in)) return 0;
    }
    size_t length = 0;
    const size_t at = in.find("Content-Length: ");
    if (at != std::string::npos && at < end)
      length = std::strtoul(in.c_str() + at + 16, nullptr, 10);
    while (in.size() < end + 4 + length) {
      if (!Read(&in)) return 0;
    }
    last_ = in;
    return in.size() > 12 ? std::atoi(in.c_str() + 9) : 0;
  }
  const std::string& last() const { return last_; }

 private:
  bool Read(std::string* in) {
    char buffer[4096];
    const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    if (n <= 0) return false;
    in->append(buffer, static_cast<size_t>(n));
    return true;
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
  std::string last_;  // the last response
};

TEST(HttpExampleStallTest, StoppedServerCostsEachRequestAtMostTheTimeout) {
  rl_test::Subprocess server;
  const int server_port = StartServer(server);
  ASSERT_GT(server_port, 0);
  rl_test::Subprocess example;
  const int port = StartExample(
      example, {"--limiter", "remote", "--server", "127.0.0.1:" + std::to_string(server_port),
                "--timeout-ms", "50", "--threads", "4"});
  ASSERT_GT(port, 0);
  {
    KeepAlive warm(port);
    // No such route (404), under the default policy: the limiter answered (rate-limit headers).
    ASSERT_EQ(warm.Get("/api/stall", "warm"), 404);
    ASSERT_NE(warm.last().find("X-RateLimit-Limit"), std::string::npos) << warm.last();
  }

  constexpr int kClients = 48;
  // Each request's start (relative to the stop) and latency.
  struct Sample {
    Clock::time_point start;
    Clock::duration latency;
  };
  std::mutex mu;
  std::vector<Sample> samples;
  std::atomic<bool> running{true};
  std::atomic<int> failures{0};
  // Requests answered, and those of them started in the measured part of the stall (from 100 ms
  // after the stop on): the stall lasts until enough were measured, however slow the machine.
  std::atomic<int> answered{0}, measured{0};
  std::atomic<Clock::rep> measure_from{Clock::time_point::max().time_since_epoch().count()};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      KeepAlive connection(port);
      std::vector<Sample> mine;
      while (running.load()) {
        const Clock::time_point start = Clock::now();
        // The default policy (fail-open): a stalled limiter lets it through (to a 404).
        if (connection.Get("/api/stall", "client-" + std::to_string(i)) == 0) {
          failures.fetch_add(1);
          break;
        }
        mine.push_back({start, Clock::now() - start});
        answered.fetch_add(1);
        if (start.time_since_epoch().count() >= measure_from.load()) measured.fetch_add(1);
      }
      std::lock_guard<std::mutex> lock(mu);
      samples.insert(samples.end(), mine.begin(), mine.end());
    });
  }
  // Load before the stall (not measured): every client has had an answer.
  const auto wait_for = [&](const std::atomic<int>& count, int want) {
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
    while (count.load() < want && failures.load() == 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
  };
  wait_for(answered, 2 * kClients);
  ASSERT_EQ(::kill(server.pid(), SIGSTOP), 0);
  const Clock::time_point stopped = Clock::now();
  measure_from = (stopped + milliseconds(100)).time_since_epoch().count();
  // 400 requests started in the stall (the check below wants 100), and at least half a second of
  // it: many rounds of the 50 ms timeout.
  wait_for(measured, 400);
  while (Clock::now() < stopped + milliseconds(500)) std::this_thread::sleep_for(milliseconds(10));
  const Clock::time_point resumed = Clock::now();
  ::kill(server.pid(), SIGCONT);
  running = false;
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(failures.load(), 0);

  // Requests started during the stall, the first timeout excepted (requests that were already
  // waiting for a live connection when it stopped).
  std::vector<double> stalled_ms;
  for (const Sample& sample : samples) {
    if (sample.start >= stopped + milliseconds(100) && sample.start < resumed) {
      stalled_ms.push_back(std::chrono::duration<double, std::milli>(sample.latency).count());
    }
  }
  ASSERT_GE(stalled_ms.size(), 100u) << "too few requests during the stall";
  std::sort(stalled_ms.begin(), stalled_ms.end());
  const double p50 = stalled_ms[stalled_ms.size() / 2];
  const double p99 = stalled_ms[stalled_ms.size() * 99 / 100];
  std::printf("stalled: %zu requests, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", stalled_ms.size(),
              p50, p99, stalled_ms.back());
  // At most the 50 ms timeout plus scheduling noise on a busy 2-core machine; a service whose
  // I/O threads wait on the limiter queues 48 clients behind 4 threads (p99 ~ 500 ms).
  EXPECT_LE(p99, 150.0);
}

#endif  // RL_SERVER_PATH

}  // namespace

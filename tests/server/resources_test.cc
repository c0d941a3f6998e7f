// The real server at the edge of its resources: a low open-file limit lowers maxclients at start
// (or refuses to start); running out of descriptors makes the accept loops wait instead of
// spinning at 100% CPU, and clients are served again once descriptors free up.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "resp_client.h"
#include "server_process.h"
#include "test_files.h"

namespace rl::test {
namespace {

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// User + system CPU seconds the process has used (/proc/<pid>/stat fields 14 and 15).
double CpuSeconds(pid_t pid) {
  std::string stat = rl_test::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream in(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long ticks = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i >= 14) ticks += std::stol(field);
  }
  return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

size_t OpenFds(pid_t pid) {
  size_t n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

// GET /metrics with "Connection: close"; the HTTP status, 0 when the server closed first.
int ScrapeStatus(int port) {
  RespClient conn(port);  // only for its connected socket
  if (!conn.connected()) return 0;
  conn.SendRaw("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  std::string raw;
  char buf[65536];
  timeval tv{5, 0};
  setsockopt(conn.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  while (true) {
    ssize_t n = recv(conn.fd(), buf, sizeof(buf), 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  if (raw.rfind("HTTP/1.1 ", 0) != 0) return 0;
  return std::atoi(raw.c_str() + 9);
}

std::string Info(int port, const std::string& section) {
  RespClient c(port);
  return c.Call({"INFO", section}).str;
}

class TempLog {
 public:
  TempLog() {
    char tmpl[] = "/tmp/rl-resources-test-XXXXXX";
    int fd = mkstemp(tmpl);
    close(fd);
    path_ = tmpl;
  }
  ~TempLog() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ResourcesTest, LowOpenFileLimitLowersMaxclientsAtStart) {
  TempLog log;
  ServerOptions options;
  options.quiet = false;
  options.stderr_path = log.path();
  options.nofile = 64;  // 2 threads reserve 32 + 2 * 4 descriptors: 24 clients fit
  ServerProcess server({"--threads", "2"}, options);
  ASSERT_GT(server.port(), 0);
  EXPECT_NE(Info(server.port(), "clients").find("maxclients:24\r\n"), std::string::npos);
  EXPECT_NE(rl_test::ReadFile(log.path()).find("maxclients lowered to 24"), std::string::npos)
      << rl_test::ReadFile(log.path());
  // Clients past the lowered maxclients get Redis's error instead of an accept that fails.
  std::vector<std::unique_ptr<RespClient>> clients;
  for (int i = 0; i < 24; ++i) {
    clients.push_back(std::make_unique<RespClient>(server.port()));
    ASSERT_EQ(clients.back()->Call({"PING"}).str, "PONG") << i;
  }
  RespClient extra(server.port());
  EXPECT_EQ(extra.Read().str, "ERR max number of clients reached");
  clients.clear();
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(ResourcesTest, OpenFileLimitTooLowForOneClientRefusesToStart) {
  ServerOptions options;
  options.quiet = false;
  options.nofile = 30;
  TempLog log;
  options.stderr_path = log.path();
  ServerProcess server({"--threads", "2"}, options);
  EXPECT_EQ(server.port(), 0);
  EXPECT_EQ(server.Wait(5000), 1);
  EXPECT_NE(rl_test::ReadFile(log.path()).find("open-file limit (ulimit -n) of 30 is too low"),
            std::string::npos)
      << rl_test::ReadFile(log.path());
}

TEST(ResourcesTest, OutOfDescriptorsTheAcceptLoopsWaitAndRecover) {
  TempLog log;
  ServerOptions options;
  options.quiet = false;
  options.stderr_path = log.path();
  int metrics_port = rl_test::FreeLoopbackPort();
  ServerProcess server({"--threads", "2", "--metrics-port", std::to_string(metrics_port)}, options);
  ASSERT_GT(server.port(), 0);
  // Leave the running server four spare descriptors (as if something else had taken the rest).
  rlim_t spare = OpenFds(server.pid()) + 4;
  rlimit lim{spare, spare};
  ASSERT_EQ(prlimit(server.pid(), RLIMIT_NOFILE, &lim, nullptr), 0);

  // More clients than fit: the kernel completes their handshakes into the backlog, the server's
  // accept fails with EMFILE; metrics scrapers too.
  std::vector<std::unique_ptr<RespClient>> clients;
  for (int i = 0; i < 30; ++i) clients.push_back(std::make_unique<RespClient>(server.port()));
  for (int i = 0; i < 8; ++i) clients.push_back(std::make_unique<RespClient>(metrics_port));
  // Both acceptors have run out of descriptors once each has logged it.
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       std::chrono::steady_clock::now() < deadline;) {
    const std::string logged = rl_test::ReadFile(log.path());
    if (Count(logged, "cannot accept clients") > 0 &&
        Count(logged, "cannot accept metrics scrapers") > 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  // Spinning on EMFILE burnt a whole core per acceptor (about 1 s of CPU per second); waiting
  // costs next to nothing. Generous bound for a loaded machine.
  double before = CpuSeconds(server.pid());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  double used = CpuSeconds(server.pid()) - before;
  EXPECT_LT(used, 0.1) << "CPU seconds in one second out of descriptors";
  std::printf("CPU out of descriptors: %.3f s in 1 s\n", used);
  std::string logged = rl_test::ReadFile(log.path());
  EXPECT_EQ(Count(logged, "cannot accept clients"), 1u) << logged;
  EXPECT_EQ(Count(logged, "cannot accept metrics scrapers"), 1u) << logged;

  // Descriptors free up: a new client is served (the backlog drains first).
  clients.clear();
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    RespClient c(server.port(), 2000);
    served = c.Call({"PING"}).str == "PONG";
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(served);
  std::string stats = Info(server.port(), "stats");
  EXPECT_EQ(stats.find("accept_resource_errors:0\r\n"), std::string::npos) << stats;
  EXPECT_NE(rl_test::ReadFile(log.path()).find("accepting clients again"), std::string::npos);
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(ResourcesTest, IdleConnectionsNeverLockOutAScrape) {
  int metrics_port = rl_test::FreeLoopbackPort();
  ServerProcess server({"--threads", "1", "--metrics-port", std::to_string(metrics_port)});
  ASSERT_GT(server.port(), 0);
  // More idle connections than the endpoint serves at once (64), none sending a request; before,
  // a scrape was closed unanswered until they timed out.
  std::vector<std::unique_ptr<RespClient>> idle;
  for (int i = 0; i < 80; ++i) {
    idle.push_back(std::make_unique<RespClient>(metrics_port));
    ASSERT_TRUE(idle.back()->connected());
  }
  // No wait needed: the kernel queues each scrape's connection behind the idle ones, so the
  // server accepts (and makes room among) all of them before it sees the scrape.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ScrapeStatus(metrics_port), 200) << i;
  // The oldest idle ones made room; the newest are still open.
  size_t closed = 0;
  for (auto& c : idle) {
    pollfd p{c->fd(), POLLIN, 0};
    if (poll(&p, 1, 0) == 1) ++closed;  // EOF is readable
  }
  EXPECT_GE(closed, 17u);  // the 16 past 64, and one for the first scrape
  EXPECT_LT(closed, idle.size());
  EXPECT_EQ(server.Terminate(), 0);
}

// A field of /proc/<pid>/status in kB, e.g. VmHWM (peak RSS).
int64_t StatusKb(pid_t pid, const std::string& field) {
  std::istringstream in(rl_test::ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

int64_t InfoField(int port, const std::string& section, const std::string& field) {
  std::string info = Info(port, section);
  size_t at = info.find(field + ":");
  return at == std::string::npos ? -1 : std::stoll(info.substr(at + field.size() + 1));
}

// Polls INFO up to 5 s until `field` equals `value` (a closed client is freed asynchronously).
bool EventuallyField(int port, const std::string& section, const std::string& field,
                     int64_t value) {
  for (int i = 0; i < 250; ++i) {
    if (InfoField(port, section, field) == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Sends the header of an ECHO with a `announced`-byte bulk, then up to `mb` MB of it; stops when
// the server closes. Returns the bytes sent.
size_t SendHalfBulk(int port, size_t announced, size_t mb) {
  RespClient c(port);
  std::string header = "*2\r\n$4\r\nECHO\r\n$" + std::to_string(announced) + "\r\n";
  if (!c.SendRaw(header)) return 0;
  const std::string chunk(1 << 20, 'x');
  size_t sent = 0;
  for (size_t i = 0; i < mb && c.SendRaw(chunk); ++i) sent += chunk.size();
  return sent;
}

TEST(ResourcesTest, HalfSentHugeBulksStayWithinTheInputMemoryCap) {
  // The attack: three clients with half-sent 300 MB bulks took RSS to 1.6 GB under
  // --max-memory 16mb. Large bulks allowed on purpose here; the server-wide cap must hold.
  ServerProcess server({"--threads", "2", "--max-memory", "16mb", "--proto-max-bulk-len", "512mb",
                        "--client-query-buffer-limit", "1gb", "--client-query-buffer-total",
                        "32mb"});
  ASSERT_GT(server.port(), 0);
  const int64_t base_kb = StatusKb(server.pid(), "VmHWM");
  std::vector<std::thread> attackers;
  std::vector<size_t> sent(3);
  for (int i = 0; i < 3; ++i) {
    attackers.emplace_back([&, i] { sent[i] = SendHalfBulk(server.port(), 300'000'000, 100); });
  }
  for (auto& t : attackers) t.join();
  const int64_t grown_mb = (StatusKb(server.pid(), "VmHWM") - base_kb) / 1024;
  std::printf("peak RSS growth with a 32 MB input cap: %lld MB\n",
              static_cast<long long>(grown_mb));
  // 32 MB of buffers plus allocator slack; without the cap each client held ~128 MB.
  EXPECT_LT(grown_mb, 80);
  for (size_t s : sent) EXPECT_LT(s, 100u << 20) << "every attacker was cut off";
  EXPECT_EQ(InfoField(server.port(), "stats", "client_query_buffer_limit_disconnections"), 3);
  // Only the INFO client's own 16 KB buffer is left.
  EXPECT_TRUE(EventuallyField(server.port(), "clients", "clients_query_buffer_bytes", 16384));
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(ResourcesTest, DefaultBulkLimitIs512KiB) {
  ServerProcess server;
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(InfoField(server.port(), "clients", "proto_max_bulk_len"), 512 * 1024);
  RespClient huge(server.port());
  huge.SendRaw("*2\r\n$4\r\nECHO\r\n$300000000\r\n");
  EXPECT_EQ(huge.Read().str, "ERR Protocol error: invalid bulk length");
  EXPECT_TRUE(huge.WaitClosed());
  RespClient ok(server.port());
  std::string value(512 * 1024, 'v');
  EXPECT_TRUE(ok.Call({"ECHO", value}).str == value);  // (no 512 KB value in a failure message)
  RespClient over(server.port());
  EXPECT_TRUE(over.Call({"ECHO", value + "v"}).str == "ERR Protocol error: invalid bulk length");
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(ResourcesTest, InputBuffersAreCountedAndOneClientIsCapped) {
  ServerProcess server({"--client-query-buffer-limit", "1mb"});
  ASSERT_GT(server.port(), 0);
  // The INFO client's buffer.
  EXPECT_TRUE(EventuallyField(server.port(), "clients", "clients_query_buffer_bytes", 16384));
  {
    // Half of a 400 KB bulk: the buffer grows to 512 KB and INFO says so.
    RespClient c(server.port());
    ASSERT_TRUE(c.SendRaw("*2\r\n$4\r\nECHO\r\n$400000\r\n" + std::string(300000, 'x')));
    bool counted = false;
    for (int i = 0; i < 100 && !counted; ++i) {
      counted = InfoField(server.port(), "clients", "clients_query_buffer_bytes") >= 512 * 1024;
      if (!counted) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(counted);
  }
  // Many bulks within the bulk limit, one command past the client's 1 MB: disconnected.
  RespClient big(server.port());
  std::string command = "*40\r\n$4\r\nECHO";
  const std::string bulk(100 * 1024, 'b');
  for (int i = 0; i < 39; ++i) command += "\r\n$" + std::to_string(bulk.size()) + "\r\n" + bulk;
  big.SendRaw(command);  // may fail part-way once the server closes
  EXPECT_TRUE(big.WaitClosed());
  EXPECT_EQ(InfoField(server.port(), "stats", "client_query_buffer_limit_disconnections"), 1);
  EXPECT_TRUE(EventuallyField(server.port(), "clients", "clients_query_buffer_bytes", 16384));
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

// Metrics of the real server: the Prometheus endpoint (--metrics-port) is scraped over a raw
// socket and its counters move with traffic (per-policy decisions, near-limit, shadow denials,
// keys, clients, latency histograms) by kind (inline, cl.throttle, policy); label values are
// escaped; INFO shows the same counters; policies named like internal kinds are kept apart; shadow
// policies from the config file and RL.POLICY SET allow, report shadow_denied in RESP3 and count.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "resp_client.h"
#include "server_process.h"

namespace rl::test {
namespace {

struct HttpResponse {
  int status = 0;
  std::string headers;
  std::string body;
};

// One HTTP/1.1 request with "Connection: close"; reads until the server closes.
HttpResponse Http(int port, const std::string& method, const std::string& target) {
  HttpResponse out;
  RespClient conn(port);  // only for its connected socket
  if (!conn.connected()) return out;
  std::string req =
      method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  conn.SendRaw(req);
  std::string raw;
  char buf[65536];
  timeval tv{5, 0};
  setsockopt(conn.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  while (true) {
    ssize_t n = recv(conn.fd(), buf, sizeof(buf), 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return out;
  out.status = std::atoi(raw.c_str() + 9);
  out.headers = raw.substr(0, end);
  out.body = raw.substr(end + 4);
  return out;
}

// "name{labels}" -> value, from the exposition text.
std::map<std::string, double> Parse(const std::string& body) {
  std::map<std::string, double> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.rfind(' ');
    out[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = std::filesystem::temp_directory_path() /
              ("rl-metrics-test-" + std::to_string(getpid()) + ".toml");
    std::ofstream(config_) << "[policies]\n"
                              "strict = \"FIXED_WINDOW 5 1h\"\n"
                              "trial = \"GCRA 1 1h SHADOW\"\n";
    metrics_port_ = rl_test::FreeLoopbackPort();
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--config", config_.string(), "--metrics-port", std::to_string(metrics_port_)});
    ASSERT_GT(server_->port(), 0);
  }
  void TearDown() override { std::filesystem::remove(config_); }

  std::map<std::string, double> Scrape() {
    HttpResponse r = Http(metrics_port_, "GET", "/metrics");
    EXPECT_EQ(r.status, 200);
    EXPECT_NE(r.headers.find("text/plain; version=0.0.4"), std::string::npos) << r.headers;
    last_body_ = r.body;
    return Parse(r.body);
  }

  std::filesystem::path config_;
  int metrics_port_ = 0;
  std::unique_ptr<ServerProcess> server_;
  std::string last_body_;
};

TEST_F(MetricsTest, CountersMoveWithTraffic) {
  auto before = Scrape();
  EXPECT_EQ(before.count("rl_checks_total{kind=\"policy\",policy=\"strict\"}"), 0u);
  EXPECT_EQ(before["rl_keys"], 0);
  for (const char* family :
       {"rl_checks_total counter", "rl_allowed_total counter", "rl_denied_total counter",
        "rl_shadow_denied_total counter", "rl_near_limit_total counter", "rl_keys gauge",
        "rl_memory_bytes gauge", "rl_evictions_total counter", "rl_overflows_total counter",
        "rl_connected_clients gauge", "rl_command_duration_seconds histogram",
        "rl_snapshot_saves_total counter"}) {
    EXPECT_NE(last_body_.find(std::string("# TYPE ") + family), std::string::npos) << family;
    std::string name(family, std::string_view(family).find(' '));
    EXPECT_NE(last_body_.find("# HELP " + name + " "), std::string::npos) << name;
  }

  RespClient c(server_->port());
  // strict: 5 allowed (only the fifth leaves less than 20% of 5: near the limit), 2 denied.
  for (int i = 0; i < 7; ++i) c.Call({"RL.CHECK", "tenant", "POLICY", "strict"});
  // trial (shadow, 1 per hour): 1 allowed, then 3 shadow denials that are still allowed.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(c.Call({"RL.CHECK", "tenant", "POLICY", "trial"}).Ints()[0], 1);
  }
  for (int i = 0; i < 3; ++i) c.Call({"RL.CHECK", "x", "GCRA", "10", "1m"});
  c.Call({"CL.THROTTLE", "cell", "0", "1", "60"});
  c.Call({"CL.THROTTLE", "cell", "0", "1", "60"});

  auto after = Scrape();
  EXPECT_EQ(after["rl_checks_total{kind=\"policy\",policy=\"strict\"}"], 7);
  EXPECT_EQ(after["rl_allowed_total{kind=\"policy\",policy=\"strict\"}"], 5);
  EXPECT_EQ(after["rl_denied_total{kind=\"policy\",policy=\"strict\"}"], 2);
  EXPECT_EQ(after["rl_near_limit_total{kind=\"policy\",policy=\"strict\"}"], 1);
  EXPECT_EQ(after["rl_shadow_denied_total{kind=\"policy\",policy=\"strict\"}"], 0);
  EXPECT_EQ(after["rl_checks_total{kind=\"policy\",policy=\"trial\"}"], 4);
  EXPECT_EQ(after["rl_allowed_total{kind=\"policy\",policy=\"trial\"}"], 4);
  EXPECT_EQ(after["rl_denied_total{kind=\"policy\",policy=\"trial\"}"], 0);
  EXPECT_EQ(after["rl_shadow_denied_total{kind=\"policy\",policy=\"trial\"}"], 3);
  EXPECT_EQ(after["rl_checks_total{kind=\"inline\"}"], 3);
  EXPECT_EQ(after["rl_checks_total{kind=\"cl.throttle\"}"], 2);
  EXPECT_EQ(after["rl_denied_total{kind=\"cl.throttle\"}"], 1);
  EXPECT_EQ(after["rl_keys"], 4);
  EXPECT_GT(after["rl_memory_bytes"], 0);
  EXPECT_EQ(after["rl_connected_clients"], 1);
  EXPECT_EQ(after["rl_policies"], 2);
  EXPECT_GE(after["rl_commands_processed_total"], 16);

  // Histograms: cumulative buckets, +Inf equals _count, and the RL family counted every check.
  const std::string rl = "rl_command_duration_seconds";
  EXPECT_EQ(after[rl + "_count{family=\"rl\"}"], 16);
  EXPECT_EQ(after[rl + "_bucket{family=\"rl\",le=\"+Inf\"}"], 16);
  EXPECT_GT(after[rl + "_sum{family=\"rl\"}"], 0);
  EXPECT_LT(after[rl + "_sum{family=\"rl\"}"], 16);
  double prev = 0;
  for (const char* le : {"1e-06", "1e-05", "0.0001", "0.001", "0.1", "1", "+Inf"}) {
    std::string bucket = rl + "_bucket{family=\"rl\",le=\"" + le + "\"}";
    ASSERT_EQ(after.count(bucket), 1u) << bucket;
    EXPECT_GE(after[bucket], prev) << "cumulative: " << bucket;
    prev = after[bucket];
  }
  EXPECT_EQ(after[rl + "_count{family=\"other\"}"], 0) << "scrapes are not commands";

  // INFO's per-policy lines carry the same numbers.
  std::string info = c.Call({"INFO", "stats"}).str;
  EXPECT_NE(info.find("policy_strict:checks=7,allowed=5,denied=2,shadow_denied=0,near_limit=1"),
            std::string::npos)
      << info;
  EXPECT_NE(info.find("policy_trial:checks=4,allowed=4,denied=0,shadow_denied=3"),
            std::string::npos)
      << info;
  EXPECT_NE(info.find("inline_limits:checks=3,allowed=3,denied=0,shadow_denied=0,near_limit=0"),
            std::string::npos)
      << info;
  EXPECT_NE(info.find("cl_throttle:checks=2,allowed=1,denied=1,shadow_denied=0,near_limit=1"),
            std::string::npos)
      << info;
  EXPECT_EQ(info.find("policy_(inline)"), std::string::npos) << info;
  EXPECT_EQ(info.find("policy_cl.throttle"), std::string::npos) << info;
  EXPECT_NE(c.Call({"INFO"}).str.find("# Persistence"), std::string::npos);

  // The counters keep moving.
  c.Call({"RL.CHECK", "tenant", "POLICY", "strict"});
  EXPECT_EQ(Scrape()["rl_denied_total{kind=\"policy\",policy=\"strict\"}"], 3);
}

// At --max-keys with every state at its limit, new keys overflow (fail-open by default).
TEST(MetricsOverflowTest, OverflowsAreCounted) {
  const int metrics_port = rl_test::FreeLoopbackPort();
  ServerProcess server({"--max-keys", "64", "--metrics-port", std::to_string(metrics_port)});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  for (int i = 0; i < 64; ++i) c.Call({"RL.CHECK", "full" + std::to_string(i), "GCRA", "1", "1h"});
  for (int i = 0; i < 5; ++i) c.Call({"RL.CHECK", "new" + std::to_string(i), "GCRA", "1", "1h"});
  auto m = Parse(Http(metrics_port, "GET", "/metrics").body);
  EXPECT_EQ(m["rl_overflows_total"], 5);
  EXPECT_EQ(m["rl_evictions_total"], 0);
  EXPECT_EQ(m["rl_keys"], 64);
}

TEST_F(MetricsTest, ShadowDenialsInRepliesAndMetrics) {
  RespClient c(server_->port());
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "canary", "SLIDING_LOG", "2", "1m", "SHADOW"}).str, "OK");
  EXPECT_EQ(c.Call({"RL.POLICY", "GET", "canary"}).str, "SLIDING_LOG 2 1m SHADOW");
  // RESP2: five integers, always allowed.
  for (int i = 0; i < 4; ++i) {
    std::vector<int64_t> r = c.Call({"RL.CHECK", "k", "POLICY", "canary"}).Ints();
    ASSERT_EQ(r.size(), 5u);
    EXPECT_EQ(r[0], 1) << i;
    EXPECT_EQ(r[3], 0) << "no retry-after when a shadow policy allows";
  }
  // RESP3: the map says what enforcement would have done.
  ASSERT_EQ(c.Call({"HELLO", "3"}).type, '%');
  Reply r = c.Call({"RL.CHECK", "k", "POLICY", "canary", "HEADERS"});
  ASSERT_EQ(r.type, '%');
  EXPECT_EQ(r.Get("allowed")->integer, 1);
  ASSERT_NE(r.Get("shadow_denied"), nullptr);
  EXPECT_EQ(r.Get("shadow_denied")->integer, 1);
  const Reply* headers = r.Get("headers");
  ASSERT_NE(headers, nullptr);
  EXPECT_EQ(headers->Get("Retry-After"), nullptr) << "allowed replies carry no Retry-After";
  Reply fresh = c.Call({"RL.CHECK", "other", "POLICY", "canary"});
  EXPECT_EQ(fresh.Get("shadow_denied"), nullptr) << "only would-be denials are flagged";
  // The config file's shadow policy behaves the same.
  c.Call({"RL.CHECK", "t", "POLICY", "trial"});
  EXPECT_EQ(c.Call({"RL.CHECK", "t", "POLICY", "trial"}).Get("shadow_denied")->integer, 1);

  auto m = Scrape();
  EXPECT_EQ(m["rl_checks_total{kind=\"policy\",policy=\"canary\"}"], 6);
  EXPECT_EQ(m["rl_shadow_denied_total{kind=\"policy\",policy=\"canary\"}"], 3);
  EXPECT_EQ(m["rl_denied_total{kind=\"policy\",policy=\"canary\"}"], 0);
  EXPECT_EQ(m["rl_shadow_denied_total{kind=\"policy\",policy=\"trial\"}"], 1);
  // Peeks are not checks.
  c.Call({"RL.PEEK", "k", "POLICY", "canary"});
  EXPECT_EQ(Scrape()["rl_checks_total{kind=\"policy\",policy=\"canary\"}"], 6);
}

// Policies named like the internal users of the engine (issue 10 item 8) get lines and counts of
// their own, apart from inline limits and CL.THROTTLE.
TEST_F(MetricsTest, PoliciesNamedLikeInternalKindsAreKeptApart) {
  RespClient c(server_->port());
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "cl.throttle", "GCRA", "5", "1m"}).str, "OK");
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "(inline)", "GCRA", "5", "1m"}).str, "OK");
  for (int i = 0; i < 3; ++i) c.Call({"RL.CHECK", "k", "POLICY", "cl.throttle"});
  for (int i = 0; i < 4; ++i) c.Call({"RL.CHECK", "k", "POLICY", "(inline)"});
  c.Call({"CL.THROTTLE", "k", "0", "1", "60"});
  c.Call({"RL.CHECK", "k", "GCRA", "5", "1m"});
  c.Call({"RL.CHECK", "k", "GCRA", "5", "1m"});

  auto m = Scrape();
  EXPECT_EQ(m["rl_checks_total{kind=\"policy\",policy=\"cl.throttle\"}"], 3) << last_body_;
  EXPECT_EQ(m["rl_checks_total{kind=\"policy\",policy=\"(inline)\"}"], 4) << last_body_;
  EXPECT_EQ(m["rl_checks_total{kind=\"cl.throttle\"}"], 1) << last_body_;
  EXPECT_EQ(m["rl_checks_total{kind=\"inline\"}"], 2) << last_body_;

  std::string info = c.Call({"INFO", "stats"}).str;
  EXPECT_NE(info.find("policy_cl.throttle:checks=3,"), std::string::npos) << info;
  EXPECT_NE(info.find("policy_(inline):checks=4,"), std::string::npos) << info;
  EXPECT_NE(info.find("cl_throttle:checks=1,"), std::string::npos) << info;
  EXPECT_NE(info.find("inline_limits:checks=2,"), std::string::npos) << info;
  EXPECT_NE(info.find("rl_checks:10\r\n"), std::string::npos) << info;
}

TEST_F(MetricsTest, LabelValuesAreEscaped) {
  RespClient c(server_->port());
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "we\"ird\\name", "GCRA", "5", "1m"}).str, "OK");
  c.Call({"RL.CHECK", "k", "POLICY", "we\"ird\\name"});
  auto m = Scrape();
  EXPECT_EQ(m["rl_checks_total{kind=\"policy\",policy=\"we\\\"ird\\\\name\"}"], 1) << last_body_;
}

TEST_F(MetricsTest, HttpEdges) {
  EXPECT_EQ(Http(metrics_port_, "GET", "/").status, 404);
  EXPECT_EQ(Http(metrics_port_, "POST", "/metrics").status, 405);
  HttpResponse head = Http(metrics_port_, "HEAD", "/metrics");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
  EXPECT_EQ(Http(metrics_port_, "GET", "/metrics?name[]=rl_keys").status, 200);
  // Garbage closes that connection only; the endpoint and the Redis port keep serving.
  {
    RespClient junk(metrics_port_);
    junk.SendRaw(std::string(20000, 'A') + "\r\n\r\n");
    EXPECT_TRUE(junk.WaitClosed());
  }
  EXPECT_EQ(Http(metrics_port_, "GET", "/metrics").status, 200);
  RespClient c(server_->port());
  EXPECT_EQ(c.Call({"PING"}).str, "PONG");
}

TEST(MetricsStartupTest, BusyMetricsPortRefusesToStart) {
  int busy = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(busy, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(busy, 1), 0);
  socklen_t len = sizeof(addr);
  getsockname(busy, reinterpret_cast<sockaddr*>(&addr), &len);
  ServerProcess server({"--metrics-port", std::to_string(ntohs(addr.sin_port))});
  EXPECT_EQ(server.port(), 0);
  EXPECT_EQ(server.Wait(5000), 1);
  close(busy);
}

}  // namespace
}  // namespace rl::test

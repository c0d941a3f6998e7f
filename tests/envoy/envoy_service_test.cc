// Envoy's rate limit service API against the real rl-server (one server for the binary): a gRPC
// client generated from the project's Envoy-shaped protos calls ShouldRateLimit over the rules in
// tests/envoy/rules, and checks every field Envoy reads.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

#include "envoy_client.h"
#include "http_client.h"
#include "resp_client.h"

namespace rl::test {
namespace {

namespace fs = std::filesystem;
using Code = rls::RateLimitResponse;

class EnvoyServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new rl_test::TempDir("rl-envoy");
    rules_ = fs::path(dir_->path()) / "rules";
    fs::create_directories(rules_);
    for (const char* f : {"main.yaml", "other.yaml"}) {
      fs::copy_file(fs::path(RL_ENVOY_RULES_DIR) / f, rules_ / f);
    }
    config_ = fs::path(dir_->path()) / "rl.toml";
    WriteText(config_, "envoy-rules = \"" + rules_.string() + "\"\nenvoy-headers = \"yes\"\n");
    metrics_port_ = rl_test::FreeLoopbackPort();
    server_ = new EnvoyServer({"--config", config_.string(), "--metrics-port",
                               std::to_string(metrics_port_), "--enable-debug-command", "local"});
    ASSERT_GT(server_->port(), 0) << "rl-server did not start";
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->Terminate(), 0);
    delete server_;
    delete dir_;
  }
  rls::RateLimitResponse Must(const rls::RateLimitRequest& req) {
    rls::RateLimitResponse resp;
    grpc::Status st = server_->Call(req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_code() << " " << st.error_message();
    return resp;
  }
  std::string Metrics() { return rl_test::HttpRequest(metrics_port_, "GET", "/metrics").body; }

  static inline rl_test::TempDir* dir_ = nullptr;
  static inline fs::path rules_, config_;
  static inline int metrics_port_ = 0;
  static inline EnvoyServer* server_ = nullptr;
};

TEST_F(EnvoyServiceTest, CountsPerDescriptorWithEnvoysFields) {
  for (int i = 1; i <= 6; ++i) {
    auto resp = Must(Request("rl_test", {{{"remote_address", "10.0.0.1"}}}));
    ASSERT_EQ(resp.statuses_size(), 1);
    const auto& s = resp.statuses(0);
    EXPECT_EQ(s.current_limit().requests_per_unit(), 5u);
    EXPECT_EQ(s.current_limit().unit(), rls::RateLimitResponse::RateLimit::HOUR);
    EXPECT_GT(
        s.duration_until_reset().seconds() * 1000 + s.duration_until_reset().nanos() / 1000000, 0);
    EXPECT_LE(s.duration_until_reset().seconds(), 3600);
    if (i <= 5) {
      EXPECT_EQ(resp.overall_code(), Code::OK) << i;
      EXPECT_EQ(s.code(), Code::OK);
      EXPECT_EQ(s.limit_remaining(), static_cast<uint32_t>(5 - i));
    } else {
      EXPECT_EQ(resp.overall_code(), Code::OVER_LIMIT);
      EXPECT_EQ(s.code(), Code::OVER_LIMIT);
      EXPECT_EQ(s.limit_remaining(), 0u);
    }
  }
  // Another value of the same key has its own count.
  EXPECT_EQ(Must(Request("rl_test", {{{"remote_address", "10.0.0.2"}}})).overall_code(), Code::OK);
}

TEST_F(EnvoyServiceTest, StatusesInRequestOrderAndNoRuleIsOk) {
  auto resp = Must(Request("rl_test", {{{"nothing", "x"}}, {{"remote_address", "10.1.0.1"}}}));
  ASSERT_EQ(resp.statuses_size(), 2);
  EXPECT_EQ(resp.statuses(0).code(), Code::OK);
  EXPECT_FALSE(resp.statuses(0).has_current_limit());
  EXPECT_EQ(resp.statuses(1).current_limit().requests_per_unit(), 5u);
  EXPECT_EQ(resp.statuses(1).limit_remaining(), 4u);
  // An unknown domain: nothing is limited.
  resp = Must(Request("no_such_domain", {{{"remote_address", "10.1.0.1"}}}));
  EXPECT_EQ(resp.overall_code(), Code::OK);
  EXPECT_FALSE(resp.statuses(0).has_current_limit());
}

TEST_F(EnvoyServiceTest, NestedDescriptorsAndValueOverride) {
  auto gold = Must(Request("rl_test", {{{"tenant", "acme"}, {"plan", "gold"}}}));
  EXPECT_EQ(gold.statuses(0).current_limit().requests_per_unit(), 10u);
  auto silver = Must(Request("rl_test", {{{"tenant", "acme"}, {"plan", "silver"}}}));
  EXPECT_EQ(silver.statuses(0).current_limit().requests_per_unit(), 2u);
  Must(Request("rl_test", {{{"tenant", "acme"}, {"plan", "silver"}}}));
  EXPECT_EQ(Must(Request("rl_test", {{{"tenant", "acme"}, {"plan", "silver"}}})).overall_code(),
            Code::OVER_LIMIT);
  // The parent alone has no limit.
  EXPECT_FALSE(Must(Request("rl_test", {{{"tenant", "acme"}}})).statuses(0).has_current_limit());
}

TEST_F(EnvoyServiceTest, WildcardValue) {
  auto resp = Must(Request("rl_test", {{{"path", "/api/users"}}}));
  EXPECT_EQ(resp.statuses(0).current_limit().requests_per_unit(), 4u);
  EXPECT_FALSE(Must(Request("rl_test", {{{"path", "/web/x"}}})).statuses(0).has_current_limit());
}

TEST_F(EnvoyServiceTest, UnlimitedIsOkWithMaxRemaining) {
  for (int i = 0; i < 20; ++i) {
    auto resp = Must(Request("rl_test", {{{"free", "a"}}}));
    ASSERT_EQ(resp.overall_code(), Code::OK);
    EXPECT_EQ(resp.statuses(0).limit_remaining(), std::numeric_limits<uint32_t>::max());
  }
}

TEST_F(EnvoyServiceTest, ShadowModeCountsButAnswersOk) {
  Must(Request("rl_test", {{{"watch", "s1"}}}));
  auto resp = Must(Request("rl_test", {{{"watch", "s1"}}}));
  EXPECT_EQ(resp.overall_code(), Code::OK);
  EXPECT_EQ(resp.statuses(0).code(), Code::OK);
  EXPECT_EQ(resp.statuses(0).limit_remaining(), 0u);
  EXPECT_NE(Metrics().find("ratelimit_service_rate_limit_shadow_mode{domain=\"rl_test\""),
            std::string::npos);
}

TEST_F(EnvoyServiceTest, ReplacesSkipsTheReplacedLimit) {
  // Together: the premium rule replaces base_limit (1/min), so both pass repeatedly.
  for (int i = 0; i < 3; ++i) {
    auto resp = Must(Request("rl_test", {{{"base", "u1"}}, {{"premium", "u1"}}}));
    EXPECT_EQ(resp.overall_code(), Code::OK) << i;
    EXPECT_FALSE(resp.statuses(0).has_current_limit());
    EXPECT_EQ(resp.statuses(1).current_limit().requests_per_unit(), 100u);
  }
  // Alone, base_limit applies.
  Must(Request("rl_test", {{{"base", "u1"}}}));
  auto resp = Must(Request("rl_test", {{{"base", "u1"}}}));
  EXPECT_EQ(resp.overall_code(), Code::OVER_LIMIT);
  EXPECT_EQ(resp.statuses(0).current_limit().name(), "base_limit");
}

TEST_F(EnvoyServiceTest, LimitOverrideWithAndWithoutRule) {
  auto req = Request("rl_test", {{{"unconfigured", "o1"}}});
  auto* limit = req.mutable_descriptors(0)->mutable_limit();
  limit->set_requests_per_unit(2);
  limit->set_unit(::envoy::type::v3::HOUR);
  EXPECT_EQ(Must(req).statuses(0).current_limit().requests_per_unit(), 2u);
  EXPECT_EQ(Must(req).statuses(0).current_limit().unit(), rls::RateLimitResponse::RateLimit::HOUR);
  EXPECT_EQ(Must(req).overall_code(), Code::OVER_LIMIT);
  // Over a configured rule (remote_address: 5/hour): the override's 1/day decides.
  req = Request("rl_test", {{{"remote_address", "10.9.9.9"}}});
  req.mutable_descriptors(0)->mutable_limit()->set_requests_per_unit(1);
  req.mutable_descriptors(0)->mutable_limit()->set_unit(::envoy::type::v3::DAY);
  EXPECT_EQ(Must(req).overall_code(), Code::OK);
  EXPECT_EQ(Must(req).overall_code(), Code::OVER_LIMIT);
}

TEST_F(EnvoyServiceTest, HitsAddendAtBothLevels) {
  // Request level: 2 of 5.
  auto resp = Must(Request("rl_test", {{{"remote_address", "10.2.0.1"}}}, 2));
  EXPECT_EQ(resp.statuses(0).limit_remaining(), 3u);
  // Descriptor level wins over the request's.
  auto req =
      Request("rl_test", {{{"remote_address", "10.2.0.1"}}, {{"remote_address", "10.2.0.2"}}}, 2);
  req.mutable_descriptors(1)->mutable_hits_addend()->set_value(4);
  resp = Must(req);
  EXPECT_EQ(resp.statuses(0).limit_remaining(), 1u);
  EXPECT_EQ(resp.statuses(1).limit_remaining(), 1u);
  // A descriptor's explicit 0 only looks.
  req = Request("rl_test", {{{"remote_address", "10.2.0.2"}}});
  req.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  EXPECT_EQ(Must(req).statuses(0).limit_remaining(), 1u);
  // More than is left: denied, nothing taken.
  resp = Must(Request("rl_test", {{{"remote_address", "10.2.0.2"}}}, 3));
  EXPECT_EQ(resp.overall_code(), Code::OVER_LIMIT);
  EXPECT_EQ(
      Must(Request("rl_test", {{{"remote_address", "10.2.0.2"}}})).statuses(0).limit_remaining(),
      0u);
}

TEST_F(EnvoyServiceTest, ResponseHeaders) {
  auto resp = Must(Request("rl_test", {{{"remote_address", "10.3.0.1"}}}));
  std::map<std::string, std::string> headers;
  for (const auto& h : resp.response_headers_to_add()) headers[h.key()] = h.value();
  EXPECT_EQ(headers["X-RateLimit-Limit"], "5");
  EXPECT_EQ(headers["X-RateLimit-Remaining"], "4");
  EXPECT_TRUE(headers.count("X-RateLimit-Reset"));
  EXPECT_TRUE(headers.count("RateLimit-Policy"));
  EXPECT_FALSE(headers.count("Retry-After"));
}

TEST_F(EnvoyServiceTest, WindowsAreAlignedToTheWallClock) {
  // per_second: 3 per second on the clock's second grid. Used up, then the server's clock moves
  // to the next second (DEBUG CLOCK-ADVANCE by the reset it reported): fresh again.
  RespClient resp_client(server_->port());
  rls::RateLimitResponse last;
  for (int i = 0; i < 4; ++i) last = Must(Request("rl_test", {{{"per_second", "w"}}}));
  if (last.overall_code() == Code::OK) GTEST_SKIP() << "a second boundary passed mid-test";
  const auto& reset = last.statuses(0).duration_until_reset();
  const int64_t reset_ms = reset.seconds() * 1000 + reset.nanos() / 1000000;
  EXPECT_GT(reset_ms, 0);
  EXPECT_LE(reset_ms, 1000);
  Reply r = resp_client.Call({"DEBUG", "CLOCK-ADVANCE", std::to_string(reset_ms)});
  ASSERT_FALSE(r.is_error()) << r.str;
  EXPECT_EQ(Must(Request("rl_test", {{{"per_second", "w"}}})).overall_code(), Code::OK);
}

TEST_F(EnvoyServiceTest, BadRequestsGetErrorStatus) {
  rls::RateLimitResponse resp;
  EXPECT_EQ(server_->Call(Request("", {{{"a", "b"}}}), &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(server_->Call(Request("rl_test", {}), &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // Bytes that are no RateLimitRequest (a truncated length-delimited field).
  grpc::GenericStub generic(server_->channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Slice bad("\x0a\xff\xff\xff\x0f", 5);
  grpc::ByteBuffer in(&bad, 1), out;
  grpc::Status st;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  generic.UnaryCall(&ctx, "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit", {}, &in,
                    &out, [&](grpc::Status s) {
                      std::lock_guard<std::mutex> lock(mu);
                      st = s;
                      done = true;
                      cv.notify_all();
                    });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  EXPECT_FALSE(st.ok());
  // An oversized request (over --envoy-max-message, 64 KiB by default).
  auto big = Request("rl_test", {{{"remote_address", std::string(100 << 10, 'x')}}});
  EXPECT_EQ(server_->Call(big, &resp).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // The server still answers.
  EXPECT_EQ(Must(Request("rl_test", {{{"remote_address", "10.4.0.1"}}})).overall_code(), Code::OK);
}

TEST_F(EnvoyServiceTest, MetricsInEnvoyproxyRatelimitsNames) {
  Must(Request("rl_test", {{{"remote_address", "10.5.0.1"}}}));
  const std::string page = Metrics();
  for (const char* family :
       {"total_hits", "over_limit", "near_limit", "within_limit", "shadow_mode"}) {
    EXPECT_NE(page.find(std::string("# TYPE ratelimit_service_rate_limit_") + family + " counter"),
              std::string::npos)
        << family;
  }
  EXPECT_NE(page.find("ratelimit_service_rate_limit_total_hits{domain=\"rl_test\",key=\"rl_test."
                      "remote_address\"}"),
            std::string::npos)
      << page;
}

// Last: it changes the rules.
TEST_F(EnvoyServiceTest, ZReloadKeepsStateAndABadFileKeepsTheOldRules) {
  auto reload = Request("rl_test", {{{"reload", "k"}}});
  Must(reload);
  EXPECT_EQ(Must(reload).statuses(0).limit_remaining(), 1u);  // 3 per hour, 2 used
  // A file that does not parse: the reload fails whole, the old rules stay.
  WriteText(rules_ / "broken.yaml", "domain: [unclosed\n");
  const std::string before = Metrics();
  server_->Signal(SIGHUP);
  for (int i = 0; i < 200 && Metrics().find("rl_config_reloads_total{result=\"error\"} 1") ==
                                 std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_NE(Metrics().find("rl_config_reloads_total{result=\"error\"} 1"), std::string::npos);
  EXPECT_EQ(Must(reload).statuses(0).current_limit().requests_per_unit(), 3u);
  fs::remove(rules_ / "broken.yaml");
  // A valid change (3 -> 5 per hour): the count so far is kept (3 used of 5 -> 1 left after one).
  std::string text = rl_test::ReadFile(rules_ / "main.yaml");
  const std::string from = "unit: hour\n      requests_per_unit: 3";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "unit: hour\n      requests_per_unit: 5");
  WriteText(rules_ / "main.yaml", text);
  server_->Signal(SIGHUP);
  rls::RateLimitResponse resp;
  for (int i = 0; i < 200; ++i) {
    auto peek = Request("rl_test", {{{"reload", "k"}}});
    peek.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
    resp = Must(peek);
    if (resp.statuses(0).current_limit().requests_per_unit() == 5u) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_EQ(resp.statuses(0).current_limit().requests_per_unit(), 5u);
  EXPECT_EQ(Must(reload).statuses(0).limit_remaining(), 1u);
}

// The backend cannot be reached: the call fails with a gRPC error status (so Envoy applies
// failure_mode_deny) within the backend timeout, never an invented answer or a stall.
TEST(EnvoyBackendTest, UnreachableBackendFailsFast) {
  const int dead_port = rl_test::FreeLoopbackPort();
  EnvoyServer server({"--envoy-rules", RL_ENVOY_RULES_DIR, "--envoy-backend",
                      "127.0.0.1:" + std::to_string(dead_port), "--envoy-backend-timeout", "20ms"});
  ASSERT_GT(server.port(), 0);
  for (int i = 0; i < 3; ++i) {
    rls::RateLimitResponse resp;
    const auto start = std::chrono::steady_clock::now();
    grpc::Status st = server.Call(Request("rl_test", {{{"remote_address", "1"}}}), &resp,
                                  std::chrono::milliseconds(2000));
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
    EXPECT_LT(took, std::chrono::milliseconds(1000));
  }
  EXPECT_EQ(server.Terminate(), 0);
}

// A backend that accepts connections and never answers: each call fails with UNAVAILABLE once the
// backend timeout (50 ms) has passed, long before the caller's deadline.
TEST(EnvoyBackendTest, StalledBackendFailsWithinItsTimeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 64), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  EnvoyServer server({"--envoy-rules", RL_ENVOY_RULES_DIR, "--envoy-backend",
                      "127.0.0.1:" + std::to_string(ntohs(addr.sin_port)),
                      "--envoy-backend-timeout", "50ms"});
  ASSERT_GT(server.port(), 0);
  for (int i = 0; i < 3; ++i) {
    rls::RateLimitResponse resp;
    const auto start = std::chrono::steady_clock::now();
    grpc::Status st = server.Call(Request("rl_test", {{{"remote_address", "1"}}}), &resp,
                                  std::chrono::milliseconds(5000));
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2000));
  }
  EXPECT_EQ(server.Terminate(), 0);
  ::close(fd);
}

// Without --config, SIGHUP still re-reads the rules directory (the policies, set by RL.POLICY,
// are left alone).
TEST(EnvoyFlagsOnlyTest, SighupReloadsTheRulesWithoutAConfigFile) {
  rl_test::TempDir dir("rl-envoy-flags");
  const fs::path rules = fs::path(dir.path());
  WriteText(rules / "r.yaml",
            "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, "
            "requests_per_unit: 7}\n");
  EnvoyServer server({"--envoy-rules", rules.string()});
  ASSERT_GT(server.port(), 0);
  rls::RateLimitResponse resp;
  ASSERT_TRUE(server.Call(Request("d", {{{"k", "v"}}}), &resp).ok());
  EXPECT_EQ(resp.statuses(0).current_limit().requests_per_unit(), 7u);
  WriteText(rules / "r.yaml",
            "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, "
            "requests_per_unit: 9}\n");
  server.Signal(SIGHUP);
  for (int i = 0; i < 400; ++i) {
    ASSERT_TRUE(server.Call(Request("d", {{{"k", "w"}}}), &resp).ok());
    if (resp.statuses(0).current_limit().requests_per_unit() == 9u) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_EQ(resp.statuses(0).current_limit().requests_per_unit(), 9u);
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

// The gRPC ShouldRateLimit front end; see service.h.
#include "service.h"

#include <fmt/core.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "backend.h"
#include "decide.h"
#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "envoy_stats.h"
#include "google/protobuf/stubs/logging.h"
#include "server.h"
#include "server_state.h"
#include "text.h"

namespace rl::envoy {
namespace {

using server::ServerConfig;
using server::ServerState;
using SteadyTime = std::chrono::steady_clock::time_point;

absl::StatusOr<std::shared_ptr<const RuleSet>> LoadRules(const ServerConfig& config) {
  auto rules = RuleSet::LoadDirectory(config.envoy_rules);
  if (!rules.ok()) {
    return absl::InvalidArgumentError(fmt::format("envoy-rules {}: {}", config.envoy_rules,
                                                  server::ToStd(rules.status().message())));
  }
  return *std::move(rules);
}

grpc::Status ToGrpc(const absl::Status& st) {
  return grpc::Status(static_cast<grpc::StatusCode>(st.code()), std::string(st.message()));
}

// The call's deadline on the steady clock (gRPC gives it on the system clock).
SteadyTime SteadyDeadline(const grpc::CallbackServerContext* ctx) {
  const auto system_deadline = ctx->deadline();
  const auto system_now = std::chrono::system_clock::now();
  if (system_deadline == std::chrono::system_clock::time_point::max()) return SteadyTime::max();
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(system_deadline -
                                                                         system_now);
}

class Service final : public pb::RateLimitService::CallbackService {
 public:
  Service(ServerState* state, std::shared_ptr<const RuleSet> rules,
          std::unique_ptr<Backend> backend)
      : state_(state), rules_(std::move(rules)), backend_(std::move(backend)) {}

  grpc::ServerUnaryReactor* ShouldRateLimit(grpc::CallbackServerContext* ctx,
                                            const pb::RateLimitRequest* request,
                                            pb::RateLimitResponse* response) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    auto plan = MakePlan(*Rules(), *request, &stats_);
    if (!plan.ok()) return Fail(reactor, plan.status());
    auto shared = std::make_shared<Plan>(*std::move(plan));
    std::vector<BackendCheck> checks = std::move(shared->checks);
    backend_->CheckAll(
        std::move(checks), SteadyDeadline(ctx),
        [this, reactor, response, shared](absl::StatusOr<std::vector<rl::Decision>> decisions) {
          if (!decisions.ok()) return (void)Fail(reactor, decisions.status());
          AnswerOptions options;
          options.headers = state_->config.envoy_headers;
          options.wall_now_ms = state_->clock->WallMs();
          Answer(*shared, *decisions, options, &stats_, response);
          reactor->Finish(grpc::Status::OK);
        });
    return reactor;
  }

  std::shared_ptr<const RuleSet> Rules() const {
    absl::ReaderMutexLock lock(&mu_);
    return rules_;
  }
  void SetRules(std::shared_ptr<const RuleSet> rules) {
    absl::MutexLock lock(&mu_);
    rules_ = std::move(rules);
  }
  const EnvoyStats& stats() const { return stats_; }

 private:
  grpc::ServerUnaryReactor* Fail(grpc::ServerUnaryReactor* reactor, const absl::Status& st) {
    grpc::Status status = ToGrpc(st);
    stats_.CountError(absl::StatusCodeToString(st.code()));
    reactor->Finish(status);
    return reactor;
  }

  ServerState* state_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const RuleSet> rules_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Backend> backend_;
  EnvoyStats stats_;
};

class EnvoyFrontEnd final : public server::FrontEnd {
 public:
  explicit EnvoyFrontEnd(ServerState* state) : state_(state) {}

  absl::Status Start() override {
    const ServerConfig& c = state_->config;
    if (c.envoy_rules.empty()) {
      return absl::InvalidArgumentError(
          "envoy-port needs envoy-rules: the directory of the rate limit rules it serves");
    }
    auto rules = LoadRules(c);
    if (!rules.ok()) return rules.status();
    std::unique_ptr<Backend> backend;
    if (c.envoy_backend.empty()) {
      backend = MakeLocalBackend(state_->limiter.get());
    } else {
      auto remote = MakeRemoteBackend(c.envoy_backend, c.envoy_backend_timeout_ms, "");
      if (!remote.ok()) return remote.status();
      backend = *std::move(remote);
    }
    // protobuf would log each request whose strings are not UTF-8 (gRPC fails them before the
    // handler): a client could flood stderr with them.
    google::protobuf::SetLogHandler(nullptr);
    service_ = std::make_unique<Service>(state_, *std::move(rules), std::move(backend));
    grpc::ServerBuilder builder;
    const std::string host = c.bind.find(':') != std::string::npos ? "[" + c.bind + "]" : c.bind;
    int bound = 0;
    builder.AddListeningPort(fmt::format("{}:{}", host, c.envoy_port),
                             grpc::InsecureServerCredentials(), &bound);
    builder.SetMaxReceiveMessageSize(static_cast<int>(c.envoy_max_message));
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || bound == 0) {
      return absl::UnavailableError(
          fmt::format("cannot listen on {}:{} (envoy-port)", c.bind, c.envoy_port));
    }
    if (!server::IsLoopbackAddress(c.bind) && !c.quiet) {
      server::LogLine(
          fmt::format("warning: envoy-port {}:{} takes calls without a password", c.bind, bound));
    }
    // Before the readiness line, for scripts and tests.
    fmt::print("rl-server envoy: listening on {}:{}\n", c.bind, bound);
    std::fflush(stdout);
    return absl::OkStatus();
  }

  absl::StatusOr<std::function<void()>> PrepareReload(const ServerConfig& next) override {
    auto rules = LoadRules(next);
    if (!rules.ok()) return rules.status();
    return [this, rules = *std::move(rules)]() mutable { service_->SetRules(std::move(rules)); };
  }

  void RenderMetrics(std::string* page) const override { service_->stats().Render(page); }

  void Stop() override {
    if (server_ == nullptr) return;
    // Calls under way get a moment to finish (a backend call is bounded by its timeout).
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    server_->Wait();
    server_.reset();
  }

 private:
  ServerState* state_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace

server::FrontEndFactory EnvoyFrontEndFactory() {
  return [](ServerState* state) -> absl::StatusOr<std::unique_ptr<server::FrontEnd>> {
    if (state->config.envoy_port == 0) return nullptr;
    return std::make_unique<EnvoyFrontEnd>(state);
  };
}

}  // namespace rl::envoy

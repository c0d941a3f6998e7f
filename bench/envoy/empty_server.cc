// envoy_empty_server: gRPC's own ceiling for bench/envoy/run. The same RateLimitService, the same
// callback API and server settings as rl-server's front end (envoy/service/service.cc), but the
// handler answers a fixed OK status at once: no rules, no engine. What rl-server reaches against
// this is the share of a call that rl's own work costs.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>
#include <string>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

namespace rls = ::envoy::service::ratelimit::v3;

class Empty final : public rls::RateLimitService::CallbackService {
  grpc::ServerUnaryReactor* ShouldRateLimit(grpc::CallbackServerContext* ctx,
                                            const rls::RateLimitRequest* request,
                                            rls::RateLimitResponse* response) override {
    response->set_overall_code(rls::RateLimitResponse::OK);
    for (int i = 0; i < request->descriptors_size(); ++i) {
      response->add_statuses()->set_code(rls::RateLimitResponse::OK);
    }
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

int main() {
  Empty service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(64 << 10);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  if (server == nullptr) return 1;
  std::printf("envoy_empty_server: listening on 127.0.0.1:%d\n", port);
  std::fflush(stdout);
  server->Wait();
  return 0;
}

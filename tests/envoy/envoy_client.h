// The Envoy API tests' side of the wire: one rl-server with --envoy-port on a free loopback port
// (shared by a test binary), and a gRPC client generated from the project's Envoy-shaped protos.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "server_process.h"
#include "subprocess.h"
#include "test_files.h"

namespace rl::test {

namespace rls = ::envoy::service::ratelimit::v3;
using Entries = std::vector<std::pair<std::string, std::string>>;

// rl-server started with `flags` plus --envoy-port on a port free a moment before (another
// process may take it in between: then the start fails and is tried again on another port).
class EnvoyServer {
 public:
  explicit EnvoyServer(std::vector<std::string> flags) {
    for (int attempt = 0; attempt < 3 && port_ == 0; ++attempt) {
      std::vector<std::string> argv = {RL_SERVER_PATH, "--quiet",
                                       "--port",       "0",
                                       "--envoy-port", std::to_string(rl_test::FreeLoopbackPort())};
      argv.insert(argv.end(), flags.begin(), flags.end());
      if (!process_.Start(argv, rl_test::SpawnOptions{})) continue;
      const auto timeout = std::chrono::milliseconds(20000);
      envoy_port_ = rl_test::ReadyPort(process_, "rl-server envoy: listening on ", timeout);
      if (envoy_port_ > 0) {
        port_ = rl_test::ReadyPort(process_, "rl-server ready: listening on ", timeout);
      }
    }
    if (port_ > 0) {
      channel_ = grpc::CreateChannel(fmt_address(), grpc::InsecureChannelCredentials());
      stub_ = rls::RateLimitService::NewStub(channel_);
    }
  }
  int port() const { return port_; }
  int envoy_port() const { return envoy_port_; }
  void Signal(int signo) { process_.Signal(signo); }
  int Terminate() {
    process_.Signal(SIGTERM);
    auto status = process_.Wait(std::chrono::milliseconds(15000));
    return status.has_value() ? *status : -1;
  }
  std::string fmt_address() const { return "127.0.0.1:" + std::to_string(envoy_port_); }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }

  // One call with a 5 s deadline.
  grpc::Status Call(const rls::RateLimitRequest& req, rls::RateLimitResponse* resp,
                    std::chrono::milliseconds deadline = std::chrono::milliseconds(5000)) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    return stub_->ShouldRateLimit(&ctx, req, resp);
  }

 private:
  rl_test::Subprocess process_;
  int port_ = 0;
  int envoy_port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<rls::RateLimitService::Stub> stub_;
};

// A request of one descriptor per element of `descriptors`.
inline rls::RateLimitRequest Request(const std::string& domain,
                                     const std::vector<Entries>& descriptors,
                                     uint32_t hits_addend = 0) {
  rls::RateLimitRequest req;
  req.set_domain(domain);
  req.set_hits_addend(hits_addend);
  for (const Entries& entries : descriptors) {
    auto* d = req.add_descriptors();
    for (const auto& [k, v] : entries) {
      auto* e = d->add_entries();
      e->set_key(k);
      e->set_value(v);
    }
  }
  return req;
}

inline void WriteText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace rl::test

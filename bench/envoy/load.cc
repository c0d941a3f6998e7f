// envoy_load: a ShouldRateLimit load generator (gRPC async client, one completion queue thread)
// for bench/envoy/run. Keeps --streams calls in flight over --channels HTTP/2 connections for
// --seconds, each call one descriptor (remote_address = one of --keys values) in --domain, and
// prints one JSON line: calls/s, latency percentiles, and how the answers split (OK,
// OVER_LIMIT, gRPC errors), read from each decoded response, so a run that measured errors
// or empty answers says so (h2load could not: it does not read grpc-status trailers).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

namespace {

namespace rls = ::envoy::service::ratelimit::v3;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string target = "127.0.0.1:8081";
  std::string domain = "bench";
  int streams = 50;
  int channels = 4;
  int keys = 10000;
  double seconds = 5;
  double warmup = 1;
};

struct Call {
  grpc::ClientContext ctx;
  rls::RateLimitResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<rls::RateLimitResponse>> reader;
  Clock::time_point start;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--target")
      o.target = value;
    else if (flag == "--domain")
      o.domain = value;
    else if (flag == "--streams")
      o.streams = std::atoi(value.c_str());
    else if (flag == "--channels")
      o.channels = std::atoi(value.c_str());
    else if (flag == "--keys")
      o.keys = std::atoi(value.c_str());
    else if (flag == "--seconds")
      o.seconds = std::atof(value.c_str());
    else if (flag == "--warmup")
      o.warmup = std::atof(value.c_str());
    else {
      std::fprintf(stderr, "envoy_load: unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  std::vector<std::unique_ptr<rls::RateLimitService::Stub>> stubs;
  for (int i = 0; i < o.channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.channel_id", i);  // distinct channels: one HTTP/2 connection each
    stubs.push_back(rls::RateLimitService::NewStub(
        grpc::CreateCustomChannel(o.target, grpc::InsecureChannelCredentials(), args)));
  }
  std::vector<rls::RateLimitRequest> requests(std::min(o.keys, 100000));
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].set_domain(o.domain);
    auto* e = requests[i].add_descriptors()->add_entries();
    e->set_key("remote_address");
    e->set_value("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256));
  }
  grpc::CompletionQueue cq;
  std::mt19937_64 rng(42);
  auto start_call = [&](Call* c, size_t n) {
    c->~Call();
    new (c) Call();
    c->start = Clock::now();
    c->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    c->reader = stubs[n % stubs.size()]->AsyncShouldRateLimit(
        &c->ctx, requests[rng() % requests.size()], &cq);
    c->reader->Finish(&c->response, &c->status, c);
  };
  std::vector<Call> calls(o.streams);
  size_t issued = 0;
  for (auto& c : calls) start_call(&c, issued++);
  const auto t0 = Clock::now();
  const auto measure_from =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.warmup));
  const auto end = measure_from + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(o.seconds));
  std::vector<int64_t> latencies_us;
  latencies_us.reserve(1 << 20);
  uint64_t ok = 0, over = 0, unknown = 0, errors = 0;
  void* tag;
  bool fine;
  int in_flight = o.streams;
  bool stopping = false;
  while (in_flight > 0 && cq.Next(&tag, &fine)) {
    Call* c = static_cast<Call*>(tag);
    const auto now = Clock::now();
    if (now >= measure_from && c->start >= measure_from && now < end) {
      latencies_us.push_back(
          std::chrono::duration_cast<std::chrono::microseconds>(now - c->start).count());
      if (!c->status.ok()) {
        ++errors;
      } else if (c->response.overall_code() == rls::RateLimitResponse::OK &&
                 c->response.statuses_size() == 1) {
        ++ok;
      } else if (c->response.overall_code() == rls::RateLimitResponse::OVER_LIMIT) {
        ++over;
      } else {
        ++unknown;
      }
    }
    stopping = stopping || now >= end;
    if (stopping) {
      --in_flight;
    } else {
      start_call(c, issued++);
    }
  }
  std::sort(latencies_us.begin(), latencies_us.end());
  auto pct = [&](double p) {
    if (latencies_us.empty()) return int64_t{0};
    return latencies_us[std::min(latencies_us.size() - 1,
                                 static_cast<size_t>(p * latencies_us.size()))];
  };
  const double rate = latencies_us.size() / o.seconds;
  std::printf(
      "{\"calls_per_s\": %.0f, \"p50_us\": %ld, \"p99_us\": %ld, \"p999_us\": %ld, \"ok\": %lu, "
      "\"over_limit\": %lu, \"unknown\": %lu, \"errors\": %lu, \"streams\": %d}\n",
      rate, pct(0.50), pct(0.99), pct(0.999), ok, over, unknown, errors, o.streams);
  return errors > 0 || unknown > 0 ? 1 : 0;
}

// rl_fault_load: the client side of the fault harness (bench/faults/run). Runs checks at a known
// rate against keys with a known limit (SLIDING_LOG <limit> <window>: over any run shorter than
// the window the limit allows exactly <limit> per key) through rl::RemoteLimiter (single node or
// cluster mode, wait_for_replicas, fail-open / fail-closed / local fallback) or a plain RESP
// client (one request at a time, a command timeout, a late reply treated as no answer, optional
// `WAIT n ms` pipelined after each check). Keeps a per-key ledger: admitted, denied, wrong denials
// (denied while the key had admitted fewer than its limit), checks decided without the server;
// and the time each key went without an answer. Prints `progress ...` lines on stdout while it runs
// (the driver waits on them) and stops when stdin closes or --max-ms passes; then writes the
// ledger as JSON to --out.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "resp_client.h"
#include "rl/remote_limiter.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string client = "remote";  // remote | plain
  int port = 0;                   // single node
  std::vector<std::string> cluster;
  std::string failure = "open";  // open | closed | fallback
  int instances = 1;             // fallback share divisor
  int wait_replicas = 0;
  int timeout_ms = 50;
  int keys = 20;
  int64_t limit = 50;
  std::string window = "1h";
  double rate = 1000;  // checks per second, all threads together
  int threads = 4;
  int64_t max_ms = 120000;
  std::string prefix = "rl:fault:";
  std::string out;
};

// One key's ledger, kept by the one thread that checks the key (so checks of a key are in order).
struct KeyLedger {
  int64_t admitted = 0;
  int64_t denied = 0;
  int64_t wrong_denied = 0;
  int64_t unanswered = 0;      // decided without the server's answer
  int64_t unavailable_ms = 0;  // from each first unanswered check to the next answered one
  int64_t longest_outage_ms = 0;
  bool in_outage = false;
  Clock::time_point outage_start{};

  void EndOutage(Clock::time_point now) {
    if (!in_outage) return;
    const int64_t ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - outage_start).count();
    unavailable_ms += ms;
    longest_outage_ms = std::max(longest_outage_ms, ms);
    in_outage = false;
  }
};

std::atomic<bool> g_stop{false};
std::atomic<int64_t> g_errors{0}, g_checks{0}, g_admitted{0}, g_answered{0}, g_unanswered{0};

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const std::string v = argv[i + 1];
    if (k == "--client")
      a->client = v;
    else if (k == "--port")
      a->port = std::atoi(v.c_str());
    else if (k == "--cluster")
      a->cluster = absl::StrSplit(v, ',', absl::SkipEmpty());
    else if (k == "--failure")
      a->failure = v;
    else if (k == "--instances")
      a->instances = std::atoi(v.c_str());
    else if (k == "--wait-replicas")
      a->wait_replicas = std::atoi(v.c_str());
    else if (k == "--timeout-ms")
      a->timeout_ms = std::atoi(v.c_str());
    else if (k == "--keys")
      a->keys = std::atoi(v.c_str());
    else if (k == "--limit")
      a->limit = std::atoll(v.c_str());
    else if (k == "--window")
      a->window = v;
    else if (k == "--rate")
      a->rate = std::atof(v.c_str());
    else if (k == "--threads")
      a->threads = std::atoi(v.c_str());
    else if (k == "--max-ms")
      a->max_ms = std::atoll(v.c_str());
    else if (k == "--prefix")
      a->prefix = v;
    else if (k == "--out")
      a->out = v;
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return false;
    }
  }
  if ((argc - 1) % 2 != 0 || a->out.empty() || (a->port == 0 && a->cluster.empty()) ||
      a->keys < 1 || a->threads < 1 || a->rate <= 0) {
    std::fprintf(stderr, "usage: rl_fault_load (--port P | --cluster h:p,...) --out FILE ...\n");
    return false;
  }
  return true;
}

// One check's outcome as the ledger needs it.
struct Outcome {
  bool allowed = false;
  bool answered = false;  // the server's own decision (and, with WAIT, acknowledged)
};

// A plain RESP client as an application would write one: a timeout on every command, a reply
// that comes late is no answer (the connection is dropped, so it is never read), the failure
// mode decides what was not answered.
class PlainChecker {
 public:
  PlainChecker(const Args& a) : a_(a) {}
  Outcome Check(const std::string& key) {
    const auto now = Clock::now();
    if (!client_ || !client_->connected()) {
      if (now < retry_at_) return Fail();
      client_ = std::make_unique<rl::test::RespClient>(a_.port, a_.timeout_ms);
      if (!client_->connected()) {
        retry_at_ = now + std::chrono::milliseconds(100);
        return Fail();
      }
    }
    std::string bytes = rl::test::RespClient::Encode(
        {"RL.CHECK", key, "SLIDING_LOG", std::to_string(a_.limit), a_.window});
    if (a_.wait_replicas > 0) {
      bytes += rl::test::RespClient::Encode(
          {"WAIT", std::to_string(a_.wait_replicas), std::to_string(a_.timeout_ms * 3 / 4)});
    }
    if (!client_->SendRaw(bytes)) return Drop();
    rl::test::Reply r = client_->Read();
    if (r.closed() || r.is_error() || r.elements.empty()) return Drop();
    const bool allowed = r.elements[0].integer == 1;
    if (a_.wait_replicas > 0) {
      rl::test::Reply w = client_->Read();
      if (w.closed()) return Drop();
      if (w.integer < a_.wait_replicas) return Fail();  // counted on the master only
    }
    if (Clock::now() - now > std::chrono::milliseconds(a_.timeout_ms)) return Drop();
    return {allowed, true};
  }

 private:
  Outcome Fail() const { return {a_.failure == "open", false}; }
  Outcome Drop() {
    client_.reset();
    return Fail();
  }
  const Args& a_;
  std::unique_ptr<rl::test::RespClient> client_;
  Clock::time_point retry_at_{};
};

void RunThread(const Args& a, int t, rl::RemoteLimiter* remote, const rl::Policy& policy,
               std::vector<KeyLedger>* keys) {
  PlainChecker plain(a);
  std::vector<int> mine;
  for (int k = t; k < a.keys; k += a.threads) mine.push_back(k);
  if (mine.empty()) return;
  const auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 * a.threads / a.rate));
  auto next = Clock::now();
  size_t i = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    const int k = mine[i++ % mine.size()];
    const std::string key = a.prefix + std::to_string(k);
    const auto sent = Clock::now();
    Outcome o;
    if (remote != nullptr) {
      absl::StatusOr<rl::Decision> d = remote->Check(policy, key);
      if (d.ok()) {
        o = {d->allowed, d->decided_by == rl::DecidedBy::kLimiter};
      } else {
        // An error reply (NOREPLICAS from a master with min-replicas-to-write): the application
        // decides it as it decides an outage, by its failure mode (a fallback user: allowed).
        o = {a.failure != "closed", false};
        g_errors.fetch_add(1, std::memory_order_relaxed);
      }
    } else {
      o = plain.Check(key);
    }
    KeyLedger& l = (*keys)[k];
    if (o.allowed) {
      ++l.admitted;
      g_admitted.fetch_add(1, std::memory_order_relaxed);
    } else {
      ++l.denied;
      if (l.admitted < a.limit) ++l.wrong_denied;
    }
    g_checks.fetch_add(1, std::memory_order_relaxed);
    const auto now = Clock::now();
    if (o.answered) {
      g_answered.fetch_add(1, std::memory_order_relaxed);
      l.EndOutage(now);
    } else {
      ++l.unanswered;
      g_unanswered.fetch_add(1, std::memory_order_relaxed);
      if (!l.in_outage) l.outage_start = sent;
      l.in_outage = true;
    }
    next += period;
    // Behind by more than 100 ms (a call that hung): carry on from now instead of bursting.
    if (now - next > std::chrono::milliseconds(100)) next = now;
    std::this_thread::sleep_until(next);
  }
  for (int k : mine) (*keys)[k].EndOutage(Clock::now());
}

bool WriteLedger(const Args& a, const std::vector<KeyLedger>& keys, int64_t elapsed_ms,
                 const rl::RemoteLimiterStats* stats) {
  FILE* f = std::fopen(a.out.c_str(), "w");
  if (f == nullptr) return false;
  int64_t unavailable = 0, longest = 0;
  for (const KeyLedger& l : keys) {
    unavailable = std::max(unavailable, l.unavailable_ms);
    longest = std::max(longest, l.longest_outage_ms);
  }
  std::fprintf(f, "{\"limit\": %lld, \"elapsed_ms\": %lld, \"unavailable_ms\": %lld, ",
               static_cast<long long>(a.limit), static_cast<long long>(elapsed_ms),
               static_cast<long long>(unavailable));
  std::fprintf(f, "\"longest_outage_ms\": %lld, \"errors\": %lld, ",
               static_cast<long long>(longest), static_cast<long long>(g_errors.load()));
  if (stats != nullptr) {
    std::fprintf(f, "\"timeouts\": %llu, \"unreplicated\": %llu, \"fallback_allowed\": %llu, ",
                 static_cast<unsigned long long>(stats->timeouts),
                 static_cast<unsigned long long>(stats->unreplicated),
                 static_cast<unsigned long long>(stats->fallback_allowed));
  }
  std::fprintf(f, "\"keys\": [");
  for (size_t k = 0; k < keys.size(); ++k) {
    const KeyLedger& l = keys[k];
    std::fprintf(f, "%s{\"admitted\": %lld, \"denied\": %lld, \"wrong_denied\": %lld, ",
                 k == 0 ? "" : ", ", static_cast<long long>(l.admitted),
                 static_cast<long long>(l.denied), static_cast<long long>(l.wrong_denied));
    std::fprintf(f, "\"unanswered\": %lld}", static_cast<long long>(l.unanswered));
  }
  std::fprintf(f, "]}\n");
  return std::fclose(f) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  Args a;
  if (!ParseArgs(argc, argv, &a)) return 2;
  rl::Policy policy;
  {
    absl::StatusOr<rl::Policy> p =
        rl::ParsePolicy("f", "SLIDING_LOG " + std::to_string(a.limit) + " " + a.window +
                                 (a.failure == "closed" ? " FAIL_CLOSED" : " FAIL_OPEN"));
    if (!p.ok()) {
      std::fprintf(stderr, "%s\n", p.status().ToString().c_str());
      return 2;
    }
    policy = *p;
  }
  std::unique_ptr<rl::RemoteLimiter> remote;
  if (a.client == "remote") {
    rl::RemoteLimiterOptions o;
    o.port = static_cast<uint16_t>(a.port);
    o.cluster_nodes = a.cluster;
    o.timeout = std::chrono::milliseconds(a.timeout_ms);
    o.wait_for_replicas = a.wait_replicas;
    o.connections = 2;
    if (a.failure == "fallback") o.fallback.instances = a.instances;
    absl::StatusOr<std::unique_ptr<rl::RemoteLimiter>> r = rl::RemoteLimiter::Create(o);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      return 2;
    }
    remote = std::move(*r);
  } else if (a.client != "plain" || a.port == 0) {
    std::fprintf(stderr, "--client is remote or plain (plain: single node, --port)\n");
    return 2;
  }
  std::vector<KeyLedger> keys(static_cast<size_t>(a.keys));
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < a.threads; ++t) {
    threads.emplace_back(RunThread, std::cref(a), t, remote.get(), std::cref(policy), &keys);
  }
  // stdin closing (the driver is done, or died) ends the run.
  std::thread stdin_watch([] {
    char buf[64];
    while (::read(0, buf, sizeof(buf)) > 0) {
    }
    g_stop.store(true);
  });
  stdin_watch.detach();
  while (!g_stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const int64_t ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    std::printf("progress %lld %lld %lld %lld %lld\n", static_cast<long long>(ms),
                static_cast<long long>(g_checks.load()), static_cast<long long>(g_admitted.load()),
                static_cast<long long>(g_answered.load()),
                static_cast<long long>(g_unanswered.load()));
    std::fflush(stdout);
    if (ms >= a.max_ms) g_stop.store(true);
  }
  for (std::thread& t : threads) t.join();
  const int64_t elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  rl::RemoteLimiterStats stats;
  if (remote) stats = remote->Stats();
  if (!WriteLedger(a, keys, elapsed, remote ? &stats : nullptr)) return 1;
  std::printf("done\n");
  std::fflush(stdout);
  return 0;
}

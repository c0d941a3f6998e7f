// One log line when the rate limiter becomes unreachable and one when it answers again, instead
// of a line per request: during an outage every request is decided without the limiter (by the
// local fallback at this instance's share of the limits, when one is configured, else by the
// policy's failure mode), and a line each would bury the log (and cost I/O) exactly when the
// service is under stress. The closing line says how the episode's checks were decided.
//
// In cluster mode an outage is one node's: while one master is down, checks of the keys it
// serves fail and every other check is answered, so "answered" cannot end it (that wrote a line
// per failed check). Each node's episode starts at its first failure and ends at the first
// answered check once that node has failed nothing for kQuietMs (it is back, or a replica took
// its slots over).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "rl/clock.h"
#include "rl/decision.h"
#include "rl/limit.h"

namespace rl_http {

class OutageLog {
 public:
  // How long a node must fail nothing before an answered check ends its episode (cluster mode).
  static constexpr int64_t kQuietMs = 1000;
  // Nodes tracked apart; failures naming further ones share one episode (a bound on memory).
  static constexpr size_t kMaxNodes = 64;

  // `clock` times the episode (not owned; null = rl::SteadyClock::Default()); `write` gets each
  // line without a newline (main writes it to stderr). `fallback_instances` > 0: the remote
  // limiter has a local fallback for that many instances (RemoteLimiterOptions::fallback), and
  // the lines say so. `cluster`: the limiter is a Redis Cluster (RemoteLimiterOptions::
  // cluster_nodes), whose outages are tracked per node.
  OutageLog(const rl::Clock* clock, std::function<void(std::string_view)> write,
            int64_t fallback_instances = 0, bool cluster = false);

  // A check the limiter could not answer (wired to RemoteLimiterOptions::on_failure, which is
  // called for each, on the calling thread). The first one of an episode logs its start and
  // cause. Cluster mode: the episode is that of the node `why` names (RemoteLimiter's statuses
  // name the node, "connect to 127.0.0.1:7001: ...").
  void Failure(const rl::Policy& policy, const absl::Status& why);
  // How such a check was decided: `decision` is the one the limiter returned for it, decided by
  // the local fallback (kFallback) or a failure mode (kFailOpen, kFailClosed). Counted for the
  // line that ends the episode of the failure this thread reported last; others are ignored.
  void Decided(const rl::Decision& decision);
  // A check the limiter answered. Ends the episode (cluster mode: each node's that has failed
  // nothing for kQuietMs): logs how long it lasted and how its checks were decided. Cheap when
  // there is no outage (one relaxed load).
  void Answered();

  bool in_outage() const { return open_.load(std::memory_order_relaxed) > 0; }

  // The node a status names: its first "host:port" word ("[::1]:7000" too), "" when none.
  static std::string NodeOf(const absl::Status& why);

 private:
  struct Episode {
    int64_t started_ms = 0;
    int64_t last_failure_ms = 0;
    uint64_t fallback_allowed = 0;
    uint64_t fallback_denied = 0;
    uint64_t allowed = 0;  // by a failure mode
    uint64_t denied = 0;
  };
  std::string StartLine(const std::string& node, const absl::Status& why) const;
  std::string EndLine(const std::string& node, const Episode& episode, int64_t now_ms) const;

  const rl::Clock* clock_;
  std::function<void(std::string_view)> write_;
  const int64_t fallback_instances_;
  const bool cluster_;
  std::atomic<int> open_{0};  // episodes open; changed only under mu_, read without it
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Episode> episodes_ ABSL_GUARDED_BY(mu_);  // by node
};

}  // namespace rl_http

// One log line when the rate limiter becomes unreachable and one when it answers again, instead
// of a line per request: during an outage every request is decided without the limiter (by the
// local fallback at this instance's share of the limits, when one is configured, else by the
// policy's failure mode), and a line each would bury the log (and cost I/O) exactly when the
// service is under stress. The closing line says how the episode's checks were decided.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "rl/clock.h"
#include "rl/decision.h"
#include "rl/limit.h"

namespace rl_http {

class OutageLog {
 public:
  // `clock` times the episode (not owned; null = rl::SteadyClock::Default()); `write` gets each
  // line without a newline (main writes it to stderr). `fallback_instances` > 0: the remote
  // limiter has a local fallback for that many instances (RemoteLimiterOptions::fallback), and
  // the lines say so.
  OutageLog(const rl::Clock* clock, std::function<void(std::string_view)> write,
            int64_t fallback_instances = 0);

  // A check the limiter could not answer (wired to RemoteLimiterOptions::on_failure, which is
  // called for each). The first one of an episode logs its start and cause.
  void Failure(const rl::Policy& policy, const absl::Status& why);
  // How such a check was decided: `decision` is the one the limiter returned for it, decided by
  // the local fallback (kFallback) or a failure mode (kFailOpen, kFailClosed). Counted for the
  // line that ends the episode; others are ignored.
  void Decided(const rl::Decision& decision);
  // A check the limiter answered. Ends an episode: logs how long it lasted and how its checks
  // were decided. Cheap when there is no outage (one relaxed load).
  void Answered();

  bool in_outage() const { return in_outage_.load(std::memory_order_relaxed); }

 private:
  const rl::Clock* clock_;
  std::function<void(std::string_view)> write_;
  const int64_t fallback_instances_;
  std::atomic<bool> in_outage_{false};  // changed only under mu_; read without it as a fast path
  absl::Mutex mu_;
  int64_t started_ms_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t fallback_allowed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t fallback_denied_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t allowed_ ABSL_GUARDED_BY(mu_) = 0;  // by a failure mode
  uint64_t denied_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rl_http

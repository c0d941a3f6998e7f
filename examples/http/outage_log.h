// One log line when the rate limiter becomes unreachable and one when it answers again, instead
// of a line per request: during an outage every request is decided by its policy's failure mode,
// and a line each would bury the log (and cost I/O) exactly when the service is under stress.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "rl/clock.h"
#include "rl/limit.h"

namespace rl_http {

class OutageLog {
 public:
  // `clock` times the episode (not owned; null = rl::SteadyClock::Default()); `write` gets each
  // line without a newline (main writes it to stderr).
  OutageLog(const rl::Clock* clock, std::function<void(std::string_view)> write);

  // A check decided by `policy`'s failure mode because the limiter was unavailable (wired to
  // RemoteLimiterOptions::on_failure). The first one of an episode logs its start and cause.
  void Failure(const rl::Policy& policy, const absl::Status& why);
  // A check the limiter answered. Ends an episode: logs how long it lasted and how many checks
  // the failure modes decided. Cheap when there is no outage (one relaxed load).
  void Answered();

  bool in_outage() const { return in_outage_.load(std::memory_order_relaxed); }

 private:
  const rl::Clock* clock_;
  std::function<void(std::string_view)> write_;
  std::atomic<bool> in_outage_{false};
  std::mutex mu_;
  int64_t started_ms_ = 0;  // guarded by mu_, as are the counts
  uint64_t allowed_ = 0;
  uint64_t denied_ = 0;
};

}  // namespace rl_http

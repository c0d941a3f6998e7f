// OutageLog: see outage_log.h.
#include "outage_log.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace rl_http {

OutageLog::OutageLog(const rl::Clock* clock, std::function<void(std::string_view)> write)
    : clock_(clock != nullptr ? clock : rl::SteadyClock::Default()), write_(std::move(write)) {}

void OutageLog::Failure(const rl::Policy& policy, const absl::Status& why) {
  std::string line;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool allowed = policy.failure_mode == rl::FailureMode::kFailOpen || policy.shadow;
    ++(allowed ? allowed_ : denied_);
    if (in_outage_.load(std::memory_order_relaxed)) return;
    in_outage_.store(true, std::memory_order_relaxed);
    started_ms_ = clock_->NowMs();
    line = absl::StrCat("rate limiter unavailable (", why.ToString(),
                        "): each policy's failure mode decides until it answers again");
  }
  write_(line);
}

void OutageLog::Answered() {
  if (!in_outage_.load(std::memory_order_relaxed)) return;
  std::string line;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!in_outage_.load(std::memory_order_relaxed)) return;
    in_outage_.store(false, std::memory_order_relaxed);
    line = absl::StrCat("rate limiter available again after ", clock_->NowMs() - started_ms_,
                        " ms; the failure modes decided ", allowed_ + denied_, " checks (",
                        allowed_, " allowed, ", denied_, " denied)");
    allowed_ = denied_ = 0;
  }
  write_(line);
}

}  // namespace rl_http

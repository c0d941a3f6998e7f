// OutageLog: see outage_log.h.
#include "outage_log.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace rl_http {

OutageLog::OutageLog(const rl::Clock* clock, std::function<void(std::string_view)> write,
                     int64_t fallback_instances)
    : clock_(clock != nullptr ? clock : rl::SteadyClock::Default()),
      write_(std::move(write)),
      fallback_instances_(fallback_instances) {}

void OutageLog::Failure(const rl::Policy& /*policy*/, const absl::Status& why) {
  if (in_outage_.load(std::memory_order_relaxed)) return;
  std::string line;
  {
    absl::MutexLock lock(&mu_);
    if (in_outage_.load(std::memory_order_relaxed)) return;
    in_outage_.store(true, std::memory_order_relaxed);
    started_ms_ = clock_->NowMs();
    fallback_allowed_ = fallback_denied_ = allowed_ = denied_ = 0;
    line = fallback_instances_ > 0
               ? absl::StrCat("rate limiter unavailable (", why.ToString(),
                              "): the local fallback decides at each policy's limits / ",
                              fallback_instances_,
                              " until it answers again (the failure mode where it cannot)")
               : absl::StrCat("rate limiter unavailable (", why.ToString(),
                              "): each policy's failure mode decides until it answers again");
  }
  write_(line);
}

void OutageLog::Decided(const rl::Decision& decision) {
  const rl::DecidedBy by = decision.decided_by;
  if (by != rl::DecidedBy::kFallback && by != rl::DecidedBy::kFailOpen &&
      by != rl::DecidedBy::kFailClosed) {
    return;
  }
  absl::MutexLock lock(&mu_);
  // Outside an episode (one that an answer from another thread just ended): nothing to add to.
  if (!in_outage_.load(std::memory_order_relaxed)) return;
  if (by == rl::DecidedBy::kFallback) {
    ++(decision.allowed ? fallback_allowed_ : fallback_denied_);
  } else {
    ++(decision.allowed ? allowed_ : denied_);
  }
}

void OutageLog::Answered() {
  if (!in_outage_.load(std::memory_order_relaxed)) return;
  std::string line;
  {
    absl::MutexLock lock(&mu_);
    if (!in_outage_.load(std::memory_order_relaxed)) return;
    in_outage_.store(false, std::memory_order_relaxed);
    line =
        absl::StrCat("rate limiter available again after ", clock_->NowMs() - started_ms_, " ms; ");
    if (fallback_instances_ > 0) {
      absl::StrAppend(&line, "the local fallback decided ", fallback_allowed_ + fallback_denied_,
                      " checks (", fallback_allowed_, " allowed, ", fallback_denied_,
                      " denied), the failure modes ", allowed_ + denied_, " (", allowed_,
                      " allowed, ", denied_, " denied)");
    } else {
      absl::StrAppend(&line, "the failure modes decided ", allowed_ + denied_, " checks (",
                      allowed_, " allowed, ", denied_, " denied)");
    }
  }
  write_(line);
}

}  // namespace rl_http

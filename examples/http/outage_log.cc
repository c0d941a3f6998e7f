// OutageLog: see outage_log.h.
#include "outage_log.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rl_http {
namespace {

// The node of the failure this thread reported last: Decided follows Failure on the thread that
// made the call (on_failure runs there, before the call returns its decision).
thread_local std::string last_failed_node;

}  // namespace

OutageLog::OutageLog(const rl::Clock* clock, std::function<void(std::string_view)> write,
                     int64_t fallback_instances, bool cluster)
    : clock_(clock != nullptr ? clock : rl::SteadyClock::Default()),
      write_(std::move(write)),
      fallback_instances_(fallback_instances),
      cluster_(cluster) {}

std::string OutageLog::NodeOf(const absl::Status& why) {
  const std::string message(why.message());
  for (absl::string_view word : absl::StrSplit(message, ' ', absl::SkipEmpty())) {
    while (!word.empty() && (word.back() == ':' || word.back() == ',' || word.back() == ')')) {
      word.remove_suffix(1);
    }
    const size_t colon = word.rfind(':');
    if (colon == absl::string_view::npos || colon == 0 || colon + 1 == word.size()) continue;
    bool port = true;
    for (char c : word.substr(colon + 1)) port = port && absl::ascii_isdigit(c);
    if (port) return std::string(word);
  }
  return "";
}

std::string OutageLog::StartLine(const std::string& node, const absl::Status& why) const {
  const std::string what =
      cluster_ ? absl::StrCat("rate limiter node ", node.empty() ? "(unnamed)" : node)
               : std::string("rate limiter");
  return fallback_instances_ > 0
             ? absl::StrCat(what, " unavailable (", why.ToString(),
                            "): the local fallback decides at each policy's limits / ",
                            fallback_instances_,
                            " until it answers again (the failure mode where it cannot)")
             : absl::StrCat(what, " unavailable (", why.ToString(),
                            "): each policy's failure mode decides until it answers again");
}

std::string OutageLog::EndLine(const std::string& node, const Episode& e, int64_t now_ms) const {
  std::string line =
      cluster_
          ? absl::StrCat("rate limiter node ", node.empty() ? "(unnamed)" : node,
                         " available again after ", now_ms - e.started_ms, " ms; ")
          : absl::StrCat("rate limiter available again after ", now_ms - e.started_ms, " ms; ");
  if (fallback_instances_ > 0) {
    absl::StrAppend(&line, "the local fallback decided ", e.fallback_allowed + e.fallback_denied,
                    " checks (", e.fallback_allowed, " allowed, ", e.fallback_denied,
                    " denied), the failure modes ", e.allowed + e.denied, " (", e.allowed,
                    " allowed, ", e.denied, " denied)");
  } else {
    absl::StrAppend(&line, "the failure modes decided ", e.allowed + e.denied, " checks (",
                    e.allowed, " allowed, ", e.denied, " denied)");
  }
  return line;
}

void OutageLog::Failure(const rl::Policy& /*policy*/, const absl::Status& why) {
  std::string node = cluster_ ? NodeOf(why) : std::string();
  std::string line;
  {
    absl::MutexLock lock(&mu_);
    if (!episodes_.contains(node) && episodes_.size() >= kMaxNodes) node.clear();
    const int64_t now = clock_->NowMs();
    auto [it, started] = episodes_.try_emplace(node);
    it->second.last_failure_ms = now;
    if (started) {
      it->second.started_ms = now;
      open_.store(static_cast<int>(episodes_.size()), std::memory_order_relaxed);
      line = StartLine(node, why);
    }
  }
  last_failed_node = std::move(node);
  if (!line.empty()) write_(line);
}

void OutageLog::Decided(const rl::Decision& decision) {
  const rl::DecidedBy by = decision.decided_by;
  if (by != rl::DecidedBy::kFallback && by != rl::DecidedBy::kFailOpen &&
      by != rl::DecidedBy::kFailClosed) {
    return;
  }
  absl::MutexLock lock(&mu_);
  // Outside an episode (one that an answer from another thread just ended): nothing to add to.
  auto it = episodes_.find(last_failed_node);
  if (it == episodes_.end()) return;
  Episode& e = it->second;
  if (by == rl::DecidedBy::kFallback) {
    ++(decision.allowed ? e.fallback_allowed : e.fallback_denied);
  } else {
    ++(decision.allowed ? e.allowed : e.denied);
  }
}

void OutageLog::Answered() {
  if (open_.load(std::memory_order_relaxed) == 0) return;
  std::vector<std::string> lines;
  {
    absl::MutexLock lock(&mu_);
    const int64_t now = clock_->NowMs();
    for (auto it = episodes_.begin(); it != episodes_.end();) {
      // One endpoint: any answer is its answer. A cluster: this answer may be another node's.
      if (cluster_ && now - it->second.last_failure_ms < kQuietMs) {
        ++it;
        continue;
      }
      lines.push_back(EndLine(it->first, it->second, now));
      episodes_.erase(it++);
    }
    open_.store(static_cast<int>(episodes_.size()), std::memory_order_relaxed);
  }
  for (const std::string& line : lines) write_(line);
}

}  // namespace rl_http

// An accept loop that runs out of file descriptors (EMFILE, ENFILE) or kernel memory must wait
// instead of retrying at once: the pending connection stays in the backlog, epoll reports the
// listening socket readable again immediately, and the loop would spin at 100% CPU while the
// new clients hang. AcceptBackoff retries after a short timer, logs once when such an episode
// starts and once when it ends, and counts the failed accepts. One per acceptor, used only on
// the acceptor's thread.
#pragma once

#include <fmt/core.h>

#include <atomic>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

namespace rl::server {

// Whether an accept failed for lack of descriptors or memory (retrying at once cannot help).
inline bool IsResourceExhaustion(const boost::system::error_code& ec) {
  namespace error = boost::asio::error;
  return ec == error::no_descriptors || ec == error::no_buffer_space || ec == error::no_memory ||
         ec == boost::system::error_code(ENFILE, boost::system::system_category());
}

class AcceptBackoff {
 public:
  // How long the loop waits before the next accept: short enough that clients are served soon
  // after descriptors free up, long enough that waiting costs no measurable CPU.
  static constexpr std::chrono::milliseconds kRetryDelay{100};

  // `what` names the listener in log lines ("clients", "metrics"); `failures` is bumped on
  // every accept that failed this way (may be shared by several acceptors).
  AcceptBackoff(boost::asio::io_context& ctx, std::string what, bool quiet,
                std::atomic<uint64_t>* failures)
      : timer_(ctx), what_(std::move(what)), quiet_(quiet), failures_(failures) {}

  // After a failed accept: when `ec` is exhaustion, schedules `retry` after kRetryDelay and
  // returns true (the caller must not accept again now); otherwise false.
  template <typename Retry>
  bool OnError(const boost::system::error_code& ec, Retry retry) {
    if (!IsResourceExhaustion(ec)) return false;
    failures_->fetch_add(1, std::memory_order_relaxed);
    if (!exhausted_) {
      exhausted_ = true;
      since_ = std::chrono::steady_clock::now();
      Log(fmt::format(
          "cannot accept {}: {}; new connections wait in the backlog, retrying every {} ms "
          "(raise the open-file limit, ulimit -n, or lower --maxclients)",
          what_, ec.message(), kRetryDelay.count()));
    }
    timer_.expires_after(kRetryDelay);
    timer_.async_wait([retry = std::move(retry)](const boost::system::error_code& wait_ec) {
      if (!wait_ec) retry();
    });
    return true;
  }

  // After a successful accept: ends an exhaustion episode.
  void OnSuccess() {
    if (!exhausted_) return;
    exhausted_ = false;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - since_)
                  .count();
    Log(fmt::format("accepting {} again after {} ms", what_, ms));
  }

  void Cancel() { timer_.cancel(); }

 private:
  void Log(const std::string& message) const {
    if (quiet_) return;
    fmt::print(stderr, "rl-server: {}\n", message);
    std::fflush(stderr);
  }

  boost::asio::steady_timer timer_;
  std::string what_;
  bool quiet_;
  std::atomic<uint64_t>* failures_;
  bool exhausted_ = false;
  std::chrono::steady_clock::time_point since_;
};

}  // namespace rl::server

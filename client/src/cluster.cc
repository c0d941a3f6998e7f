// ClusterTopology: see cluster.h.
#include "cluster.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/asio/ip/address.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "resp/writer.h"

namespace rl::client_internal {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// An IP address is used as it is; a name is looked up (blocking, on the calling thread: seeds at
// Start, announced hostnames when a map or a redirection first names them).
absl::StatusOr<std::vector<tcp::endpoint>> Resolve(asio::io_context& io,
                                                   const NodeAddress& address) {
  boost::system::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(address.host, ec);
  if (!ec) return std::vector<tcp::endpoint>{tcp::endpoint(ip, address.port)};
  tcp::resolver resolver(io);
  auto results = resolver.resolve(address.host, std::to_string(address.port), ec);
  if (ec || results.empty()) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", address.host, ": ", ec ? ec.message() : "no address"));
  }
  std::vector<tcp::endpoint> endpoints;
  for (const auto& entry : results) endpoints.push_back(entry.endpoint());
  return endpoints;
}

}  // namespace

ClusterTopology::ClusterTopology(asio::io_context& io, Options options)
    : io_(io), options_(std::move(options)) {}

ClusterTopology::~ClusterTopology() { Stop(); }

absl::Status ClusterTopology::Start() {
  if (options_.seeds.empty()) return absl::InvalidArgumentError("no cluster seed node");
  for (const NodeAddress& seed : options_.seeds) {
    absl::StatusOr<EndpointPool*> pool = Node(seed);
    if (!pool.ok()) return absl::InvalidArgumentError(pool.status().message());
    if (std::find(seeds_.begin(), seeds_.end(), *pool) == seeds_.end()) seeds_.push_back(*pool);
  }
  {
    SteadyLock lock(&refresh_mu_);
    requested_ = true;  // the first map, learned in the background
  }
  refresher_ = std::thread([this] { RefreshLoop(); });
  return absl::OkStatus();
}

void ClusterTopology::Stop() {
  {
    SteadyLock lock(&refresh_mu_);
    stopping_ = true;
  }
  if (refresher_.joinable()) refresher_.join();
}

EndpointPool* ClusterTopology::Route(int slot) {
  if (slot >= 0 && slot < kClusterSlots) {
    if (EndpointPool* owner = slots_[slot].load(std::memory_order_acquire)) return owner;
  }
  RequestRefresh();
  return AnySeed();
}

absl::StatusOr<EndpointPool*> ClusterTopology::Node(const NodeAddress& address) {
  const std::string key = address.ToString();
  {
    absl::MutexLock lock(&nodes_mu_);
    if (auto it = nodes_.find(key); it != nodes_.end()) return it->second.get();
    if (nodes_.size() >= kMaxNodes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("more than ", kMaxNodes, " cluster nodes named; not connecting to ", key));
    }
  }
  // Resolved outside the lock: a name lookup must not hold up other callers.
  absl::StatusOr<std::vector<tcp::endpoint>> endpoints = Resolve(io_, address);
  if (!endpoints.ok()) return endpoints.status();
  ConnectionOptions connection = options_.connection;
  connection.endpoints = *std::move(endpoints);
  connection.host = address.host;
  connection.name = absl::StrCat("cluster node ", key);
  absl::MutexLock lock(&nodes_mu_);
  std::unique_ptr<EndpointPool>& pool = nodes_[key];
  if (pool == nullptr) {
    pool = std::make_unique<EndpointPool>(io_, std::move(connection), options_.connections);
  }
  return pool.get();
}

void ClusterTopology::Moved(int slot, EndpointPool* owner) {
  if (slot >= 0 && slot < kClusterSlots) slots_[slot].store(owner, std::memory_order_release);
  SteadyLock lock(&refresh_mu_);
  requested_ = true;
  moved_ = true;
}

void ClusterTopology::RequestRefresh() {
  SteadyLock lock(&refresh_mu_);
  requested_ = true;
}

bool ClusterTopology::WaitForMap(Deadline deadline) {
  SteadyLock lock(&refresh_mu_);
  if (map_known_) return true;
  requested_ = true;
  // Until a map is known, or a refresh ends without one (no node answered: say so now rather
  // than at the deadline).
  const uint64_t attempts = attempts_;
  refresh_mu_.AwaitUntil(
      [this, attempts]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return map_known_ || stopping_ || attempts_ > attempts;
      },
      deadline);
  return map_known_;
}

std::vector<EndpointPool*> ClusterTopology::Masters() const {
  std::vector<EndpointPool*> masters;
  for (const auto& slot : slots_) {
    EndpointPool* owner = slot.load(std::memory_order_acquire);
    if (owner != nullptr && std::find(masters.begin(), masters.end(), owner) == masters.end()) {
      masters.push_back(owner);
    }
  }
  return masters;
}

std::vector<const EndpointPool*> ClusterTopology::Pools() const {
  absl::MutexLock lock(&nodes_mu_);
  std::vector<const EndpointPool*> pools;
  for (const auto& [name, pool] : nodes_) pools.push_back(pool.get());
  return pools;
}

void ClusterTopology::CloseAll(const absl::Status& status) {
  absl::MutexLock lock(&nodes_mu_);
  for (auto& [name, pool] : nodes_) pool->CloseAll(status);
}

void ClusterTopology::RefreshLoop() {
  const absl::Duration interval = options_.refresh_interval;
  absl::Duration pause = interval;
  SteadyLock lock(&refresh_mu_);
  for (;;) {
    refresh_mu_.Await([this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return requested_ || stopping_; });
    if (stopping_) return;
    requested_ = false;
    moved_ = false;
    refresh_mu_.Unlock();
    const Refreshed refreshed = RefreshOnce();
    refresh_mu_.Lock();
    if (refreshed != Refreshed::kNoAnswer) map_known_ = true;
    ++attempts_;
    pause = refreshed == Refreshed::kChanged
                ? interval
                : std::min(pause * 2, std::max(interval, kMaxRefreshPause));
    // Whatever asks for a refresh meanwhile is served by one refresh after the pause: at least
    // the interval, longer while nothing changes, unless a MOVED says something did.
    refresh_mu_.AwaitUntil([this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return stopping_; },
                           DeadlineAfter(interval));
    if (pause > interval) {
      refresh_mu_.AwaitUntil([this]()
                                 ABSL_NO_THREAD_SAFETY_ANALYSIS { return moved_ || stopping_; },
                             DeadlineAfter(pause - interval));
    }
  }
}

ClusterTopology::Refreshed ClusterTopology::RefreshOnce() {
  std::vector<EndpointPool*> candidates = Masters();
  for (EndpointPool* seed : seeds_) {
    if (std::find(candidates.begin(), candidates.end(), seed) == candidates.end()) {
      candidates.push_back(seed);
    }
  }
  // A different first node each time: one node that answers slowly or with a stale map does
  // not get asked first forever.
  std::rotate(candidates.begin(),
              candidates.begin() + next_candidate_.fetch_add(1) % candidates.size(),
              candidates.end());
  std::string command;
  resp::Writer(&command).Command({"CLUSTER", "SLOTS"});
  for (EndpointPool* pool : candidates) {
    if (pool->Unusable()) continue;  // failed a moment ago: do not add to its load
    absl::StatusOr<std::vector<resp::Value>> reply =
        pool->Execute(command, 1, options_.refresh_timeout);
    if (!reply.ok()) continue;
    absl::StatusOr<std::vector<SlotRange>> ranges =
        ParseClusterSlots(reply->front(), pool->options().host);
    if (!ranges.ok() || ranges->empty()) continue;
    return Install(*ranges) ? Refreshed::kChanged : Refreshed::kSame;
  }
  return Refreshed::kNoAnswer;
}

bool ClusterTopology::Install(const std::vector<SlotRange>& ranges) {
  std::vector<EndpointPool*> owners(kClusterSlots, nullptr);
  for (const SlotRange& range : ranges) {
    absl::StatusOr<EndpointPool*> pool = Node(range.master);
    if (!pool.ok()) continue;  // unknown owner: routed to a seed, which redirects
    std::fill(owners.begin() + range.first, owners.begin() + range.last + 1, *pool);
  }
  bool changed = false;
  for (int slot = 0; slot < kClusterSlots; ++slot) {
    changed |= slots_[slot].exchange(owners[slot], std::memory_order_acq_rel) != owners[slot];
  }
  refreshes_.fetch_add(1, std::memory_order_relaxed);
  return changed;
}

EndpointPool* ClusterTopology::AnySeed() {
  const size_t start = next_seed_.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < seeds_.size(); ++i) {
    EndpointPool* seed = seeds_[(start + i) % seeds_.size()];
    if (!seed->Unusable()) return seed;
  }
  return seeds_[start % seeds_.size()];
}

}  // namespace rl::client_internal

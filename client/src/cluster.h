// rl::RemoteLimiter's view of a Redis Cluster: which master serves each hash slot, and one
// connection pool (pool.h) per node, kept for the life of the limiter so a changed map never
// reconnects to nodes it already talks to.
//
// The map is learned with CLUSTER SLOTS by a refresher thread of its own, never on a caller's
// time: at start, and whenever a caller reports that the map looks stale (a MOVED, a node that
// failed, a CLUSTERDOWN). Requests are coalesced and refreshes are at least `refresh_interval`
// apart, so a failover seen by a thousand calls costs one CLUSTER SLOTS, not a thousand; while
// refreshes keep finding the same map (a node is down and not replaced yet) the pause doubles
// up to kMaxRefreshPause, unless a MOVED reports a change. The nodes that take over get their
// pool's connections once, lazily; the others keep theirs. A slot whose owner is unknown (before
// the first map) is sent to a seed node, which answers MOVED: callers never wait for the map.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "boost/asio/io_context.hpp"
#include "cluster_protocol.h"
#include "connection.h"
#include "pool.h"
#include "steady_time.h"

namespace rl::client_internal {

class ClusterTopology {
 public:
  struct Options {
    std::vector<NodeAddress> seeds;  // at least one
    // Password, back-off and clock for every node's connections (endpoints and name are set
    // per node).
    ConnectionOptions connection;
    size_t connections = 2;  // per node
    absl::Duration refresh_interval = absl::Milliseconds(100);
    absl::Duration refresh_timeout = absl::Milliseconds(500);  // one CLUSTER SLOTS
  };

  ClusterTopology(boost::asio::io_context& io, Options options);
  // Stop() must have been called, and the I/O thread must have closed every pool (CloseAll).
  ~ClusterTopology();
  ClusterTopology(const ClusterTopology&) = delete;
  ClusterTopology& operator=(const ClusterTopology&) = delete;

  // Resolves the seeds (InvalidArgument when one cannot be) and starts the refresher, which
  // asks for the map at once. Connects to nothing on the caller's thread.
  absl::Status Start();
  // Stops the refresher (waits for a CLUSTER SLOTS in flight, bounded by refresh_timeout).
  void Stop();

  // Any thread, lock-free: the pool of the master serving `slot`, or, while the map does not
  // know it, a seed's (whose MOVED then teaches it); a refresh is requested then.
  EndpointPool* Route(int slot);
  // Any thread: the pool for `address`, created on first use (the host resolved then).
  // Unavailable when it cannot be resolved, ResourceExhausted past kMaxNodes.
  absl::StatusOr<EndpointPool*> Node(const NodeAddress& address);
  // Any thread: a MOVED said `slot` is served by `owner` now; the rest of the map is probably
  // stale too, so a refresh is requested.
  void Moved(int slot, EndpointPool* owner);
  // Any thread: the map may be stale (a node failed or refused); coalesced, rate-limited.
  void RequestRefresh();
  // Any thread: waits until a map is known (requesting one), a refresh ends without one, or
  // `deadline`. Whether a map is known.
  bool WaitForMap(Deadline deadline);
  // Any thread: the distinct masters of the current map.
  std::vector<EndpointPool*> Masters() const;
  // Any thread: every pool, for statistics.
  std::vector<const EndpointPool*> Pools() const;
  // I/O thread: closes every pool's connections.
  void CloseAll(const absl::Status& status);

  uint64_t refreshes() const { return refreshes_.load(std::memory_order_relaxed); }

  // Nodes (pools) one limiter will ever hold: a cluster that names more is not trusted.
  static constexpr size_t kMaxNodes = 1000;
  // The longest pause between refreshes that find nothing new (or no node to ask): a long
  // outage costs each client one CLUSTER SLOTS a second.
  static constexpr absl::Duration kMaxRefreshPause = absl::Seconds(1);

 private:
  void RefreshLoop();
  enum class Refreshed { kNoAnswer, kSame, kChanged };
  // One CLUSTER SLOTS from the first node that answers (masters of the current map first, then
  // the seeds, starting at a different one each time), installed.
  Refreshed RefreshOnce();
  // Whether any slot changed owner.
  bool Install(const std::vector<SlotRange>& ranges);
  // A seed not in its back-off (round-robin), for slots the map does not know.
  EndpointPool* AnySeed();

  boost::asio::io_context& io_;
  const Options options_;
  std::vector<EndpointPool*> seeds_;  // set by Start, then read-only

  // Owner per slot, null = unknown. Pools are never destroyed while the limiter lives, so a
  // pointer read here stays valid; a refresh that races a MOVED can only make a slot stale
  // again, which the next MOVED corrects.
  std::array<std::atomic<EndpointPool*>, kClusterSlots> slots_{};

  mutable absl::Mutex nodes_mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<EndpointPool>> nodes_ ABSL_GUARDED_BY(nodes_mu_);

  SteadyMutex refresh_mu_;
  bool requested_ ABSL_GUARDED_BY(refresh_mu_) = false;
  bool moved_ ABSL_GUARDED_BY(refresh_mu_) = false;  // a MOVED since the last refresh
  bool stopping_ ABSL_GUARDED_BY(refresh_mu_) = false;
  bool map_known_ ABSL_GUARDED_BY(refresh_mu_) = false;
  uint64_t attempts_ ABSL_GUARDED_BY(refresh_mu_) = 0;  // refreshes finished, learned or not
  std::thread refresher_;

  std::atomic<uint64_t> refreshes_{0};
  std::atomic<size_t> next_seed_{0};
  std::atomic<size_t> next_candidate_{0};
};

}  // namespace rl::client_internal

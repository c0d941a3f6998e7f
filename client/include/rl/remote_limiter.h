// rl::RemoteLimiter: what rl::Limiter does — checks, refunds and charges, concurrency leases —
// answered by an rl-server over RESP (or by a Redis Cluster whose nodes load rl.so) so every
// instance of a fleet shares one count. Calls are synchronous for the caller (Check, CheckMany,
// Acquire also come in asynchronous forms for services on an event loop: AsyncCheck, ...) and
// bounded by a per-call timeout of tens of milliseconds; when the server is down or too slow, a
// local fallback (when configured) decides at this instance's share of the limits, else each
// policy's FailureMode (fail-open: allow and count the failure; fail-closed: deny). Connections are
// pooled, concurrent calls are pipelined on them, and a lost server is reconnected to on its own
// once it is back.
//
// Cluster mode (cluster_nodes): each call goes to the master serving its key's hash slot (the
// key sent is the user's key, so one check is one slot; RL.RELEASE names the key too); the slot map
// is learned from the seeds and kept current from MOVED replies and background CLUSTER SLOTS
// refreshes; ASK is followed for the one command; CheckMany sends each node its checks in one
// pipelined batch, all nodes at once, within one timeout. A node that cannot answer decides only
// its own keys' checks (the fallback, when configured, decides those).
//
// State: a policy's state lives under the policy's name and the key (plus each limit's algorithm
// and window) in both modes, the same state `RL.CHECK key POLICY name` and the in-process
// Limiter::Check(policy, key) use: one policy name and key are one count whoever asks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rl/clock.h"
#include "rl/decision.h"
#include "rl/lease.h"
#include "rl/limit.h"
#include "rl/rate_limiter.h"

namespace rl {

struct RemoteLimiterOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 6380;
  // Cluster mode when not empty: "host:port" of some nodes of a Redis Cluster whose nodes load
  // rl.so ("[::1]:7000" for IPv6); host and port above are then unused. Any node will do (one is
  // enough; more keep a restarted service able to find the cluster when some are down): the
  // rest is discovered.
  std::vector<std::string> cluster_nodes;
  // Cluster mode: at least this long between two slot-map refreshes (CLUSTER SLOTS), however
  // many calls see a MOVED or a failed node; they are served by one refresh. While refreshes
  // find nothing new (a node is down and not replaced yet), the pause doubles up to 1 s.
  std::chrono::milliseconds cluster_refresh_interval{100};
  // Connections in the pool (in cluster mode, per node); calls are spread round-robin and
  // pipelined on each. Synchronous calls to one node (Check, and CheckMany of one node's keys)
  // first try one of up to as many more blocking connections, each lent to one calling thread at
  // a time, which writes and reads itself: no hand-over to the I/O thread and back.
  size_t connections = 2;
  // Whole-call budget: connecting (when needed), sending, and the reply.
  std::chrono::milliseconds timeout{50};
  // After a connection fails, calls routed to it fail immediately (no waiting for the timeout)
  // for this long; the next call after it tries to reconnect.
  std::chrono::milliseconds reconnect_backoff{100};
  // Sent as HELLO 3 AUTH default <password> on every new connection when non-empty.
  std::string password;
  // How a policy reaches the server. Both keep the state under the policy's name and the key.
  //   kInline sends `RL.CHECK <key> POLICY <name> <limits...>`: the caller's limits and shadow
  //     flag are the truth (the server needs no configuration); the client applies shadow mode.
  //   kServerPolicy sends `RL.CHECK <key> POLICY <name>`: the server's stored definition (its
  //     limits and its shadow flag) decides; only the name of the caller's Policy is used, plus
  //     its failure mode (and shadow flag) when the server cannot be asked.
  // Connections speak RESP3 (HELLO 3) in both modes, so a reply can say shadow_denied.
  enum class PolicyMode { kInline, kServerPolicy };
  PolicyMode policy_mode = PolicyMode::kInline;
  // When > 0, RL.CHECK and RL.RESET are followed by `WAIT <n> <ms>` on the same connection (one
  // WAIT per node per call, giving up after 3/4 of the time left), and a check counts as
  // answered only once n replicas have its state: what the caller was told then survives a
  // kill -9 of the master that answered. Fewer acknowledgements in time -> decided as for an
  // unreachable server, by the fallback or the FailureMode (the master may have counted it;
  // Stats().unreplicated). Needs Redis with rl.so and replicas (rl-server has no WAIT). With 0,
  // a failover started with CLUSTER FAILOVER keeps every answered count, but a crash may lose
  // the last few milliseconds' (Redis replicates asynchronously).
  int wait_for_replicas = 0;
  // Retry-After given to callers denied because the server could not be reached (fail-closed).
  int64_t fail_closed_retry_after_ms = 1000;
  // A local fallback for outages, off while `instances` is 0. While the server (in cluster mode:
  // the master of a check's key; other keys are answered as usual) cannot answer a check in
  // time, an in-process rl::Limiter decides it at this instance's share of the policy's limits:
  // LIMIT and BURST divided by `instances`, rounded down but never below 1 (limits are >= 1), so
  // `instances` copies of the service together admit about the policy's limits (at most them,
  // or one per instance when a limit is smaller than the count). Its decisions are real ones:
  // decided_by = kFallback, with the share's limit, remaining, retry_after_ms and reset_after_ms
  // (fit for rate-limit headers); a shadow policy still never denies. The policy's FailureMode
  // decides instead when the fallback cannot: the Policy carries no limits (a name-only policy in
  // kServerPolicy mode; with limits, the caller's copy is used, as the server's definition cannot
  // be asked), the cost fits the policy's capacity but not the share's, or the local limiter is
  // at max_keys with nothing it may evict (a new key then). CheckMany decides each check on its
  // own, as the server does. The local state is not dropped when an outage ends: it expires by
  // itself like any Limiter state, so a server that flaps does not hand out a fresh share per
  // flap, and each instance admits at most its share per window on its own however many outages
  // the window holds. It starts empty (it never knows the server's count), so in the window an
  // outage begins each instance may admit its share on top of what the server already counted.
  // Peek and Reset reach only the server.
  // Acquire uses the fallback too: a CONCURRENCY limit's share is its LIMIT divided the same way
  // (at most n / instances leases at once per instance, each with the policy's LEASE ttl); the
  // fallback's lease is an in-process one, released locally. Refund and Charge never do (they
  // report the outage as an error: see Refund).
  struct Fallback {
    int64_t instances = 0;
    // Bound on the local states (one per key and limit of a policy); past it, expired and little
    // used states are evicted first (see LimiterOptions::overflow).
    size_t max_keys = 100'000;
  };
  Fallback fallback;
  // Called (on the calling thread) for every check, acquire, refund and charge the server did not
  // answer (checks and acquires are then decided by the fallback or by a FailureMode, refunds and
  // charges return the error; not for releases, which name no policy): the place to raise an
  // alarm. Must be cheap and thread-safe.
  std::function<void(const Policy& policy, const absl::Status& why)> on_failure;
  // Time for the reconnect back-off, the fallback's limiter and WallNowMs; not owned, null =
  // SteadyClock::Default(). The call timeout is real time whatever the clock: it bounds a wait on
  // the network.
  const Clock* clock = nullptr;
};

struct RemoteLimiterStats {
  uint64_t checks = 0;    // Check/Peek calls
  uint64_t acquires = 0;  // Acquire calls
  uint64_t refunds = 0;   // Refund calls
  uint64_t charges = 0;   // Charge calls
  uint64_t answered = 0;  // checks, acquires, refunds and charges the server answered
  // Server unavailable, and no fallback or one that could not decide: the FailureMode decided
  // (checks and acquires).
  uint64_t failed_open = 0;    // by FailureMode::kFailOpen
  uint64_t failed_closed = 0;  // by FailureMode::kFailClosed
  // Refunds and charges the server could not be reached for (returned as errors; one that timed
  // out may still have been applied late).
  uint64_t settles_lost = 0;
  // RL.RELEASE sent (Lease::Release, a lease's destructor, Release by id), and those the server
  // did not confirm because it could not be reached in time: such a lease ends by its ttl.
  uint64_t releases = 0;
  uint64_t release_failures = 0;
  // Calls that ran out of time (checks and acquires then decided by the fallback or a
  // FailureMode; refunds, charges and releases returned DeadlineExceeded).
  uint64_t timeouts = 0;
  uint64_t server_errors = 0;  // error replies (-ERR ...), returned as absl errors
  uint64_t connects = 0;       // successful (re)connects (all nodes)
  uint64_t connection_failures = 0;
  // Cluster mode:
  uint64_t redirects = 0;           // MOVED and ASK replies followed
  uint64_t slot_map_refreshes = 0;  // slot maps learned (CLUSTER SLOTS)
  uint64_t nodes = 0;               // nodes the client holds a pool for
  // wait_for_replicas: checks the master answered but too few replicas acknowledged in time.
  uint64_t unreplicated = 0;
  // Fallback: checks and acquires it decided (server unavailable; a shadow policy's are
  // allowed), and the states it holds now, lease sets included (they expire by themselves).
  uint64_t fallback_allowed = 0;
  uint64_t fallback_denied = 0;
  uint64_t fallback_keys = 0;
};

class RemoteLimiter final : public RateLimiter {
 public:
  // Resolves the server's address (cluster mode: every seed's) and starts the I/O thread; does
  // not connect on the caller's thread (the first call does; in cluster mode a background thread
  // starts learning the slot map at once), so a service can start while its limiter is down.
  // Fails for a bad address.
  static absl::StatusOr<std::unique_ptr<RemoteLimiter>> Create(RemoteLimiterOptions options);
  // Synchronous calls still in flight must have returned before destruction; asynchronous ones
  // complete in it (see AsyncCheck).
  ~RemoteLimiter() override;
  RemoteLimiter(const RemoteLimiter&) = delete;
  RemoteLimiter& operator=(const RemoteLimiter&) = delete;

  // RL.CHECK. Server unavailable, too slow, or refusing our credentials -> the fallback decides
  // (when configured and able to), else the policy's FailureMode (see FailureDecision). An error
  // reply to the request itself (bad limit, unknown policy) -> that error. A shadow policy never
  // denies: a denial becomes allowed with Decision::shadow_denied (kInline: the caller's flag;
  // kServerPolicy: the server's; the fallback: the caller's).
  absl::StatusOr<Decision> Check(const Policy& policy, std::string_view key,
                                 int64_t cost = 1) override;
  // Several checks in one round trip (pipelined on one connection, one timeout for all): for a
  // request that must pass a route policy and a tenant policy. Results are in request order.
  // Cluster mode: one pipelined batch per node, all sent before any is waited for; a node that
  // fails decides only the checks routed to it (by the fallback or the FailureMode, each check
  // on its own).
  struct Request {
    const Policy* policy;
    std::string_view key;
    int64_t cost = 1;
  };
  std::vector<absl::StatusOr<Decision>> CheckMany(absl::Span<const Request> requests);

  // Asynchronous Check, CheckMany and Acquire, for a service that runs on an event loop (the
  // HTTP example's handlers): they return at once, having waited for nothing (no thread is
  // blocked per call), and `done` is called exactly once with what the synchronous form would
  // have returned, within the timeout (plus scheduling): a server that is down, stopped or slow
  // is decided by the fallback or the FailureMode at the deadline, as for Check, and on_failure
  // is told. Cluster mode works as for the synchronous forms (each node's checks in one batch,
  // MOVED and ASK followed within the same timeout).
  //  - `done` runs on the limiter's I/O thread (also for a request refused without asking), so
  //    it must be short and must not block or make synchronous calls on this limiter: hand the
  //    rest to the service's own executor (asio::post). The async forms of this limiter may be
  //    called from it.
  //  - Each request's `policy` must stay valid until `done` has been called; keys are copied.
  //  - Calls still in flight when the limiter is destroyed complete in its destructor (as for an
  //    unreachable server); none may be started during or after it.
  using CheckCallback = std::function<void(absl::StatusOr<Decision>)>;
  using CheckManyCallback = std::function<void(std::vector<absl::StatusOr<Decision>>)>;
  using AcquireCallback = std::function<void(absl::StatusOr<Lease>)>;
  void AsyncCheck(const Policy& policy, std::string_view key, int64_t cost, CheckCallback done);
  void AsyncCheckMany(absl::Span<const Request> requests, CheckManyCallback done);
  void AsyncAcquire(const Policy& policy, std::string_view key, int64_t cost, AcquireCallback done);
  // RL.REFUND / RL.CHARGE (inline mode: `RL.REFUND <key> POLICY <name> <limits...> COST n`;
  // kServerPolicy: `... POLICY <name> COST n`): give back up to `amount`, or take it even into
  // debt (see Limiter::Refund, Limiter::Charge); the answer is what a check of cost 0 would get
  // right after, shadow mode applied as for Check. amount < 0 -> InvalidArgument, not sent. An
  // error reply (a LEAKY_BUCKET refund, a CONCURRENCY limit, amount > 2^40, an unknown policy)
  // -> that error, and nothing changed.
  // Server unavailable, too slow or refusing our credentials -> that status (Unavailable,
  // DeadlineExceeded, PermissionDenied), counted in Stats().settles_lost and reported to
  // on_failure. Never a FailureMode or fallback decision: a settlement has no safe default to
  // invent, and the caller must know the server's count did not move. Not retried (a retry of
  // one that timed out could apply it twice): DeadlineExceeded means it may have been applied
  // late, and with wait_for_replicas an Unavailable "WAIT: ..." means the master applied it but
  // too few replicas acknowledged. The local fallback's state is not touched either.
  absl::StatusOr<Decision> Refund(const Policy& policy, std::string_view key,
                                  int64_t amount) override;
  absl::StatusOr<Decision> Charge(const Policy& policy, std::string_view key,
                                  int64_t amount) override;
  // RL.CHECK ... MAXWAIT (see Limiter::ChargeWithin): a check that may queue. Admitted when the
  // server's limits can serve `amount` now or, on bucket limits, within `max_wait_ms` (charged
  // into debt; retry_after_ms = the wait before proceeding); otherwise denied, nothing taken.
  // A check in all else: an unavailable server is decided by the FailureMode or the fallback
  // (whose check does not queue), counted in Stats().checks.
  absl::StatusOr<Decision> ChargeWithin(const Policy& policy, std::string_view key, int64_t amount,
                                        int64_t max_wait_ms);

  // RL.ACQUIRE: a lease of the policy's CONCURRENCY limit, all or nothing with its rate limits
  // ("at most 3 exports at once and 20 per hour"), shared by every client of the server: the
  // lease lives on the server (cluster mode: on the key's master) and its id is lease.id(). The
  // returned rl::Lease releases itself when destroyed (RL.RELEASE, see Release below); this
  // RemoteLimiter must outlive it; the destructor does not wait for the server (see
  // ReleaseWithoutWaiting). Proceed on decision().allowed, not held(): a shadow policy's
  // denial comes back allowed without a lease, and so does a fail-open outage. An error reply
  // (no CONCURRENCY limit, a bad limit, an unknown policy) -> that error.
  // Server unavailable, too slow, or refusing our credentials (counted and reported like a
  // check's):
  //  - with the fallback: an in-process lease of this instance's share of the CONCURRENCY limit
  //    (and of the rate limits), decided_by = kFallback. Why: a fleet whose server is down still
  //    runs at most about n things at once (each instance its n / instances), where fail-open
  //    would run any number and fail-closed none. It is released locally (never on the server,
  //    which never knew of it), and ends by its ttl like any lease.
  //  - else the FailureMode: kFailOpen allowed without a lease (nothing is held, so nothing
  //    needs releasing), kFailClosed denied (retry_after_ms = fail_closed_retry_after_ms).
  // An acquire the server answers too late may still have taken a slot there: it ends by its
  // LEASE ttl (so keep LEASE to the longest the work may take, not much longer).
  absl::StatusOr<Lease> Acquire(const Policy& policy, std::string_view key,
                                int64_t cost = 1) override;
  // RL.RELEASE <key> <lease_id>: true when the lease was held, false when it had already ended.
  // What a lease's Release() and destructor call; also for an id handed over by Detach() (a lease
  // the fallback granted is released locally). Bounded like every call: at most `timeout`, and at
  // once during the reconnect back-off, so a destructor never blocks for longer. Server
  // unavailable -> that status (Unavailable, DeadlineExceeded), counted in
  // Stats().release_failures: the lease stays held on the server until its ttl ends it (a
  // Lease's Release() then returns false). A malformed id, or one issued for another key ->
  // InvalidArgument (the server's error; an empty id or one over 128 bytes is refused without
  // asking). Not retried and not covered by wait_for_replicas: a
  // lost release only holds a slot until the ttl, never grants one too many.
  absl::StatusOr<bool> Release(std::string_view key, std::string_view lease_id) override;
  // What a lease's destructor calls: RL.RELEASE sent, not waited for (counted in
  // Stats().releases, and in release_failures when the server does not confirm it within the
  // timeout; such a lease ends by its ttl). A lease the fallback granted is released locally.
  void ReleaseWithoutWaiting(std::string_view key, std::string_view lease_id) override;

  // RL.PEEK: what Check would answer, changing nothing. Unavailability is an error here.
  absl::StatusOr<Decision> Peek(const Policy& policy, std::string_view key, int64_t cost = 1);
  // RL.RESET: removes the policy's state for `key`; returns how many states existed.
  absl::StatusOr<int64_t> Reset(const Policy& policy, std::string_view key);
  // PING round trip (health checks, warming the pool). Cluster mode: every master of the slot
  // map (learned first if still unknown) must answer.
  absl::Status Ping();

  int64_t WallNowMs() const override;
  RemoteLimiterStats Stats() const;

  // The decision made without the server, which says only what is known. decided_by is
  // kFailOpen (allowed) or kFailClosed (denied, retry_after_ms = fail_closed_retry_after_ms;
  // a shadow policy is allowed instead, with shadow_denied). No limit was evaluated: count is 0,
  // and limit, remaining and reset_after_ms are 0, meaning unknown, not "a limit of 0" (with
  // kServerPolicy the client may not even know the limits). Callers must not print rate-limit
  // headers from it.
  Decision FailureDecision(const Policy& policy) const;

 private:
  class Impl;
  explicit RemoteLimiter(std::unique_ptr<Impl> impl);
  // Refund (refund = true) or Charge.
  absl::StatusOr<Decision> Settle(bool refund, const Policy& policy, std::string_view key,
                                  int64_t amount);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rl

// rl::Lease: what Limiter::Acquire (and RateLimiter::Acquire: rl::RemoteLimiter's leases live on
// its server) hands out for a CONCURRENCY limit ("at most 3 exports at once"). A granted lease
// holds one of the limit's slots until it is released — by Release(), by its destructor, or by the
// limiter itself once the lease's ttl has run out (a holder that died cannot hold a slot for
// ever). Movable, not copyable: exactly one owner releases it.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "rl/decision.h"

namespace rl {

class Limiter;

// What a Lease asks to end it: the limiter that granted it (rl::Limiter, or rl::RemoteLimiter,
// which asks its server). One interface, so a lease is one type whichever back end granted it.
class LeaseIssuer {
 public:
  virtual ~LeaseIssuer() = default;
  // Ends lease `lease_id` of `key`: true when it was held, false when it had already ended
  // (released, or past its ttl); an error when the id is not one of this issuer's for `key`, or
  // (remote) when the server could not be told.
  virtual absl::StatusOr<bool> Release(std::string_view key, std::string_view lease_id) = 0;
  // Ends lease `lease_id` of `key` without waiting to learn whether it was held: what a Lease's
  // destructor calls, so a destructor never waits on a network. An in-process limiter simply
  // releases it; rl::RemoteLimiter sends RL.RELEASE and returns at once (bounded by its timeout;
  // one that is lost ends by the lease's ttl).
  virtual void ReleaseWithoutWaiting(std::string_view key, std::string_view lease_id) {
    (void)Release(key, lease_id);
  }
};

class Lease {
 public:
  // Holds nothing.
  Lease() = default;
  // For LeaseIssuer implementations: a lease `issuer` granted as `id` for `key`, or (null issuer)
  // the answer to an acquire that took no slot. `issuer` must outlive a held lease.
  Lease(LeaseIssuer* issuer, std::string key, std::string id, const Decision& decision)
      : issuer_(issuer), key_(std::move(key)), id_(std::move(id)), decision_(decision) {}
  // Releases the lease if this object still holds it, without waiting for the answer
  // (LeaseIssuer::ReleaseWithoutWaiting).
  ~Lease();
  Lease(Lease&& other) noexcept;
  // Releases what this object held (as the destructor does), then takes `other`'s lease.
  Lease& operator=(Lease&& other) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  // True while this object holds a granted lease (not yet released or detached). A denied
  // acquire holds nothing; so does an allowed one that took no slot (a shadow policy's denial,
  // or a new state the full limiter could not store: Decision::decided_by says which).
  bool held() const { return issuer_ != nullptr; }
  explicit operator bool() const { return held(); }
  // The answer to the acquire, exactly as Limiter::Check shapes it (the CONCURRENCY limit is one
  // of its limits: its remaining is the slots left, its retry_after_ms when the soonest lease
  // ends by itself).
  const Decision& decision() const { return decision_; }
  // The lease id (what RL.ACQUIRE replies and RL.RELEASE takes); empty when nothing was granted.
  const std::string& id() const { return id_; }
  const std::string& key() const { return key_; }

  // Ends the lease now and frees its slot. True when the limiter still held it (false when its
  // ttl had already run out, when this object held nothing, or when the issuer could not be told:
  // a remote limiter's server that cannot be reached ends the lease by its ttl). Waits for the
  // answer (a remote limiter's round trip); the destructor does not.
  bool Release();
  // Stops managing the lease without ending it and returns its id: it stays held until released
  // by id (Limiter::Release, RL.RELEASE) or until its ttl runs out.
  std::string Detach();

 private:
  friend class Limiter;  // applies shadow mode to decision_
  void ReleaseWithoutWaiting();

  LeaseIssuer* issuer_ = nullptr;  // not owned; must outlive a held lease
  std::string key_;
  std::string id_;
  Decision decision_;
};

}  // namespace rl

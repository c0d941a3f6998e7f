// rl::Lease: what Limiter::Acquire hands out for a CONCURRENCY limit ("at most 3 exports at
// once"). A granted lease holds one of the limit's slots until it is released — by Release(), by
// its destructor, or by the limiter itself once the lease's ttl has run out (a holder that died
// cannot hold a slot for ever). Movable, not copyable: exactly one owner releases it.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "rl/decision.h"

namespace rl {

class Limiter;

class Lease {
 public:
  // Holds nothing.
  Lease() = default;
  // Releases the lease if this object still holds it.
  ~Lease();
  Lease(Lease&& other) noexcept;
  // Releases what this object held, then takes `other`'s lease.
  Lease& operator=(Lease&& other) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  // True while this object holds a granted lease (not yet released or detached). A denied
  // acquire holds nothing; so does an allowed one that took no slot (a shadow policy's denial,
  // or a new state the full limiter could not store: Decision::decided_by says which).
  bool held() const { return limiter_ != nullptr; }
  explicit operator bool() const { return held(); }
  // The answer to the acquire, exactly as Limiter::Check shapes it (the CONCURRENCY limit is one
  // of its limits: its remaining is the slots left, its retry_after_ms when the soonest lease
  // ends by itself).
  const Decision& decision() const { return decision_; }
  // The lease id (what RL.ACQUIRE replies and RL.RELEASE takes); empty when nothing was granted.
  const std::string& id() const { return id_; }
  const std::string& key() const { return key_; }

  // Ends the lease now and frees its slot. True when the limiter still held it (false when its
  // ttl had already run out, or when this object held nothing).
  bool Release();
  // Stops managing the lease without ending it and returns its id: it stays held until released
  // by id (Limiter::Release, RL.RELEASE) or until its ttl runs out.
  std::string Detach();

 private:
  friend class Limiter;
  Lease(Limiter* limiter, std::string key, std::string id, const Decision& decision)
      : limiter_(limiter), key_(std::move(key)), id_(std::move(id)), decision_(decision) {}

  Limiter* limiter_ = nullptr;  // not owned; must outlive a held lease
  std::string key_;
  std::string id_;
  Decision decision_;
};

}  // namespace rl

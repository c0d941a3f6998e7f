// Concurrency leases (a CONCURRENCY limit): the live leases of one (scope, key) in a compact heap
// buffer, and the lease ids handed to callers.
//
// A lease is a random 64-bit nonce and an expiry; a set holds at most a CONCURRENCY limit's worth
// (kMaxConcurrency), so lookups scan. Split into Evaluate / Add / Remove so the limiter can
// evaluate every limit of an RL.ACQUIRE first and add the lease only when all of them allow (all
// or nothing). Not thread-safe: the store locks.
//
// A lease id is 40 lowercase hex digits: the nonce, the scope's id (rl::ScopeId: which policy's
// leases, 0 for inline limits) and a 32-bit tag of the user's key, so RL.RELEASE finds the set
// from (key, id) alone and refuses an id that was issued for another key. The nonce comes from
// the kernel's CSPRNG (getrandom), so ids cannot be guessed from earlier ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "rl/decision.h"
#include "rl/limit.h"

namespace rl::internal {

struct LeaseBuf;

// What an acquire of one more lease answers at `now_ms` (leases with expiry <= now_ms have
// ended and do not count; reset_after_ms counts the new lease when allowed). `*expiry_ms`
// receives when every lease held now will have ended (now_ms when none). Null = no leases.
LimitResult LeaseEvaluate(const LeaseBuf* buf, const Limit& limit, int64_t now_ms,
                          int64_t* expiry_ms);
// Drops ended leases and adds (nonce, expiry_ms); returns the (possibly new or reallocated)
// buffer.
LeaseBuf* LeaseAdd(LeaseBuf* buf, uint64_t nonce, int64_t expiry_ms, int64_t now_ms);
// Drops ended leases and the lease `nonce`; true when it was live.
bool LeaseRemove(LeaseBuf* buf, uint64_t nonce, int64_t now_ms);
// Leases held (ended ones included until the next Add or Remove drops them).
size_t LeaseCount(const LeaseBuf* buf);
// When every lease will have ended (the latest expiry); `now_ms` when none is live.
int64_t LeaseExpiry(const LeaseBuf* buf, int64_t now_ms);
size_t LeaseBytes(const LeaseBuf* buf);
void LeaseFree(LeaseBuf* buf);
LeaseBuf* LeaseClone(const LeaseBuf* buf);
// Serialization: every lease as (nonce, expiry ms), in the order held.
void LeaseEntries(const LeaseBuf* buf, std::vector<std::pair<uint64_t, int64_t>>* out);
// Rebuilds a set from entries (snapshots, decoding); null when empty.
LeaseBuf* LeaseFromEntries(const std::vector<std::pair<uint64_t, int64_t>>& entries);

// A new unguessable nonce (never 0).
uint64_t NewLeaseNonce();
// The id of lease `nonce` of scope `scope_id` under `key`.
std::string FormatLeaseId(uint64_t scope_id, std::string_view key, uint64_t nonce);
struct LeaseId {
  uint64_t scope_id;
  uint64_t nonce;
};
// Parses an id for `key`: InvalidArgument when it is not a lease id at all or was issued for
// another key. Untrusted input: never crashes.
absl::StatusOr<LeaseId> ParseLeaseId(std::string_view id, std::string_view key);

}  // namespace rl::internal

// rl.so's bound on new keys. Redis evicts keys once its memory passes `maxmemory`, and every rl
// key has a TTL (its states' expiry), so under eviction a flood of new keys would free the states
// that are actively limiting someone: a key at its limit gets a fresh allowance. rl.so stops
// before that: past a share of `maxmemory` (and, optionally, a count of keys) a command that
// would create a new key does not store it and the overflow mode decides it, as rl-server's
// --overflow does for its own store; keys that exist keep being enforced as usual. States that
// arrive by replication or while loading (RL.SETSTATE from a master or the AOF) are never refused.
//
//   loadmodule rl.so [MAXMEMORY-SHARE 0.8] [MAX-KEYS n] [OVERFLOW fail-open|fail-closed]
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "redis_module_api.h"
#include "rl/decision.h"
#include "rl/limit.h"

namespace rl::module {

class Admission {
 public:
  // One load argument pair. NotFound when `name` is not one of ours; InvalidArgument (naming the
  // accepted values) when `value` is bad.
  absl::Status SetOption(std::string_view name, std::string_view value);

  // Whether a new key may be stored now. `ctx_flags`: RedisModule_GetContextFlags(ctx); what a
  // master replicates or the AOF replays is always admitted.
  bool AdmitNewKey(RedisModuleCtx* ctx, int ctx_flags) const;

  FailureMode overflow() const { return overflow_; }
  // A command whose new key was not stored (decided by the overflow mode).
  void CountOverflow() { ++overflows_; }
  uint64_t overflows() const { return overflows_; }
  double maxmemory_share() const { return share_; }
  uint64_t max_keys() const { return max_keys_; }

 private:
  // Below 1 so that Redis never reaches maxmemory (and evicts) through new rl keys: the rest is
  // headroom for the keys that exist (a sliding log grows with its requests), client buffers
  // and whatever else the server holds.
  double share_ = 0.8;
  uint64_t max_keys_ = 0;  // 0 = no bound on DBSIZE
  FailureMode overflow_ = FailureMode::kFailOpen;
  uint64_t overflows_ = 0;
};

// The module's one instance (configured in OnLoad, read on the main thread).
Admission& Admissions();

// "fail-open" / "fail-closed", as rl-server's --overflow spells them.
std::string_view OverflowModeName(FailureMode mode);

// The decision of a check whose new state could not be stored under fail-closed: denied,
// consuming nothing; each limit reports remaining 0 and a retry of its window, at most a second
// (room appears as keys expire, which rl.so cannot foresee). `fresh` is the decision the check
// got on a fresh state.
Decision Refused(const Decision& fresh);

}  // namespace rl::module

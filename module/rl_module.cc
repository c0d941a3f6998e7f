// rl.so: rl's engine as a Redis module. RL.CHECK, RL.PEEK, RL.RESET, RL.REFUND, RL.CHARGE,
// RL.ACQUIRE, RL.RELEASE, RL.POLICY and CL.THROTTLE with rl-server's grammar, replies and errors
// (the shared command layer, command/), on state held in the Redis key named by the user's key
// (one key, one hash slot: its penalty blocks and leases too), carried by Redis replication,
// persistence and Redis Cluster. This file holds the commands' handlers and the engine they run
// on; registration.cc loads the module and registers them.
#include <optional>
#include <string>

#include "admission.h"
#include "apply.h"
#include "cell_keys.h"
#include "commands.h"
#include "glue.h"
#include "policies.h"
#include "policy_sync.h"
#include "propagation.h"
#include "redis_module_api.h"
#include "rl/ascii.h"
#include "rl/command/commands.h"
#include "rl/command/docs.h"
#include "rl/key_state.h"
#include "state_type.h"

namespace rl::module {
namespace {

using command::Acquired;
using command::ReleaseRequest;
using command::Request;
using command::ThrottleRequest;
using command::Verb;

Counters g_counters;

// The command layer's Engine over one Redis key: the state of key args[1].
class KeyEngine {
 public:
  // `ctx_flags`: RedisModule_GetContextFlags(ctx).
  KeyEngine(RedisModuleCtx* ctx, RedisModuleString* key, int ctx_flags)
      : ctx_(ctx), key_(key), ctx_flags_(ctx_flags) {}

  absl::StatusOr<Decision> Check(const Request& r) {
    if (r.max_wait_ms >= 0) return Adjust(r, /*refund=*/false);
    return Consume(r.scope, r.limits, r.cost, r.shadow, r.policy.get());
  }
  absl::StatusOr<Decision> Peek(const Request& r) {
    StateKey key(ctx_, key_, REDISMODULE_READ);
    if (!key.status().ok()) return key.status();
    return key.state().Peek(r.scope, r.limits, r.cost, Clock().NowMs());
  }
  absl::StatusOr<int64_t> Reset(const Request& r) {
    StateKey key(ctx_, key_, REDISMODULE_READ | REDISMODULE_WRITE);
    if (!key.status().ok()) return key.status();
    const size_t removed = key.state().Reset(r.scope, r.limits);
    Written(key, removed > 0, Clock().NowMs(), Of(Effect::Op::kReset, r));
    return static_cast<int64_t>(removed);
  }
  absl::StatusOr<Decision> Refund(const Request& r) { return Adjust(r, /*refund=*/true); }
  absl::StatusOr<Decision> Charge(const Request& r) { return Adjust(r, /*refund=*/false); }
  // The lease lives in the key's state: the key's expiry covers it, and a replica takes the same
  // lease id (RL.APPLY carries it).
  absl::StatusOr<Acquired> Acquire(const Request& r) {
    StateKey key(ctx_, key_, REDISMODULE_READ | REDISMODULE_WRITE);
    if (!key.status().ok()) return key.status();
    const int64_t now = Clock().NowMs();
    const bool carried = Carry(key, r.policy.get(), now);
    bool changed = false;
    Acquired a;
    absl::StatusOr<Decision> d =
        key.state().Acquire(r.scope, r.key, r.limits, r.cost, now, &a.lease_id, &changed);
    Effect effect = Of(Effect::Op::kAcquire, r);
    effect.lease_id = a.lease_id;
    effect.whole = carried;
    const bool overflowed = Overflowed(key, changed);
    if (!overflowed) Written(key, changed || carried, now, effect);
    if (!d.ok()) return d.status();
    if (overflowed) {
      a.lease_id.clear();  // allowed without a lease under fail-open, as rl-server
      if (Admissions().overflow() == FailureMode::kFailClosed) *d = Refused(*d);
    }
    Count(*d, r.shadow);
    if (!a.lease_id.empty()) ++g_counters.leases_acquired;
    a.decision = *d;
    return a;
  }
  absl::StatusOr<bool> Release(const ReleaseRequest& r) {
    StateKey key(ctx_, key_, REDISMODULE_READ | REDISMODULE_WRITE);
    if (!key.status().ok()) return key.status();
    const int64_t now = Clock().NowMs();
    bool changed = false;
    absl::StatusOr<bool> held = key.state().Release(r.key, r.lease_id, now, &changed);
    Effect effect;
    effect.op = Effect::Op::kRelease;
    effect.lease_id = r.lease_id;
    Written(key, changed, now, effect);
    if (!held.ok()) return held;
    if (*held) ++g_counters.leases_released;
    return held;
  }
  // A key of another type (WRONGTYPE, before anything changed) that holds redis-cell's state (a
  // plain string, cell_keys.h) is taken over, and the call runs again on it.
  absl::StatusOr<Decision> Throttle(const ThrottleRequest& t) {
    const absl::Span<const Limit> limits = absl::MakeConstSpan(&t.limit, 1);
    absl::StatusOr<Decision> d = Consume(command::kThrottleScope, limits, t.quantity, false);
    if (d.ok() || !absl::IsFailedPrecondition(d.status())) return d;
    const std::optional<int64_t> cell_tat_ns =
        TakeCellState(ctx_, key_, Clock().NowMs(), MustPropagate(ctx_flags_));
    if (!cell_tat_ns) return d;
    return Consume(command::kThrottleScope, limits, t.quantity, false, nullptr, &*cell_tat_ns);
  }
  int64_t WallNowMs() { return RedisModule_Milliseconds(); }

 private:
  // A change to a key that does not exist yet would create it: past the bound (admission.h) it
  // is not stored (the StateKey frees it) and the overflow mode decides the command.
  bool Overflowed(const StateKey& key, bool changed) {
    if (!changed || key.stored() || Admissions().AdmitNewKey(ctx_, ctx_flags_)) return false;
    Admissions().CountOverflow();
    return true;
  }
  // A stored policy whose window changed: the key's states follow it first (KeyState::CarryOver).
  // True when that changed the key. (Only a stored key carries, so never past the bound.)
  static bool Carry(StateKey& key, const Policy* policy, int64_t now) {
    return policy != nullptr && key.state().CarryOver(*policy, now);
  }
  // After a change to the key's state by `effect` (even one that ended in an error: it may have
  // dropped what had ended): store, expire and replicate it (see StateKey::Commit).
  void Written(StateKey& key, bool changed, int64_t now, const Effect& effect) {
    if (!changed) return;
    key.Commit(now, MustPropagate(ctx_flags_), effect);
    ++g_counters.writes;
  }
  static Effect Of(Effect::Op op, const Request& r) {
    Effect e;
    e.op = op;
    e.scope = r.scope;
    e.limits = r.limits;
    e.cost = r.cost;
    return e;
  }
  static void Count(const Decision& d, bool shadow) {
    ++g_counters.checks;
    if (d.allowed) {
      ++g_counters.allowed;
    } else if (shadow) {
      ++g_counters.shadow_denied;
    } else {
      ++g_counters.denied;
    }
  }
  absl::StatusOr<Decision> Adjust(const Request& r, bool refund) {
    StateKey key(ctx_, key_, REDISMODULE_READ | REDISMODULE_WRITE);
    if (!key.status().ok()) return key.status();
    const int64_t now = Clock().NowMs();
    const bool carried = Carry(key, r.policy.get(), now);
    bool changed = false;
    // MAXWAIT (a check that may queue) is a charge that applies only within the wait; what it
    // changed replicates as the charge it was.
    absl::StatusOr<Decision> d =
        refund ? key.state().Refund(r.scope, r.limits, r.cost, now, &changed)
        : r.max_wait_ms >= 0
            ? key.state().ChargeWithin(r.scope, r.limits, r.cost, r.max_wait_ms, now, &changed)
            : key.state().Charge(r.scope, r.limits, r.cost, now, &changed);
    // A charge that cannot be stored is answered as computed, uncounted (no mode denies it).
    if (!Overflowed(key, changed)) {
      Effect effect = Of(refund ? Effect::Op::kRefund : Effect::Op::kCharge, r);
      effect.whole = carried;
      Written(key, changed || carried, now, effect);
    }
    if (!d.ok()) return d;
    if (r.max_wait_ms >= 0) {
      Count(*d, r.shadow);  // a check that may queue counts as a check
    } else {
      ++(refund ? g_counters.refunds : g_counters.charges);
    }
    return d;
  }
  // `cell_tat_ns`: redis-cell's state just taken from the key (CL.THROTTLE), seeded first; the
  // key then replicates whole (replicas saw the string deleted) and counts as no new key.
  absl::StatusOr<Decision> Consume(std::string_view scope, absl::Span<const Limit> limits,
                                   int64_t cost, bool shadow, const Policy* policy = nullptr,
                                   const int64_t* cell_tat_ns = nullptr) {
    StateKey key(ctx_, key_, REDISMODULE_READ | REDISMODULE_WRITE);
    if (!key.status().ok()) return key.status();
    return ConsumeOn(key, scope, limits, cost, shadow, policy, cell_tat_ns);
  }
  // Consume on the opened key. Every return is `d`, so the decision is built in the caller's
  // slot rather than copied out (it holds every limit's result).
  absl::StatusOr<Decision> ConsumeOn(StateKey& key, std::string_view scope,
                                     absl::Span<const Limit> limits, int64_t cost, bool shadow,
                                     const Policy* policy, const int64_t* cell_tat_ns) {
    const int64_t now = Clock().NowMs();
    const bool adopted =
        cell_tat_ns != nullptr && SeedCellState(key.state(), scope, limits[0], *cell_tat_ns, now);
    const bool carried = Carry(key, policy, now) || adopted;
    bool changed = false;
    absl::StatusOr<Decision> d = key.state().Check(scope, limits, cost, now, &changed);
    Effect effect;
    effect.scope = scope;
    effect.limits = limits;
    effect.cost = cost;
    effect.whole = carried;
    const bool overflowed = !adopted && Overflowed(key, changed);
    if (!overflowed) Written(key, changed || carried, now, effect);
    if (!d.ok()) return d;
    // Fail-open: the answer a first call gets, not counted.
    if (overflowed && Admissions().overflow() == FailureMode::kFailClosed) *d = Refused(*d);
    Count(*d, shadow);
    return d;
  }

  RedisModuleCtx* ctx_;
  RedisModuleString* key_;
  int ctx_flags_;
};

// Built once: the command layer takes it by reference on every call.
const command::PolicyLookup& Lookup() {
  static const command::PolicyLookup lookup = [](std::string_view name) {
    return Policies().Get(name);
  };
  return lookup;
}

// The last parsed limit list (limit_cache.h): clients repeat theirs with every check. One for the
// module: Redis runs module commands one at a time (on its main thread, or under the module GIL).
command::LimitCache* Limits() {
  static command::LimitCache cache;
  return &cache;
}

// Every keyed command: one read of the context flags serves the reply protocol and replication;
// `run` is the command layer's function for it.
template <class Run>
int OnKey(RedisModuleCtx* ctx, RedisModuleString** argv, int argc, Run run) {
  const int flags = RedisModule_GetContextFlags(ctx);
  ModuleSink w(ctx, flags);
  KeyEngine engine(ctx, argv[1], flags);
  run(engine, w, Views(argv, argc));
  return REDISMODULE_OK;
}

int Check(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return OnKey(ctx, argv, argc, [](auto& e, auto& w, ArgViews a) {
    command::RunCheck(e, w, Verb::kCheck, a, Lookup(), Limits());
  });
}

int Peek(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return OnKey(ctx, argv, argc, [](auto& e, auto& w, ArgViews a) {
    command::RunCheck(e, w, Verb::kPeek, a, Lookup(), Limits());
  });
}

int Reset(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return OnKey(ctx, argv, argc, [](auto& e, auto& w, ArgViews a) {
    command::RunReset(e, w, a, Lookup(), Limits());
  });
}

int Refund(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return OnKey(ctx, argv, argc, [](auto& e, auto& w, ArgViews a) {
    command::RunAdjust(e, w, Verb::kRefund, a, Lookup(), Limits());
  });
}

int Charge(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return OnKey(ctx, argv, argc, [](auto& e, auto& w, ArgViews a) {
    command::RunAdjust(e, w, Verb::kCharge, a, Lookup(), Limits());
  });
}

int Acquire(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return OnKey(ctx, argv, argc, [](auto& e, auto& w, ArgViews a) {
    command::RunAcquire(e, w, a, Lookup(), Limits());
  });
}

int Release(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return OnKey(ctx, argv, argc, [](auto& e, auto& w, ArgViews a) { command::RunRelease(e, w, a); });
}

int Throttle(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return OnKey(ctx, argv, argc,
               [](auto& e, auto& w, ArgViews a) { command::RunThrottle(e, w, a); });
}

// A client's change publishes the node's whole set as a new version (policy_sync.h): replicated
// as RL.POLICYSET and sent to every node of a cluster. What an earlier version's primary streams
// or its AOF replays is RL.POLICY SET/DEL as sent: applied as it was then, the version kept, and
// a window without a unit keeps the meaning it had there (milliseconds). This version refuses
// such text from clients (FromUpstream: propagation.h).
int PolicySet(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  const int flags = RedisModule_GetContextFlags(ctx);
  const bool upstream = FromUpstream(flags);
  const BareDuration bare = upstream ? BareDuration::kMilliseconds : BareDuration::kRefused;
  ModuleSink w(ctx, flags);
  const ArgViews args = Views(argv, argc);
  bool ok = false;
  struct Registry {
    bool upstream;
    bool* ok;
    absl::Status Set(Policy p) {
      absl::Status s = upstream ? Policies().SetUnversioned(std::move(p))
                                : Policies().Set(std::move(p), MyNodeId());
      *ok = s.ok();
      return s;
    }
  } registry{upstream, &ok};
  command::RunPolicySet(registry, w, args, bare);
  if (ok && upstream) RedisModule_ReplicateVerbatim(ctx);
  if (ok && !upstream) PublishedHere(ctx);
  return REDISMODULE_OK;
}

// Replicated only when a policy was deleted: a call that changes nothing replicates nothing.
int PolicyDel(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  const bool upstream = FromUpstream(RedisModule_GetContextFlags(ctx));
  ModuleSink w(ctx);
  const ArgViews args = Views(argv, argc);
  bool deleted = false;
  struct Registry {
    bool upstream;
    bool* deleted;
    bool Delete(std::string_view name) {
      return *deleted = upstream ? Policies().DeleteUnversioned(name)
                                 : Policies().Delete(name, MyNodeId());
    }
  } registry{upstream, &deleted};
  command::RunPolicyDel(registry, w, args);
  if (deleted && upstream) RedisModule_ReplicateVerbatim(ctx);
  if (deleted && !upstream) PublishedHere(ctx);
  return REDISMODULE_OK;
}

int PolicyGet(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  ModuleSink w(ctx);
  command::RunPolicyGet(Policies(), w, Views(argv, argc));
  return REDISMODULE_OK;
}

int PolicyList(RedisModuleCtx* ctx, RedisModuleString**, int) {
  ModuleSink w(ctx);
  command::RunPolicyList(Policies(), w);
  return REDISMODULE_OK;
}

int PolicyHelp(RedisModuleCtx* ctx, RedisModuleString**, int) {
  ModuleSink w(ctx);
  command::CommandDoc doc = *command::FindRlCommandDoc("rl.policy");
  for (const command::CommandDoc& sub : PolicySyncDocs()) doc.subcommands.push_back(sub);
  command::RunHelp(w, doc);
  return REDISMODULE_OK;
}

}  // namespace

// No default: -Wswitch (an error here) names a row this module does not serve.
RedisModuleCmdFunc HandlerFor(command::CommandId id) {
  using command::CommandId;
  switch (id) {
    case CommandId::kCheck:
      return Check;
    case CommandId::kPeek:
      return Peek;
    case CommandId::kReset:
      return Reset;
    case CommandId::kRefund:
      return Refund;
    case CommandId::kCharge:
      return Charge;
    case CommandId::kAcquire:
      return Acquire;
    case CommandId::kRelease:
      return Release;
    case CommandId::kPolicy:
      return nullptr;  // a container: Redis dispatches to its subcommands
    case CommandId::kPolicySet:
      return PolicySet;
    case CommandId::kPolicyGet:
      return PolicyGet;
    case CommandId::kPolicyDel:
      return PolicyDel;
    case CommandId::kPolicyList:
      return PolicyList;
    case CommandId::kPolicyHelp:
      return PolicyHelp;
    case CommandId::kThrottle:
      return Throttle;
  }
  return nullptr;
}

const Counters& ModuleCounters() { return g_counters; }

NodeClock& Clock() {
  static NodeClock clock;
  return clock;
}

}  // namespace rl::module

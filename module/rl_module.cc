// rl.so: rl's engine as a Redis module. RL.CHECK, RL.PEEK, RL.RESET, RL.REFUND, RL.CHARGE,
// RL.ACQUIRE, RL.RELEASE, RL.POLICY and CL.THROTTLE with rl-server's grammar, replies and errors
// (the shared command layer, command/), on state held in the Redis key named by the user's key
// (one key, one hash slot: its penalty blocks and leases too), carried by Redis replication,
// persistence and Redis Cluster.
//
//   redis-server --loadmodule /path/rl.so [POLICIES /path/rl.toml] [MAXMEMORY-SHARE 0.8]
//                [MAX-KEYS n] [OVERFLOW fail-open|fail-closed]
#include <string>

#include "admission.h"
#include "apply.h"
#include "command_info.h"
#include "glue.h"
#include "permissions.h"
#include "policies.h"
#include "propagation.h"
#include "redis_module_api.h"
#include "rl/ascii.h"
#include "rl/command/commands.h"
#include "rl/command/docs.h"
#include "rl/key_state.h"
#include "rl/version.h"
#include "state_type.h"

namespace rl::module {
namespace {

using command::Acquired;
using command::ReleaseRequest;
using command::Request;
using command::ThrottleRequest;
using command::Verb;

// Counters for INFO rl (module commands run on the main thread; relaxed is plenty).
struct Counters {
  uint64_t checks = 0;
  uint64_t allowed = 0;
  uint64_t denied = 0;
  uint64_t shadow_denied = 0;
  uint64_t writes = 0;
  uint64_t refunds = 0;
  uint64_t charges = 0;
  uint64_t leases_acquired = 0;
  uint64_t leases_released = 0;
} g_counters;

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
  absl::StatusOr<Decision> Throttle(const ThrottleRequest& t) {
    return Consume(command::kThrottleScope, absl::MakeConstSpan(&t.limit, 1), t.quantity, false);
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
  absl::StatusOr<Decision> Consume(std::string_view scope, absl::Span<const Limit> limits,
                                   int64_t cost, bool shadow, const Policy* policy = nullptr) {
    StateKey key(ctx_, key_, REDISMODULE_READ | REDISMODULE_WRITE);
    if (!key.status().ok()) return key.status();
    const int64_t now = Clock().NowMs();
    const bool carried = Carry(key, policy, now);
    bool changed = false;
    absl::StatusOr<Decision> d = key.state().Check(scope, limits, cost, now, &changed);
    Effect effect;
    effect.scope = scope;
    effect.limits = limits;
    effect.cost = cost;
    effect.whole = carried;
    const bool overflowed = Overflowed(key, changed);
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

// Policy definitions are deterministic, so they replicate (and reach the AOF) as sent. What a
// primary sends or the AOF replays may come from an earlier version, where a window without a
// unit meant milliseconds: it keeps that meaning. This version refuses such text from clients, so
// whatever it replicates itself has units.
int PolicySet(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  const int flags = RedisModule_GetContextFlags(ctx);
  const BareDuration bare =
      (flags & (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING)) != 0
          ? BareDuration::kMilliseconds
          : BareDuration::kRefused;
  ModuleSink w(ctx, flags);
  const ArgViews args = Views(argv, argc);
  bool ok = false;
  struct Registry {
    bool* ok;
    absl::Status Set(Policy p) {
      absl::Status s = Policies().Set(std::move(p));
      *ok = s.ok();
      return s;
    }
  } registry{&ok};
  command::RunPolicySet(registry, w, args, bare);
  if (ok) RedisModule_ReplicateVerbatim(ctx);
  return REDISMODULE_OK;
}

// Replicated only when a policy was deleted: a call that changes nothing replicates nothing.
int PolicyDel(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  ModuleSink w(ctx);
  const ArgViews args = Views(argv, argc);
  bool deleted = false;
  struct Registry {
    bool* deleted;
    bool Delete(std::string_view name) { return *deleted = Policies().Delete(name); }
  } registry{&deleted};
  command::RunPolicyDel(registry, w, args);
  if (deleted) RedisModule_ReplicateVerbatim(ctx);
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
  command::RunHelp(w, *command::FindRlCommandDoc("rl.policy"));
  return REDISMODULE_OK;
}

RedisModuleCmdFunc HandlerFor(std::string_view name) {
  static constexpr std::pair<std::string_view, RedisModuleCmdFunc> kHandlers[] = {
      {"rl.check", Check},           {"rl.peek", Peek},
      {"rl.reset", Reset},           {"cl.throttle", Throttle},
      {"rl.refund", Refund},         {"rl.charge", Charge},
      {"rl.acquire", Acquire},       {"rl.release", Release},
      {"rl.policy|set", PolicySet},  {"rl.policy|get", PolicyGet},
      {"rl.policy|del", PolicyDel},  {"rl.policy|list", PolicyList},
      {"rl.policy|help", PolicyHelp}};
  for (const auto& [n, h] : kHandlers) {
    if (n == name) return h;
  }
  return nullptr;
}

// Redis command flags from the shared rows: every writer is "write deny-oom" (refused with OOM
// over maxmemory) but RL.RELEASE, which only frees; RL.PEEK is "readonly" (served by replicas in
// READONLY mode).
std::string FlagsFor(const command::CommandDoc& doc) {
  std::string flags;
  if (doc.flags & command::kDocWrite) {
    flags = (doc.flags & command::kDocNoDenyOom) ? "write" : "write deny-oom";
  }
  if (doc.flags & command::kDocReadonly) flags = "readonly";
  if (doc.flags & command::kDocFast) flags += flags.empty() ? "fast" : " fast";
  return flags;
}

bool RegisterCommands(RedisModuleCtx* ctx) {
  if (!RegisterApply(ctx)) return false;  // what replicas and the AOF receive (apply.h)
  for (const command::CommandDoc& doc : command::RlCommandDocs()) {
    const int key = doc.first_key;
    if (doc.subcommands.empty()) {
      if (RedisModule_CreateCommand(ctx, doc.name.c_str(), HandlerFor(doc.name),
                                    FlagsFor(doc).c_str(), key, key, key) == REDISMODULE_ERR) {
        return false;
      }
      // The info also carries the arity Redis checks before the handler runs.
      if (!SetCommandInfo(RedisModule_GetCommand(ctx, doc.name.c_str()), doc)) return false;
      continue;
    }
    if (RedisModule_CreateCommand(ctx, doc.name.c_str(), nullptr, "", 0, 0, 0) == REDISMODULE_ERR) {
      return false;
    }
    RedisModuleCommand* parent = RedisModule_GetCommand(ctx, doc.name.c_str());
    if (!SetCommandInfo(parent, doc)) return false;
    for (const command::CommandDoc& sub : doc.subcommands) {
      const std::string name = sub.name.substr(sub.name.find('|') + 1);
      if (RedisModule_CreateSubcommand(parent, name.c_str(), HandlerFor(sub.name),
                                       FlagsFor(sub).c_str(), 0, 0, 0) == REDISMODULE_ERR) {
        return false;
      }
      // Without the info Redis checks no arity and `RL.POLICY GET` (no name) would reach the
      // handler, which reads args[2]. GetCommand finds a subcommand by its full name.
      if (!SetCommandInfo(RedisModule_GetCommand(ctx, sub.name.c_str()), sub)) return false;
    }
  }
  // What replicas and the AOF receive instead of RL.CHECK (see state_type.h), guarded as
  // RESTORE is (permissions.h). "admin": kept out of MONITOR, and @dangerous where a server gives
  // module commands ACL categories; "deny-script": a script could not be held to the caller's ACL.
  return RedisModule_CreateCommand(ctx, "rl.setstate", GuardedSetStateCommand,
                                   "write deny-oom admin deny-script", 1, 1, 1) == REDISMODULE_OK;
}

void Info(RedisModuleInfoCtx* ctx, int) {
  RedisModule_InfoAddSection(ctx, "");
  RedisModule_InfoAddFieldCString(ctx, "version", RL_VERSION_STRING);
  RedisModule_InfoAddFieldLongLong(ctx, "checks", static_cast<long long>(g_counters.checks));
  RedisModule_InfoAddFieldLongLong(ctx, "allowed", static_cast<long long>(g_counters.allowed));
  RedisModule_InfoAddFieldLongLong(ctx, "denied", static_cast<long long>(g_counters.denied));
  RedisModule_InfoAddFieldLongLong(ctx, "shadow_denied",
                                   static_cast<long long>(g_counters.shadow_denied));
  RedisModule_InfoAddFieldLongLong(ctx, "state_writes", static_cast<long long>(g_counters.writes));
  RedisModule_InfoAddFieldLongLong(ctx, "refunds", static_cast<long long>(g_counters.refunds));
  RedisModule_InfoAddFieldLongLong(ctx, "charges", static_cast<long long>(g_counters.charges));
  RedisModule_InfoAddFieldLongLong(ctx, "leases_acquired",
                                   static_cast<long long>(g_counters.leases_acquired));
  RedisModule_InfoAddFieldLongLong(ctx, "leases_released",
                                   static_cast<long long>(g_counters.leases_released));
  RedisModule_InfoAddFieldLongLong(ctx, "policies",
                                   static_cast<long long>(Policies().List().size()));
  RedisModule_InfoAddFieldLongLong(ctx, "rejected_loads", static_cast<long long>(RejectedLoads()));
  // New keys refused past the bound (admission.h), decided by the overflow mode.
  RedisModule_InfoAddFieldLongLong(ctx, "overflows",
                                   static_cast<long long>(Admissions().overflows()));
  RedisModule_InfoAddFieldCString(ctx, "overflow_mode",
                                  std::string(OverflowModeName(Admissions().overflow())).c_str());
  // Replayed changes (RL.APPLY) that did not reach the state the primary reported.
  RedisModule_InfoAddFieldLongLong(ctx, "apply_mismatches",
                                   static_cast<long long>(ApplyMismatches()));
  RedisModule_InfoAddFieldLongLong(ctx, "wall_clock_steps",
                                   static_cast<long long>(WallClockSteps()));
  RedisModule_InfoAddFieldLongLong(ctx, "wall_clock_step_ms",
                                   static_cast<long long>(WallClockStepMs()));
  // 1 while state changes are replicated for replicas or a backlog (the AOF adds to it).
  RedisModule_InfoAddFieldLongLong(ctx, "downstream", DownstreamActive() ? 1 : 0);
}

}  // namespace

NodeClock& Clock() {
  static NodeClock clock;
  return clock;
}

}  // namespace rl::module

extern "C" __attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx* ctx,
                                                                         RedisModuleString** argv,
                                                                         int argc) {
  using namespace rl::module;
  if (RedisModule_Init(ctx, "rl", RL_VERSION_NUMBER, REDISMODULE_APIVER_1) == REDISMODULE_ERR) {
    return REDISMODULE_ERR;
  }
  if (const char* missing = rl::redis_module::FirstMissingFunction(); missing != nullptr) {
    RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                    "rl: this server lacks %s (rl.so needs Redis 7.0 or later)", missing);
    return REDISMODULE_ERR;
  }
  // Load arguments: POLICIES <file> and the bound on new keys (admission.h), as name-value pairs.
  // (Views reads each argument's pointer and length in order; `std::string(StringPtrLen(a, &len),
  // len)` may read len before the call fills it.)
  const ArgViews load_args = Views(argv, argc);
  for (size_t i = 0; i < load_args.size(); i += 2) {
    const bool policies = rl::EqualsIgnoreCase(load_args[i], "POLICIES");
    const absl::Status s = i + 1 >= load_args.size() ? absl::NotFoundError("no value")
                           : policies ? Policies().LoadFile(std::string(load_args[i + 1]))
                                      : Admissions().SetOption(load_args[i], load_args[i + 1]);
    if (s.ok()) continue;
    if (absl::IsNotFound(s) && (!policies || i + 1 >= load_args.size())) {
      RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                      "rl: unknown load argument '%s' (usage: [POLICIES /path/rl.toml] "
                      "[MAXMEMORY-SHARE 0.8] [MAX-KEYS n] [OVERFLOW fail-open|fail-closed])",
                      rl::EchoToken(load_args[i]).c_str());
    } else {
      RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING, "rl: %s%s",
                      policies ? "cannot load policies: " : "", std::string(s.message()).c_str());
    }
    return REDISMODULE_ERR;
  }
  Clock().Anchor();
  // State memory in Redis's allocator: INFO memory, maxmemory and MEMORY USAGE see it.
  rl::SetStateAllocator({RedisModule_Alloc, RedisModule_Realloc, RedisModule_Free});
  // A key opened for writing counts as modified when closed (WATCH aborts, client tracking
  // invalidates), even when a denied check changed nothing; StateKey signals real changes only.
  RedisModule_SetModuleOptions(
      ctx, REDISMODULE_OPTIONS_HANDLE_IO_ERRORS | REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED);
  if (!RegisterStateType(ctx) || !RegisterCommands(ctx) || !WatchDownstream(ctx)) {
    RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING, "rl: cannot register type or commands");
    return REDISMODULE_ERR;
  }
  RedisModule_RegisterInfoFunc(ctx, Info);
  RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_NOTICE,
                  "rl %s loaded, %zu policies, maxmemory-share %.2f, max-keys %llu, overflow %s",
                  RL_VERSION_STRING, Policies().List().size(), Admissions().maxmemory_share(),
                  static_cast<unsigned long long>(Admissions().max_keys()),
                  std::string(OverflowModeName(Admissions().overflow())).c_str());
  return REDISMODULE_OK;
}

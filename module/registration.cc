// rl.so's entry point: RedisModule_OnLoad reads the load arguments (POLICIES, the bound on new
// keys), registers the state type and every RL.* row of the shared table (command/docs.cc) with
// its flags, key positions and docs, and the INFO rl section.
//
//   redis-server --loadmodule /path/rl.so [POLICIES /path/rl.toml] [MAXMEMORY-SHARE 0.8]
//                [MAX-KEYS n] [OVERFLOW fail-open|fail-closed]
#include <string>

#include "admission.h"
#include "apply.h"
#include "command_info.h"
#include "commands.h"
#include "glue.h"
#include "permissions.h"
#include "policies.h"
#include "policy_sync.h"
#include "propagation.h"
#include "put.h"
#include "redis_module_api.h"
#include "rl/ascii.h"
#include "rl/command/docs.h"
#include "rl/key_state.h"
#include "rl/version.h"
#include "state_type.h"

namespace rl::module {
namespace {

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
  if (!RegisterPut(ctx)) return false;    // and for small states (put.h)
  for (const command::CommandDoc& doc : command::RlCommandDocs()) {
    const int key = doc.first_key;
    if (doc.subcommands.empty()) {
      if (RedisModule_CreateCommand(ctx, doc.name.c_str(), HandlerFor(doc.id),
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
      if (RedisModule_CreateSubcommand(parent, name.c_str(), HandlerFor(sub.id),
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
  RedisModule_InfoAddFieldLongLong(ctx, "checks", static_cast<long long>(ModuleCounters().checks));
  RedisModule_InfoAddFieldLongLong(ctx, "allowed",
                                   static_cast<long long>(ModuleCounters().allowed));
  RedisModule_InfoAddFieldLongLong(ctx, "denied", static_cast<long long>(ModuleCounters().denied));
  RedisModule_InfoAddFieldLongLong(ctx, "shadow_denied",
                                   static_cast<long long>(ModuleCounters().shadow_denied));
  RedisModule_InfoAddFieldLongLong(ctx, "state_writes",
                                   static_cast<long long>(ModuleCounters().writes));
  RedisModule_InfoAddFieldLongLong(ctx, "refunds",
                                   static_cast<long long>(ModuleCounters().refunds));
  RedisModule_InfoAddFieldLongLong(ctx, "charges",
                                   static_cast<long long>(ModuleCounters().charges));
  RedisModule_InfoAddFieldLongLong(ctx, "leases_acquired",
                                   static_cast<long long>(ModuleCounters().leases_acquired));
  RedisModule_InfoAddFieldLongLong(ctx, "leases_released",
                                   static_cast<long long>(ModuleCounters().leases_released));
  RedisModule_InfoAddFieldLongLong(ctx, "policies",
                                   static_cast<long long>(Policies().List().size()));
  // The policy set's version and how many of the cluster's nodes hold it (policy_sync.h).
  AddPolicySyncInfo(ctx);
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
  if (!RegisterStateType(ctx) || !RegisterCommands(ctx) || !RegisterPolicySync(ctx) ||
      !WatchDownstream(ctx)) {
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

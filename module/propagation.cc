// See propagation.h: when a state change has to be replicated.
#include "propagation.h"

#include <cstring>

namespace rl::module {
namespace {

// True until the cron hook has seen that nothing downstream exists (commands run on the main
// thread, as do the event callbacks).
bool g_downstream = true;

// Nothing would receive a propagated command: a master with no replica and no backlog.
bool NothingDownstream(RedisModuleCtx* ctx) {
  RedisModuleServerInfoData* info = RedisModule_GetServerInfo(ctx, "replication");
  if (info == nullptr) return false;
  const char* role = RedisModule_ServerInfoGetFieldC(info, "role");
  int replicas_err = 0, backlog_err = 0;
  const unsigned long long replicas =
      RedisModule_ServerInfoGetFieldUnsigned(info, "connected_slaves", &replicas_err);
  const unsigned long long backlog =
      RedisModule_ServerInfoGetFieldUnsigned(info, "repl_backlog_active", &backlog_err);
  const bool none = role != nullptr && std::strcmp(role, "master") == 0 && replicas_err == 0 &&
                    replicas == 0 && backlog_err == 0 && backlog == 0;
  RedisModule_FreeServerInfo(ctx, info);
  return none;
}

void OnCron(RedisModuleCtx* ctx, RedisModuleEvent, uint64_t, void*) {
  if (g_downstream && NothingDownstream(ctx)) g_downstream = false;
}

void OnChange(RedisModuleCtx*, RedisModuleEvent, uint64_t, void*) { g_downstream = true; }

}  // namespace

bool WatchDownstream(RedisModuleCtx* ctx) {
  g_downstream = true;
  return RedisModule_SubscribeToServerEvent(ctx, RedisModuleEvent_ForkChild, OnChange) ==
             REDISMODULE_OK &&
         RedisModule_SubscribeToServerEvent(ctx, RedisModuleEvent_ReplicaChange, OnChange) ==
             REDISMODULE_OK &&
         RedisModule_SubscribeToServerEvent(ctx, RedisModuleEvent_ReplicationRoleChanged,
                                            OnChange) == REDISMODULE_OK &&
         RedisModule_SubscribeToServerEvent(ctx, RedisModuleEvent_CronLoop, OnCron) ==
             REDISMODULE_OK;
}

bool MustPropagate(int ctx_flags) {
  return g_downstream || (ctx_flags & REDISMODULE_CTX_FLAGS_AOF) != 0;
}

bool DownstreamActive() { return g_downstream; }

}  // namespace rl::module

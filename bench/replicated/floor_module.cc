// rl_floor.so: the cheapest module command that does what a replicated RL.CHECK must do, and
// nothing else: the floor bench/replicated/ measures rl.so against.
//
// A replicated check has to open its key for writing, keep a state in it (a module type, so
// that no client command can change it), set the key's TTL, send its effect downstream (the
// state, not the command: a replica or an AOF replay runs at another time on another clock) and
// answer five integers (DESIGN.md, RL.CHECK's reply). RLFLOOR.CHECK does exactly those server
// calls, in rl.so's order, with no algorithm: it bumps a counter. RLFLOOR.PUT is what it
// replicates (the counter and the absolute expiry); RLFLOOR.CHECKV replicates itself verbatim
// instead, which shows what RedisModule_Replicate's per-call command lookup and argument objects
// cost (no real limiter can replicate that way).
//
// Arity: the check takes RL.CHECK's inline form (key, algorithm, limit, window) so that the
// server parses as many arguments; only the key is read.
//
//   redis-server --loadmodule rl.so --loadmodule rl_floor.so
#include <cstdint>
#include <cstring>

#include "redis_module_api.h"

namespace {

RedisModuleType* g_type = nullptr;

// The state: what a one-limit token bucket keeps (a level and a time), in a block the key owns.
struct FloorState {
  uint64_t count;
  int64_t expire_at_ms;
};

constexpr long long kResetMs = 36000;  // the reply's reset: a 100-per-hour bucket, one token

// The key's TTL. "1s": 10 ms, what rl.so's TTL (the time until the state is full again) is after
// one check of 100 per second, so that as many checks find their key lapsed (the server then
// deletes it and propagates DEL first). Otherwise an hour: the keys outlive a bench run, and a
// replica that missed an effect shows in its key count (bench/replicated/run compares them).
long long TtlMs(RedisModuleString* window) {
  size_t len = 0;
  const char* w = RedisModule_StringPtrLen(window, &len);
  return len == 2 && std::memcmp(w, "1s", 2) == 0 ? 10 : 3600000;
}

FloorState* NewState() {
  auto* s = static_cast<FloorState*>(RedisModule_Alloc(sizeof(FloorState)));
  s->count = 0;
  s->expire_at_ms = 0;
  return s;
}

// The key's state, created when the key is empty; null (after an error reply) for another type.
FloorState* StateOf(RedisModuleCtx* ctx, RedisModuleKey* key) {
  const int type = RedisModule_KeyType(key);
  if (type == REDISMODULE_KEYTYPE_EMPTY) {
    FloorState* s = NewState();
    RedisModule_ModuleTypeSetValue(key, g_type, s);
    return s;
  }
  if (RedisModule_ModuleTypeGetType(key) != g_type) {
    RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    return nullptr;
  }
  return static_cast<FloorState*>(RedisModule_ModuleTypeGetValue(key));
}

int Check(RedisModuleCtx* ctx, RedisModuleString** argv, int argc, bool verbatim) {
  if (argc != 5) return RedisModule_WrongArity(ctx);
  RedisModuleKey* key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
  FloorState* s = StateOf(ctx, key);
  if (s == nullptr) {
    RedisModule_CloseKey(key);
    return REDISMODULE_OK;
  }
  ++s->count;
  const long long ttl_ms = TtlMs(argv[4]);
  s->expire_at_ms = RedisModule_Milliseconds() + ttl_ms;
  RedisModule_SetExpire(key, ttl_ms);
  if (verbatim) {
    RedisModule_ReplicateVerbatim(ctx);
  } else {
    RedisModule_Replicate(ctx, "RLFLOOR.PUT", "sb", argv[1], reinterpret_cast<const char*>(s),
                          sizeof(FloorState));
  }
  RedisModule_CloseKey(key);
  RedisModule_ReplyWithArray(ctx, 5);
  RedisModule_ReplyWithLongLong(ctx, 1);
  RedisModule_ReplyWithLongLong(ctx, 100);
  RedisModule_ReplyWithLongLong(ctx, 99);
  RedisModule_ReplyWithLongLong(ctx, 0);
  RedisModule_ReplyWithLongLong(ctx, kResetMs);
  return REDISMODULE_OK;
}

int CheckCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return Check(ctx, argv, argc, false);
}

int CheckVerbatimCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return Check(ctx, argv, argc, true);
}

// RLFLOOR.PUT key state: the replicated effect, applied as sent.
int PutCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  size_t len = 0;
  const char* bytes = RedisModule_StringPtrLen(argv[2], &len);
  if (len != sizeof(FloorState)) return RedisModule_ReplyWithError(ctx, "ERR bad state");
  RedisModuleKey* key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
  FloorState* s = StateOf(ctx, key);
  if (s != nullptr) {
    std::memcpy(s, bytes, sizeof(FloorState));
    RedisModule_SetAbsExpire(key, s->expire_at_ms);
    RedisModule_ReplicateVerbatim(ctx);
    RedisModule_ReplyWithSimpleString(ctx, "OK");
  }
  RedisModule_CloseKey(key);
  return REDISMODULE_OK;
}

// Persistence: enough for a replica's full sync and the AOF's base file.
void* Load(RedisModuleIO* io, int) {
  FloorState* s = NewState();
  s->count = RedisModule_LoadUnsigned(io);
  s->expire_at_ms = RedisModule_LoadSigned(io);
  return s;
}

void Save(RedisModuleIO* io, void* value) {
  const auto* s = static_cast<const FloorState*>(value);
  RedisModule_SaveUnsigned(io, s->count);
  RedisModule_SaveSigned(io, s->expire_at_ms);
}

void Rewrite(RedisModuleIO* io, RedisModuleString* key, void* value) {
  RedisModule_EmitAOF(io, "RLFLOOR.PUT", "sb", key, static_cast<const char*>(value),
                      sizeof(FloorState));
}

void Free(void* value) { RedisModule_Free(value); }

}  // namespace

extern "C" __attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx* ctx,
                                                                         RedisModuleString**, int) {
  if (RedisModule_Init(ctx, "rlfloor", 1, REDISMODULE_APIVER_1) == REDISMODULE_ERR) {
    return REDISMODULE_ERR;
  }
  RedisModuleTypeMethods methods;
  methods.version = 1;
  methods.rdb_load = Load;
  methods.rdb_save = Save;
  methods.aof_rewrite = Rewrite;
  methods.free = Free;
  g_type = RedisModule_CreateDataType(ctx, "rl-floor1", 1, &methods);
  if (g_type == nullptr) return REDISMODULE_ERR;
  const struct {
    const char* name;
    RedisModuleCmdFunc func;
  } commands[] = {{"RLFLOOR.CHECK", CheckCommand},
                  {"RLFLOOR.CHECKV", CheckVerbatimCommand},
                  {"RLFLOOR.PUT", PutCommand}};
  for (const auto& c : commands) {
    if (RedisModule_CreateCommand(ctx, c.name, c.func, "write deny-oom", 1, 1, 1) ==
        REDISMODULE_ERR) {
      return REDISMODULE_ERR;
    }
  }
  return REDISMODULE_OK;
}

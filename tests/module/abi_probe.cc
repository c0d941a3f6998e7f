// Test-only Redis module ("probe") that calls every function and fills every struct declared in
// module/redis_module_api.h, so the tests in this directory can prove that header against the
// real redis-server: a native type "probe-ABI" (RDB with an encoding version, AOF rewrite,
// digest, memory usage, copy/unlink/free callbacks counted in INFO), module-global aux data,
// commands with 7.0 key specs and argument docs, a subcommand family, RESP3 replies that
// downgrade in RESP2, and effect replication. Never installed; rl.so is built elsewhere.
//
// Commands (key at argv[1] unless said):
//   PROBE.SET key value [PX ms | PXAT unix-ms] [CREATED unix-ms]   write deny-oom
//       Stores value; replicates the effect: PROBE.SET key value [PXAT abs] CREATED ms.
//   PROBE.GET key            readonly: the value, or null
//   PROBE.META key           readonly: [created ms, GetExpire, GetAbsExpire, length]
//   PROBE.DEL key            write: 1 if deleted; replicated verbatim
//   PROBE.TWO key key        readonly, keys reported through the getkeys-api
//   PROBE.CONF SET value | PROBE.CONF GET     the module-global value saved as RDB aux data
//   PROBE.MAP                a RESP3 map (int, double, verbatim, null, nested array)
//   PROBE.CTX                GetContextFlags
//   PROBE.CLIENTID           GetClientId
//   PROBE.TIME               [Milliseconds, MonotonicMicroseconds]
//   PROBE.REPLINFO           [role, connected_slaves, repl_backlog_active] via GetServerInfo
//   PROBE.MEM                [GetUsedMemoryRatio in millionths, DbSize]
//   PROBE.MAYDEL key         [the caller's ACL user or nil, 1 if it may DEL key else 0]
// Server events (cron ticks, forks born, replica and role changes) are counted in INFO probe.
#include <strings.h>

#include <atomic>
#include <cstring>

#include "redis_module_api.h"

namespace {

constexpr const char* kTypeName = "probe-ABI";  // exactly 9 characters
constexpr int kEncodingVersion = 1;             // the type's encver
constexpr uint64_t kFormat = 1;                 // first field of every saved value
constexpr size_t kMaxValueBytes = 1 << 20;      // larger saved values are refused as corrupt

RedisModuleType* g_type = nullptr;
char* g_conf = nullptr;  // module-global value (PROBE.CONF), RedisModule_Alloc'd
size_t g_conf_len = 0;

// How often the server called each type callback; shown by INFO probe. Atomic: free can run on
// the lazy-free thread.
struct Counters {
  std::atomic<long long> rdb_load{0}, rdb_save{0}, aof_rewrite{0}, mem_usage{0}, mem_usage2{0},
      digest{0}, free{0}, aux_load{0}, aux_save{0}, free_effort{0}, free_effort2{0}, unlink{0},
      unlink2{0}, copy{0}, copy2{0}, load_refused{0};
  // PROBE.SET calls run with these context flags: sent by the master, or replayed from the AOF.
  std::atomic<long long> set_replicated{0}, set_loading{0};
  // Server events received (SubscribeToServerEvent).
  std::atomic<long long> cron_ticks{0}, forks_born{0}, replica_changes{0}, role_changes{0};
} g_calls;

struct ProbeValue {
  int64_t created_ms;
  char* data;  // RedisModule_Alloc'd, NUL-terminated for convenience
  size_t len;
};

ProbeValue* NewValue(const char* data, size_t len, int64_t created_ms) {
  auto* value = static_cast<ProbeValue*>(RedisModule_Calloc(1, sizeof(ProbeValue)));
  value->data = static_cast<char*>(RedisModule_Alloc(len + 1));
  if (len > 0) std::memcpy(value->data, data, len);
  value->data[len] = '\0';
  value->len = len;
  value->created_ms = created_ms;
  return value;
}

void DeleteValue(ProbeValue* value) {
  RedisModule_Free(value->data);
  RedisModule_Free(value);
}

size_t ValueBytes(const ProbeValue* value) {
  return RedisModule_MallocSize(const_cast<ProbeValue*>(value)) +
         RedisModule_MallocSize(value->data);
}

// ---- type callbacks -----------------------------------------------------------------------

void RdbSave(RedisModuleIO* io, void* ptr) {
  ++g_calls.rdb_save;
  auto* value = static_cast<ProbeValue*>(ptr);
  RedisModule_SaveUnsigned(io, kFormat);
  RedisModule_SaveSigned(io, value->created_ms);
  RedisModule_SaveStringBuffer(io, value->data, value->len);
}

// Refuses (NULL) anything it did not write: another encoding version, another format, a short
// read (IsIOError, thanks to HANDLE_IO_ERRORS) or an absurd size.
void* RdbLoad(RedisModuleIO* io, int encver) {
  ++g_calls.rdb_load;
  if (encver != kEncodingVersion) {
    ++g_calls.load_refused;
    RedisModule_LogIOError(io, REDISMODULE_LOGLEVEL_WARNING, "probe: refusing encoding version %d",
                           encver);
    return nullptr;
  }
  const uint64_t format = RedisModule_LoadUnsigned(io);
  const int64_t created_ms = RedisModule_LoadSigned(io);
  size_t len = 0;
  char* data = RedisModule_LoadStringBuffer(io, &len);
  if (RedisModule_IsIOError(io) || data == nullptr || format != kFormat || len > kMaxValueBytes) {
    ++g_calls.load_refused;
    RedisModule_LogIOError(io, REDISMODULE_LOGLEVEL_WARNING,
                           "probe: refusing a corrupt value (format %llu, io error %d)",
                           static_cast<unsigned long long>(format), RedisModule_IsIOError(io));
    if (data != nullptr) RedisModule_Free(data);
    return nullptr;
  }
  data = static_cast<char*>(RedisModule_Realloc(data, len + 1));  // room for the NUL
  data[len] = '\0';
  auto* value = static_cast<ProbeValue*>(RedisModule_Calloc(1, sizeof(ProbeValue)));
  *value = ProbeValue{created_ms, data, len};
  return value;
}

void AofRewrite(RedisModuleIO* aof, RedisModuleString* key, void* ptr) {
  ++g_calls.aof_rewrite;
  auto* value = static_cast<ProbeValue*>(ptr);
  // The key's TTL is rewritten by the server itself (PEXPIREAT after this command).
  RedisModule_EmitAOF(aof, "PROBE.SET", "sbcl", key, value->data, value->len, "CREATED",
                      static_cast<long long>(value->created_ms));
}

size_t MemUsage(const void* ptr) {
  ++g_calls.mem_usage;
  return ValueBytes(static_cast<const ProbeValue*>(ptr));
}

size_t MemUsage2(RedisModuleKeyOptCtx*, const void* ptr, size_t) {
  ++g_calls.mem_usage2;
  return ValueBytes(static_cast<const ProbeValue*>(ptr));
}

void Digest(RedisModuleDigest* md, void* ptr) {
  ++g_calls.digest;
  auto* value = static_cast<ProbeValue*>(ptr);
  RedisModule_DigestAddStringBuffer(md, value->data, value->len);
  RedisModule_DigestAddLongLong(md, value->created_ms);
  RedisModule_DigestEndSequence(md);
}

void Free(void* ptr) {
  ++g_calls.free;
  DeleteValue(static_cast<ProbeValue*>(ptr));
}

void AuxSave(RedisModuleIO* io, int when) {
  ++g_calls.aux_save;
  if (when != REDISMODULE_AUX_BEFORE_RDB) return;
  RedisModule_SaveStringBuffer(io, g_conf != nullptr ? g_conf : "", g_conf_len);
}

int AuxLoad(RedisModuleIO* io, int encver, int when) {
  ++g_calls.aux_load;
  if (when != REDISMODULE_AUX_BEFORE_RDB || encver != kEncodingVersion) return REDISMODULE_ERR;
  size_t len = 0;
  char* conf = RedisModule_LoadStringBuffer(io, &len);
  if (RedisModule_IsIOError(io) || conf == nullptr) {
    if (conf != nullptr) RedisModule_Free(conf);
    return REDISMODULE_ERR;
  }
  conf = static_cast<char*>(RedisModule_Realloc(conf, len + 1));
  conf[len] = '\0';
  if (g_conf != nullptr) RedisModule_Free(g_conf);
  g_conf = conf;
  g_conf_len = len;
  return REDISMODULE_OK;
}

size_t FreeEffort(RedisModuleString*, const void*) {
  ++g_calls.free_effort;
  return 1;
}
size_t FreeEffort2(RedisModuleKeyOptCtx*, const void*) {
  ++g_calls.free_effort2;
  return 1;
}
void Unlink(RedisModuleString*, const void*) { ++g_calls.unlink; }
void Unlink2(RedisModuleKeyOptCtx*, const void*) { ++g_calls.unlink2; }

void* Copy(RedisModuleString*, RedisModuleString*, const void* ptr) {
  ++g_calls.copy;
  auto* value = static_cast<const ProbeValue*>(ptr);
  return NewValue(value->data, value->len, value->created_ms);
}
void* Copy2(RedisModuleKeyOptCtx*, const void* ptr) {
  ++g_calls.copy2;
  auto* value = static_cast<const ProbeValue*>(ptr);
  return NewValue(value->data, value->len, value->created_ms);
}

// ---- commands -----------------------------------------------------------------------------

bool IsOption(RedisModuleString* arg, const char* name) {
  size_t len = 0;
  const char* text = RedisModule_StringPtrLen(arg, &len);
  return len == std::strlen(name) && strncasecmp(text, name, len) == 0;
}

// Opens argv[1]; null key when it is absent (READ) and *wrongtype when it holds another type.
RedisModuleKey* OpenProbeKey(RedisModuleCtx* ctx, RedisModuleString* name, int mode,
                             bool* wrongtype) {
  RedisModuleKey* key = RedisModule_OpenKey(ctx, name, mode);
  const int type = RedisModule_KeyType(key);
  *wrongtype = type != REDISMODULE_KEYTYPE_EMPTY &&
               (type != REDISMODULE_KEYTYPE_MODULE || RedisModule_ModuleTypeGetType(key) != g_type);
  return key;
}

int SetCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3 || (argc - 3) % 2 != 0) return RedisModule_WrongArity(ctx);
  long long px = 0, pxat = 0, created = 0;
  bool has_px = false, has_pxat = false, has_created = false;
  for (int i = 3; i < argc; i += 2) {
    long long number = 0;
    if (RedisModule_StringToLongLong(argv[i + 1], &number) != REDISMODULE_OK) {
      return RedisModule_ReplyWithError(ctx, "ERR value is not an integer or out of range");
    }
    if (IsOption(argv[i], "PX") && number > 0) {
      px = number, has_px = true;
    } else if (IsOption(argv[i], "PXAT") && number > 0) {
      pxat = number, has_pxat = true;
    } else if (IsOption(argv[i], "CREATED")) {
      created = number, has_created = true;
    } else {
      return RedisModule_ReplyWithError(ctx, "ERR syntax error");
    }
  }
  if (has_px && has_pxat) return RedisModule_ReplyWithError(ctx, "ERR syntax error");
  const int flags = RedisModule_GetContextFlags(ctx);
  if (flags & REDISMODULE_CTX_FLAGS_REPLICATED) ++g_calls.set_replicated;
  if (flags & REDISMODULE_CTX_FLAGS_LOADING) ++g_calls.set_loading;

  bool wrongtype = false;
  RedisModuleKey* key =
      OpenProbeKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &wrongtype);
  if (wrongtype) {
    RedisModule_CloseKey(key);
    return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
  }
  size_t len = 0;
  const char* data = RedisModule_StringPtrLen(argv[2], &len);
  ProbeValue* value = NewValue(data, len, has_created ? created : RedisModule_Milliseconds());
  if (RedisModule_KeyType(key) == REDISMODULE_KEYTYPE_EMPTY) {
    RedisModule_ModuleTypeSetValue(key, g_type, value);
  } else {
    void* old = nullptr;
    RedisModule_ModuleTypeReplaceValue(key, g_type, value, &old);
    DeleteValue(static_cast<ProbeValue*>(old));
  }
  long long expire_at = REDISMODULE_NO_EXPIRE;
  if (has_px) {
    RedisModule_SetExpire(key, px);
    expire_at = RedisModule_GetAbsExpire(key);
  } else if (has_pxat) {
    RedisModule_SetAbsExpire(key, pxat);
    expire_at = pxat;
  } else {
    RedisModule_SetExpire(key, REDISMODULE_NO_EXPIRE);  // ReplaceValue keeps an old TTL
  }
  RedisModule_CloseKey(key);
  // Closing a written key signals it already; the explicit call (what rl.so makes, with the
  // implicit signal turned off) must be accepted too. rl.so's WATCH test proves its effect.
  RedisModule_SignalModifiedKey(ctx, argv[1]);

  // The effect, not the command: a replica or the AOF must not read its own clock.
  RedisModuleString* copy = RedisModule_CreateString(ctx, value->data, value->len);
  if (expire_at != REDISMODULE_NO_EXPIRE) {
    RedisModule_Replicate(ctx, "PROBE.SET", "ssclcl", argv[1], copy, "PXAT", expire_at, "CREATED",
                          static_cast<long long>(value->created_ms));
  } else {
    RedisModule_Replicate(ctx, "PROBE.SET", "sscl", argv[1], copy, "CREATED",
                          static_cast<long long>(value->created_ms));
  }
  RedisModule_FreeString(ctx, copy);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

int GetCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  bool wrongtype = false;
  RedisModuleKey* key = OpenProbeKey(ctx, argv[1], REDISMODULE_READ, &wrongtype);
  if (wrongtype) {
    RedisModule_CloseKey(key);
    return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
  }
  if (key == nullptr) return RedisModule_ReplyWithNull(ctx);
  auto* value = static_cast<ProbeValue*>(RedisModule_ModuleTypeGetValue(key));
  RedisModule_ReplyWithStringBuffer(ctx, value->data, value->len);
  RedisModule_CloseKey(key);
  return REDISMODULE_OK;
}

int MetaCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  bool wrongtype = false;
  RedisModuleKey* key = OpenProbeKey(ctx, argv[1], REDISMODULE_READ, &wrongtype);
  if (wrongtype) {
    RedisModule_CloseKey(key);
    return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
  }
  if (key == nullptr) return RedisModule_ReplyWithNull(ctx);
  auto* value = static_cast<ProbeValue*>(RedisModule_ModuleTypeGetValue(key));
  RedisModule_ReplyWithArray(ctx, REDISMODULE_POSTPONED_LEN);
  RedisModule_ReplyWithLongLong(ctx, value->created_ms);
  RedisModule_ReplyWithLongLong(ctx, RedisModule_GetExpire(key));
  RedisModule_ReplyWithLongLong(ctx, RedisModule_GetAbsExpire(key));
  RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(value->len));
  RedisModule_ReplySetArrayLength(ctx, 4);
  RedisModule_CloseKey(key);
  return REDISMODULE_OK;
}

int DelCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  bool wrongtype = false;
  RedisModuleKey* key =
      OpenProbeKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &wrongtype);
  if (wrongtype) {
    RedisModule_CloseKey(key);
    return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
  }
  const bool present = RedisModule_KeyType(key) != REDISMODULE_KEYTYPE_EMPTY;
  if (present) {
    RedisModule_DeleteKey(key);
    RedisModule_ReplicateVerbatim(ctx);
  }
  RedisModule_CloseKey(key);
  return RedisModule_ReplyWithLongLong(ctx, present ? 1 : 0);
}

// Two keys at argv[1] and argv[2], declared through the getkeys-api instead of key specs.
int TwoCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (RedisModule_IsKeysPositionRequest(ctx)) {
    RedisModule_KeyAtPos(ctx, 1);
    RedisModule_KeyAtPos(ctx, 2);
    return REDISMODULE_OK;
  }
  if (argc != 3) return RedisModule_WrongArity(ctx);
  long long found = 0;
  for (int i = 1; i <= 2; ++i) {
    bool wrongtype = false;
    RedisModuleKey* key = OpenProbeKey(ctx, argv[i], REDISMODULE_READ, &wrongtype);
    if (key != nullptr && !wrongtype) ++found;
    RedisModule_CloseKey(key);
  }
  return RedisModule_ReplyWithLongLong(ctx, found);
}

int ConfSetCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  size_t len = 0;
  const char* text = RedisModule_StringPtrLen(argv[2], &len);
  char* conf = static_cast<char*>(RedisModule_Alloc(len + 1));
  std::memcpy(conf, text, len);
  conf[len] = '\0';
  if (g_conf != nullptr) RedisModule_Free(g_conf);
  g_conf = conf;
  g_conf_len = len;
  RedisModule_ReplicateVerbatim(ctx);  // deterministic: the command itself is the effect
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

int ConfGetCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  if (g_conf == nullptr) return RedisModule_ReplyWithNull(ctx);
  return RedisModule_ReplyWithStringBuffer(ctx, g_conf, g_conf_len);
}

int MapCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 1) return RedisModule_WrongArity(ctx);
  RedisModule_ReplyWithMap(ctx, REDISMODULE_POSTPONED_LEN);
  RedisModule_ReplyWithCString(ctx, "int");
  RedisModule_ReplyWithLongLong(ctx, 42);
  RedisModule_ReplyWithCString(ctx, "double");
  RedisModule_ReplyWithDouble(ctx, 1.5);
  RedisModule_ReplyWithCString(ctx, "verbatim");
  RedisModule_ReplyWithVerbatimString(ctx, "hello", 5);
  RedisModule_ReplyWithCString(ctx, "null");
  RedisModule_ReplyWithNull(ctx);
  RedisModule_ReplyWithCString(ctx, "array");
  RedisModule_ReplyWithArray(ctx, REDISMODULE_POSTPONED_LEN);
  RedisModule_ReplyWithLongLong(ctx, 1);
  RedisModule_ReplyWithLongLong(ctx, 2);
  RedisModule_ReplySetArrayLength(ctx, 2);  // the innermost open length first
  RedisModule_ReplySetMapLength(ctx, 5);
  return REDISMODULE_OK;
}

int CtxCommand(RedisModuleCtx* ctx, RedisModuleString**, int) {
  return RedisModule_ReplyWithLongLong(ctx, RedisModule_GetContextFlags(ctx));
}

int ClientIdCommand(RedisModuleCtx* ctx, RedisModuleString**, int) {
  return RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(RedisModule_GetClientId(ctx)));
}

int TimeCommand(RedisModuleCtx* ctx, RedisModuleString**, int) {
  RedisModule_ReplyWithArray(ctx, 2);
  RedisModule_ReplyWithLongLong(ctx, RedisModule_Milliseconds());
  RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(RedisModule_MonotonicMicroseconds()));
  return REDISMODULE_OK;
}

int ReplInfoCommand(RedisModuleCtx* ctx, RedisModuleString**, int) {
  RedisModuleServerInfoData* info = RedisModule_GetServerInfo(ctx, "replication");
  if (info == nullptr) return RedisModule_ReplyWithError(ctx, "ERR no INFO replication");
  int err_replicas = 0, err_backlog = 0;
  const char* role = RedisModule_ServerInfoGetFieldC(info, "role");
  const unsigned long long replicas =
      RedisModule_ServerInfoGetFieldUnsigned(info, "connected_slaves", &err_replicas);
  const unsigned long long backlog =
      RedisModule_ServerInfoGetFieldUnsigned(info, "repl_backlog_active", &err_backlog);
  RedisModule_ReplyWithArray(ctx, 3);
  RedisModule_ReplyWithCString(ctx, role != nullptr ? role : "");
  RedisModule_ReplyWithLongLong(ctx, err_replicas ? -1 : static_cast<long long>(replicas));
  RedisModule_ReplyWithLongLong(ctx, err_backlog ? -1 : static_cast<long long>(backlog));
  RedisModule_FreeServerInfo(ctx, info);
  return REDISMODULE_OK;
}

int MemCommand(RedisModuleCtx* ctx, RedisModuleString**, int) {
  RedisModule_ReplyWithArray(ctx, 2);
  RedisModule_ReplyWithLongLong(
      ctx, static_cast<long long>(RedisModule_GetUsedMemoryRatio() * 1e6 + 0.5));
  RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(RedisModule_DbSize(ctx)));
  return REDISMODULE_OK;
}

int MayDelCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  RedisModuleString* name = RedisModule_GetClientUserNameById(ctx, RedisModule_GetClientId(ctx));
  RedisModule_ReplyWithArray(ctx, 2);
  if (name == nullptr) {
    RedisModule_ReplyWithNull(ctx);
    return RedisModule_ReplyWithLongLong(ctx, 1);
  }
  size_t len = 0;
  const char* text = RedisModule_StringPtrLen(name, &len);
  RedisModule_ReplyWithStringBuffer(ctx, text, len);
  RedisModuleUser* user = RedisModule_GetModuleUserFromUserName(name);
  RedisModule_FreeString(ctx, name);
  RedisModuleString* del = RedisModule_CreateString(ctx, "DEL", 3);
  RedisModuleString* args[] = {del, argv[1]};
  const bool may =
      user != nullptr && RedisModule_ACLCheckCommandPermissions(user, args, 2) == REDISMODULE_OK;
  RedisModule_FreeString(ctx, del);
  if (user != nullptr) RedisModule_FreeModuleUser(user);
  return RedisModule_ReplyWithLongLong(ctx, may ? 1 : 0);
}

void OnServerEvent(RedisModuleCtx*, RedisModuleEvent event, uint64_t subevent, void*) {
  if (event.id == RedisModuleEvent_CronLoop.id) ++g_calls.cron_ticks;
  if (event.id == RedisModuleEvent_ForkChild.id &&
      subevent == REDISMODULE_SUBEVENT_FORK_CHILD_BORN) {
    ++g_calls.forks_born;
  }
  if (event.id == RedisModuleEvent_ReplicaChange.id) ++g_calls.replica_changes;
  if (event.id == RedisModuleEvent_ReplicationRoleChanged.id) ++g_calls.role_changes;
}

void InfoFunc(RedisModuleInfoCtx* ctx, int) {
  RedisModule_InfoAddSection(ctx, "stats");
  const struct {
    const char* name;
    const std::atomic<long long>& count;
  } fields[] = {
      {"rdb_load", g_calls.rdb_load},
      {"rdb_save", g_calls.rdb_save},
      {"aof_rewrite", g_calls.aof_rewrite},
      {"mem_usage", g_calls.mem_usage},
      {"mem_usage2", g_calls.mem_usage2},
      {"digest", g_calls.digest},
      {"free", g_calls.free},
      {"aux_load", g_calls.aux_load},
      {"aux_save", g_calls.aux_save},
      {"free_effort", g_calls.free_effort},
      {"free_effort2", g_calls.free_effort2},
      {"unlink", g_calls.unlink},
      {"unlink2", g_calls.unlink2},
      {"copy", g_calls.copy},
      {"copy2", g_calls.copy2},
      {"load_refused", g_calls.load_refused},
      {"set_replicated", g_calls.set_replicated},
      {"set_loading", g_calls.set_loading},
      {"cron_ticks", g_calls.cron_ticks},
      {"forks_born", g_calls.forks_born},
      {"replica_changes", g_calls.replica_changes},
      {"role_changes", g_calls.role_changes},
  };
  for (const auto& field : fields) RedisModule_InfoAddFieldLongLong(ctx, field.name, field.count);
  RedisModule_InfoAddFieldLongLong(ctx, "server_version", RedisModule_GetServerVersion());
  RedisModule_InfoAddFieldLongLong(ctx, "type_method_version", RedisModule_GetTypeMethodVersion());
  RedisModule_InfoAddFieldCString(ctx, "conf", g_conf != nullptr ? g_conf : "");
}

// ---- registration -------------------------------------------------------------------------

// One key at argv[1]: begin search at index 1, a range of one key.
RedisModuleCommandKeySpec kWriteKey[] = {
    {.notes = "the probe value",
     .flags = REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_UPDATE,
     .begin_search_type = REDISMODULE_KSPEC_BS_INDEX,
     .bs = {.index = {.pos = 1}},
     .find_keys_type = REDISMODULE_KSPEC_FK_RANGE,
     .fk = {.range = {.lastkey = 0, .keystep = 1, .limit = 0}}},
    {}};
RedisModuleCommandKeySpec kReadKey[] = {
    {.notes = nullptr,
     .flags = REDISMODULE_CMD_KEY_RO | REDISMODULE_CMD_KEY_ACCESS,
     .begin_search_type = REDISMODULE_KSPEC_BS_INDEX,
     .bs = {.index = {.pos = 1}},
     .find_keys_type = REDISMODULE_KSPEC_FK_RANGE,
     .fk = {.range = {.lastkey = 0, .keystep = 1, .limit = 0}}},
    {}};
RedisModuleCommandKeySpec kDeleteKey[] = {
    {.notes = nullptr,
     .flags = REDISMODULE_CMD_KEY_RM | REDISMODULE_CMD_KEY_DELETE,
     .begin_search_type = REDISMODULE_KSPEC_BS_INDEX,
     .bs = {.index = {.pos = 1}},
     .find_keys_type = REDISMODULE_KSPEC_FK_RANGE,
     .fk = {.range = {.lastkey = 0, .keystep = 1, .limit = 0}}},
    {}};

RedisModuleCommandArg kExpiration[] = {{.name = "milliseconds",
                                        .type = REDISMODULE_ARG_TYPE_INTEGER,
                                        .key_spec_index = -1,
                                        .token = "PX"},
                                       {.name = "unix-time-milliseconds",
                                        .type = REDISMODULE_ARG_TYPE_UNIX_TIME,
                                        .key_spec_index = -1,
                                        .token = "PXAT"},
                                       {}};
RedisModuleCommandArg kSetArgs[] = {
    {.name = "key", .type = REDISMODULE_ARG_TYPE_KEY, .key_spec_index = 0},
    {.name = "value",
     .type = REDISMODULE_ARG_TYPE_STRING,
     .key_spec_index = -1,
     .summary = "the bytes to store",
     .since = "1.0.0"},
    {.name = "expiration",
     .type = REDISMODULE_ARG_TYPE_ONEOF,
     .key_spec_index = -1,
     .flags = REDISMODULE_CMD_ARG_OPTIONAL,
     .subargs = kExpiration},
    {.name = "created",
     .type = REDISMODULE_ARG_TYPE_UNIX_TIME,
     .key_spec_index = -1,
     .token = "CREATED",
     .flags = REDISMODULE_CMD_ARG_OPTIONAL},
    {}};
RedisModuleCommandHistoryEntry kSetHistory[] = {{"1.1.0", "Added CREATED."}, {}};

RedisModuleCommandInfo kSetInfo = {
    .version = REDISMODULE_COMMAND_INFO_VERSION,
    .summary = "Stores a probe value",
    .complexity = "O(1)",
    .since = "1.0.0",
    .history = kSetHistory,
    .tips = "nondeterministic_output",
    .arity = -3,
    .key_specs = kWriteKey,
    .args = kSetArgs,
};
RedisModuleCommandInfo kGetInfo = {.version = REDISMODULE_COMMAND_INFO_VERSION,
                                   .summary = "Reads a probe value",
                                   .arity = 2,
                                   .key_specs = kReadKey};
RedisModuleCommandInfo kMetaInfo = {
    .version = REDISMODULE_COMMAND_INFO_VERSION, .arity = 2, .key_specs = kReadKey};
RedisModuleCommandInfo kDelInfo = {
    .version = REDISMODULE_COMMAND_INFO_VERSION, .arity = 2, .key_specs = kDeleteKey};

struct CommandRow {
  const char* name;
  RedisModuleCmdFunc handler;
  const char* flags;
  int first, last, step;
  RedisModuleCommandInfo* info;
};

const CommandRow kCommands[] = {
    {"probe.set", SetCommand, "write deny-oom", 1, 1, 1, &kSetInfo},
    {"probe.get", GetCommand, "readonly fast", 1, 1, 1, &kGetInfo},
    {"probe.meta", MetaCommand, "readonly fast", 1, 1, 1, &kMetaInfo},
    {"probe.del", DelCommand, "write", 1, 1, 1, &kDelInfo},
    {"probe.two", TwoCommand, "readonly getkeys-api", 0, 0, 0, nullptr},
    {"probe.map", MapCommand, "readonly fast", 0, 0, 0, nullptr},
    {"probe.ctx", CtxCommand, "fast", 0, 0, 0, nullptr},
    {"probe.clientid", ClientIdCommand, "fast", 0, 0, 0, nullptr},
    {"probe.time", TimeCommand, "fast", 0, 0, 0, nullptr},
    {"probe.replinfo", ReplInfoCommand, "", 0, 0, 0, nullptr},
    {"probe.mem", MemCommand, "readonly fast", 0, 0, 0, nullptr},
    {"probe.maydel", MayDelCommand, "readonly", 0, 0, 0, nullptr},
};

}  // namespace

extern "C" __attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx* ctx,
                                                                         RedisModuleString** argv,
                                                                         int argc) {
  if (RedisModule_Init(ctx, "probe", 1, REDISMODULE_APIVER_1) != REDISMODULE_OK) {
    return REDISMODULE_ERR;
  }
  if (const char* missing = rl::redis_module::FirstMissingFunction()) {
    if (RedisModule_Log != nullptr) {
      RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING, "probe: the server lacks %s", missing);
    }
    return REDISMODULE_ERR;
  }
  RedisModule_SetModuleOptions(ctx, REDISMODULE_OPTIONS_HANDLE_IO_ERRORS);

  RedisModuleTypeMethods methods = {};
  methods.version = REDISMODULE_TYPE_METHOD_VERSION;
  methods.rdb_load = RdbLoad;
  methods.rdb_save = RdbSave;
  methods.aof_rewrite = AofRewrite;
  methods.mem_usage = MemUsage;
  methods.digest = Digest;
  methods.free = Free;
  methods.aux_load = AuxLoad;
  methods.aux_save = AuxSave;
  methods.aux_save_triggers = REDISMODULE_AUX_BEFORE_RDB;
  methods.free_effort = FreeEffort;
  methods.unlink = Unlink;
  methods.copy = Copy;
  methods.defrag = nullptr;
  methods.mem_usage2 = MemUsage2;
  methods.free_effort2 = FreeEffort2;
  methods.unlink2 = Unlink2;
  methods.copy2 = Copy2;
  g_type = RedisModule_CreateDataType(ctx, kTypeName, kEncodingVersion, &methods);
  if (g_type == nullptr) return REDISMODULE_ERR;

  for (const CommandRow& row : kCommands) {
    if (RedisModule_CreateCommand(ctx, row.name, row.handler, row.flags, row.first, row.last,
                                  row.step) != REDISMODULE_OK) {
      return REDISMODULE_ERR;
    }
    if (row.info != nullptr && RedisModule_SetCommandInfo(RedisModule_GetCommand(ctx, row.name),
                                                          row.info) != REDISMODULE_OK) {
      RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING, "probe: bad command info for %s",
                      row.name);
      return REDISMODULE_ERR;
    }
  }
  // A container without a handler, and its subcommands.
  if (RedisModule_CreateCommand(ctx, "probe.conf", nullptr, "", 0, 0, 0) != REDISMODULE_OK) {
    return REDISMODULE_ERR;
  }
  RedisModuleCommand* conf = RedisModule_GetCommand(ctx, "probe.conf");
  if (conf == nullptr ||
      RedisModule_CreateSubcommand(conf, "set", ConfSetCommand, "write deny-oom", 0, 0, 0) !=
          REDISMODULE_OK ||
      RedisModule_CreateSubcommand(conf, "get", ConfGetCommand, "readonly", 0, 0, 0) !=
          REDISMODULE_OK) {
    return REDISMODULE_ERR;
  }
  if (RedisModule_RegisterInfoFunc(ctx, InfoFunc) != REDISMODULE_OK) return REDISMODULE_ERR;
  for (const RedisModuleEvent& event :
       {RedisModuleEvent_CronLoop, RedisModuleEvent_ForkChild, RedisModuleEvent_ReplicaChange,
        RedisModuleEvent_ReplicationRoleChanged}) {
    if (RedisModule_SubscribeToServerEvent(ctx, event, OnServerEvent) != REDISMODULE_OK) {
      return REDISMODULE_ERR;
    }
  }

  RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_NOTICE,
                  "probe: loaded (%d arguments), server 0x%06x, type method version %d", argc,
                  RedisModule_GetServerVersion(), RedisModule_GetTypeMethodVersion());
  (void)argv;
  return REDISMODULE_OK;
}

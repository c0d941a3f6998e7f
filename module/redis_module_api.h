// rl's own declaration of the part of the Redis module API that rl.so uses (Redis >= 7.0).
//
// Debian ships no redismodule.h, so this header declares, from the documented API, exactly what
// rl needs: the opaque handle types, the constants, the structs the server reads (command key
// specs, type methods) and one function pointer per API function. RedisModule_Init fills every
// pointer through RedisModule_GetApi, which the server passes as the first word of the context
// given to RedisModule_OnLoad (the same contract the official header's inline Init relies on).
//
// Sources, cited next to each item:
//   [ref]  "Modules API reference", https://redis.io/docs/reference/modules/modules-api-ref/
//          (generated from module.c), section named in each comment.
//   [intro] "Modules API" intro, https://redis.io/docs/reference/modules/ (Init, OnLoad).
//   [types] "Modules native types", https://redis.io/docs/reference/modules/modules-native-types/
//   Values the reference names without spelling out were checked against Redis 7.0's
//   redismodule.h and are proven against Debian's redis-server 7.0 by tests/module/.
//
// C++ only: the function pointers are inline variables (one definition per shared object, hidden
// when built with -fvisibility=hidden), constants are typed constexpr values. Do not include the
// official redismodule.h in the same translation unit.
#pragma once

#ifdef REDISMODULE_H
#error "redis_module_api.h replaces redismodule.h; include only one of them"
#endif

#include <cstddef>
#include <cstdint>

// ---------------------------------------------------------------------------------------------
// Opaque handles. The server owns them; a module only passes pointers back. [ref] throughout.
struct RedisModuleCtx;
struct RedisModuleKey;
struct RedisModuleString;
struct RedisModuleIO;
struct RedisModuleType;
struct RedisModuleDigest;
struct RedisModuleInfoCtx;
struct RedisModuleCommand;
struct RedisModuleKeyOptCtx;
struct RedisModuleDefragCtx;
struct RedisModuleServerInfoData;
struct RedisModuleUser;

// ---------------------------------------------------------------------------------------------
// Status and versions.

// Every int-returning API call answers one of these. [ref] passim ("REDISMODULE_OK is returned").
inline constexpr int REDISMODULE_OK = 0;
inline constexpr int REDISMODULE_ERR = 1;

// The only module API version; the last argument of RedisModule_Init. [intro] "Modules API",
// RedisModule_Init(ctx,"helloworld",1,REDISMODULE_APIVER_1).
inline constexpr int REDISMODULE_APIVER_1 = 1;

// ---------------------------------------------------------------------------------------------
// Keys. [ref] "DB and Key APIs - Generic API".

// RedisModule_OpenKey modes. [ref] RedisModule_OpenKey / RedisModule_StringDMA.
inline constexpr int REDISMODULE_READ = 1 << 0;
inline constexpr int REDISMODULE_WRITE = 1 << 1;

// RedisModule_KeyType results. [intro] "Getting the key type"; values from redismodule.h 7.0.
inline constexpr int REDISMODULE_KEYTYPE_EMPTY = 0;
inline constexpr int REDISMODULE_KEYTYPE_STRING = 1;
inline constexpr int REDISMODULE_KEYTYPE_LIST = 2;
inline constexpr int REDISMODULE_KEYTYPE_HASH = 3;
inline constexpr int REDISMODULE_KEYTYPE_SET = 4;
inline constexpr int REDISMODULE_KEYTYPE_ZSET = 5;
inline constexpr int REDISMODULE_KEYTYPE_MODULE = 6;
inline constexpr int REDISMODULE_KEYTYPE_STREAM = 7;

// RedisModule_GetExpire / GetAbsExpire answer this when the key has no TTL, and SetExpire /
// SetAbsExpire take it to remove one. [ref] RedisModule_GetExpire, RedisModule_SetExpire.
inline constexpr long long REDISMODULE_NO_EXPIRE = -1;

// The error text of a command run against a key of another type, word for word what Redis's own
// commands answer. [intro] "Getting the key type" (ReplyWithError(ctx,
// REDISMODULE_ERRORMSG_WRONGTYPE)); text from redismodule.h 7.0.
inline constexpr const char* REDISMODULE_ERRORMSG_WRONGTYPE =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

// ---------------------------------------------------------------------------------------------
// Replies. [ref] "Reply APIs".

// Pass as the length of ReplyWithArray / ReplyWithMap and set it later with ReplySet*Length.
// [ref] "Reply APIs" introduction (REDISMODULE_POSTPONED_LEN, formerly _ARRAY_LEN).
inline constexpr long REDISMODULE_POSTPONED_LEN = -1;
inline constexpr long REDISMODULE_POSTPONED_ARRAY_LEN = REDISMODULE_POSTPONED_LEN;

// ---------------------------------------------------------------------------------------------
// Context flags answered by RedisModule_GetContextFlags. [ref] RedisModule_GetContextFlags
// lists the names; the bit values are from redismodule.h 7.0 (the reference does not spell them
// out, and omits DENY_BLOCKING and ASYNC_LOADING). There is no "deny OOM" context flag: denying
// writes under maxmemory is the "deny-oom" command flag of RedisModule_CreateCommand, and OOM
// below tells whether the server is currently over maxmemory.
inline constexpr int REDISMODULE_CTX_FLAGS_LUA = 1 << 0;
inline constexpr int REDISMODULE_CTX_FLAGS_MULTI = 1 << 1;
inline constexpr int REDISMODULE_CTX_FLAGS_MASTER = 1 << 2;
inline constexpr int REDISMODULE_CTX_FLAGS_SLAVE = 1 << 3;
inline constexpr int REDISMODULE_CTX_FLAGS_READONLY = 1 << 4;
inline constexpr int REDISMODULE_CTX_FLAGS_CLUSTER = 1 << 5;
inline constexpr int REDISMODULE_CTX_FLAGS_AOF = 1 << 6;
inline constexpr int REDISMODULE_CTX_FLAGS_RDB = 1 << 7;
inline constexpr int REDISMODULE_CTX_FLAGS_MAXMEMORY = 1 << 8;
inline constexpr int REDISMODULE_CTX_FLAGS_EVICT = 1 << 9;
inline constexpr int REDISMODULE_CTX_FLAGS_OOM = 1 << 10;
inline constexpr int REDISMODULE_CTX_FLAGS_OOM_WARNING = 1 << 11;
inline constexpr int REDISMODULE_CTX_FLAGS_REPLICATED = 1 << 12;  // sent by the master
inline constexpr int REDISMODULE_CTX_FLAGS_LOADING = 1 << 13;
inline constexpr int REDISMODULE_CTX_FLAGS_REPLICA_IS_STALE = 1 << 14;
inline constexpr int REDISMODULE_CTX_FLAGS_REPLICA_IS_CONNECTING = 1 << 15;
inline constexpr int REDISMODULE_CTX_FLAGS_REPLICA_IS_TRANSFERRING = 1 << 16;
inline constexpr int REDISMODULE_CTX_FLAGS_REPLICA_IS_ONLINE = 1 << 17;
inline constexpr int REDISMODULE_CTX_FLAGS_ACTIVE_CHILD = 1 << 18;
inline constexpr int REDISMODULE_CTX_FLAGS_MULTI_DIRTY = 1 << 19;
inline constexpr int REDISMODULE_CTX_FLAGS_IS_CHILD = 1 << 20;
inline constexpr int REDISMODULE_CTX_FLAGS_DENY_BLOCKING = 1 << 21;
inline constexpr int REDISMODULE_CTX_FLAGS_RESP3 = 1 << 22;  // the calling client speaks RESP3
inline constexpr int REDISMODULE_CTX_FLAGS_ASYNC_LOADING = 1 << 23;

// ---------------------------------------------------------------------------------------------
// Module options. [ref] RedisModule_SetModuleOptions, values from redismodule.h 7.0.

// rdb_load must check RedisModule_IsIOError after reads and return NULL on error instead of the
// server terminating on a short read (needed to refuse a corrupt RESTORE payload).
inline constexpr int REDISMODULE_OPTIONS_HANDLE_IO_ERRORS = 1 << 0;
inline constexpr int REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED = 1 << 1;
inline constexpr int REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD = 1 << 2;

// ---------------------------------------------------------------------------------------------
// Logging levels for RedisModule_Log / LogIOError. [ref] "Logging", RedisModule_Log.
inline constexpr const char* REDISMODULE_LOGLEVEL_DEBUG = "debug";
inline constexpr const char* REDISMODULE_LOGLEVEL_VERBOSE = "verbose";
inline constexpr const char* REDISMODULE_LOGLEVEL_NOTICE = "notice";
inline constexpr const char* REDISMODULE_LOGLEVEL_WARNING = "warning";

// ---------------------------------------------------------------------------------------------
// Command info (Redis 7.0 key specs). [ref] RedisModule_SetCommandInfo describes every struct
// and field below; the enum values and flag bits are from redismodule.h 7.0.

// How the first key is found. INVALID (0) ends the key_specs array.
enum RedisModuleKeySpecBeginSearchType : int {
  REDISMODULE_KSPEC_BS_INVALID = 0,
  REDISMODULE_KSPEC_BS_UNKNOWN,
  REDISMODULE_KSPEC_BS_INDEX,
  REDISMODULE_KSPEC_BS_KEYWORD,
};

// Which arguments after the first key are keys. OMITTED (0) means exactly one key.
enum RedisModuleKeySpecFindKeysType : int {
  REDISMODULE_KSPEC_FK_OMITTED = 0,
  REDISMODULE_KSPEC_FK_UNKNOWN,
  REDISMODULE_KSPEC_FK_RANGE,
  REDISMODULE_KSPEC_FK_KEYNUM,
};

// Key-spec flags: exactly one of RO/RW/OW/RM, plus what happens to the user data.
inline constexpr uint64_t REDISMODULE_CMD_KEY_RO = 1ULL << 0;
inline constexpr uint64_t REDISMODULE_CMD_KEY_RW = 1ULL << 1;
inline constexpr uint64_t REDISMODULE_CMD_KEY_OW = 1ULL << 2;
inline constexpr uint64_t REDISMODULE_CMD_KEY_RM = 1ULL << 3;
inline constexpr uint64_t REDISMODULE_CMD_KEY_ACCESS = 1ULL << 4;
inline constexpr uint64_t REDISMODULE_CMD_KEY_UPDATE = 1ULL << 5;
inline constexpr uint64_t REDISMODULE_CMD_KEY_INSERT = 1ULL << 6;
inline constexpr uint64_t REDISMODULE_CMD_KEY_DELETE = 1ULL << 7;
inline constexpr uint64_t REDISMODULE_CMD_KEY_NOT_KEY = 1ULL << 8;
inline constexpr uint64_t REDISMODULE_CMD_KEY_INCOMPLETE = 1ULL << 9;
inline constexpr uint64_t REDISMODULE_CMD_KEY_VARIABLE_FLAGS = 1ULL << 10;

struct RedisModuleCommandKeySpec {
  const char* notes = nullptr;
  uint64_t flags = 0;  // REDISMODULE_CMD_KEY_*
  RedisModuleKeySpecBeginSearchType begin_search_type{};
  union {
    struct {
      int pos;  // argv index of the first key
    } index;
    struct {
      const char* keyword;
      int startfrom;
    } keyword;
  } bs{};
  RedisModuleKeySpecFindKeysType find_keys_type{};
  union {
    struct {
      int lastkey;  // relative to the first key; 0 = the first key is the only one
      int keystep;
      int limit;
    } range;
    struct {
      int keynumidx;
      int firstkey;
      int keystep;
    } keynum;
  } fk{};
};

// Argument descriptions shown by COMMAND DOCS. The reference's struct omits deprecated_since,
// which redismodule.h 7.0 has (and 7.2 appends display_text; the server reads arguments with
// the sizeof passed in RedisModuleCommandInfoVersion, so this 7.0 layout stays valid).
enum RedisModuleCommandArgType : int {
  REDISMODULE_ARG_TYPE_STRING,
  REDISMODULE_ARG_TYPE_INTEGER,
  REDISMODULE_ARG_TYPE_DOUBLE,
  REDISMODULE_ARG_TYPE_KEY,  // a string that is a key name; set key_spec_index
  REDISMODULE_ARG_TYPE_PATTERN,
  REDISMODULE_ARG_TYPE_UNIX_TIME,
  REDISMODULE_ARG_TYPE_PURE_TOKEN,
  REDISMODULE_ARG_TYPE_ONEOF,  // needs subargs
  REDISMODULE_ARG_TYPE_BLOCK,  // needs subargs
};

inline constexpr int REDISMODULE_CMD_ARG_NONE = 0;
inline constexpr int REDISMODULE_CMD_ARG_OPTIONAL = 1 << 0;
inline constexpr int REDISMODULE_CMD_ARG_MULTIPLE = 1 << 1;
inline constexpr int REDISMODULE_CMD_ARG_MULTIPLE_TOKEN = 1 << 2;

struct RedisModuleCommandArg {
  const char* name = nullptr;
  RedisModuleCommandArgType type{};
  int key_spec_index = 0;  // -1 when the argument is not a key
  const char* token = nullptr;
  const char* summary = nullptr;
  const char* since = nullptr;
  int flags = 0;  // REDISMODULE_CMD_ARG_*
  const char* deprecated_since = nullptr;
  RedisModuleCommandArg* subargs = nullptr;  // zero-terminated array, for ONEOF and BLOCK
};

struct RedisModuleCommandHistoryEntry {
  const char* since = nullptr;
  const char* changes = nullptr;
};

// Tells the server which layout the module was built with (version 1 = Redis 7.0).
struct RedisModuleCommandInfoVersion {
  int version = 0;
  size_t sizeof_historyentry = 0;
  size_t sizeof_keyspec = 0;
  size_t sizeof_arg = 0;
};

inline constexpr RedisModuleCommandInfoVersion kRedisModuleCommandInfoVersion1 = {
    1, sizeof(RedisModuleCommandHistoryEntry), sizeof(RedisModuleCommandKeySpec),
    sizeof(RedisModuleCommandArg)};
// Set RedisModuleCommandInfo::version to this. [ref] "Always set this field to
// REDISMODULE_COMMAND_INFO_VERSION".
inline constexpr const RedisModuleCommandInfoVersion* REDISMODULE_COMMAND_INFO_VERSION =
    &kRedisModuleCommandInfoVersion1;

struct RedisModuleCommandInfo {
  const RedisModuleCommandInfoVersion* version = nullptr;
  const char* summary = nullptr;
  const char* complexity = nullptr;
  const char* since = nullptr;
  RedisModuleCommandHistoryEntry* history = nullptr;  // zero-terminated
  const char* tips = nullptr;
  int arity = 0;  // like CreateCommand's: N exact, -N at least N (the server checks it first)
  RedisModuleCommandKeySpec* key_specs = nullptr;  // terminated by begin_search_type == INVALID
  RedisModuleCommandArg* args = nullptr;           // zero-terminated
};

// ---------------------------------------------------------------------------------------------
// Native types. [ref] "Modules data types", RedisModule_CreateDataType; [types].

// Struct version 4 is Redis 7.0's: it adds mem_usage2, free_effort2, unlink2 and copy2 after
// the version 3 fields (free_effort, unlink, copy, defrag); 2 added aux_*; 7.2's version 5
// appends aux_save2. The server reads only the fields its version knows.
inline constexpr uint64_t REDISMODULE_TYPE_METHOD_VERSION = 4;

// aux_save_triggers bits and the `when` argument of aux_load/aux_save: save module-global data
// before or after the keyspace in the RDB. [ref] RedisModule_CreateDataType (aux_save).
inline constexpr int REDISMODULE_AUX_BEFORE_RDB = 1 << 0;
inline constexpr int REDISMODULE_AUX_AFTER_RDB = 1 << 1;

using RedisModuleTypeLoadFunc = void* (*)(RedisModuleIO* rdb, int encver);
using RedisModuleTypeSaveFunc = void (*)(RedisModuleIO* rdb, void* value);
using RedisModuleTypeAuxLoadFunc = int (*)(RedisModuleIO* rdb, int encver, int when);
using RedisModuleTypeAuxSaveFunc = void (*)(RedisModuleIO* rdb, int when);
using RedisModuleTypeRewriteFunc = void (*)(RedisModuleIO* aof, RedisModuleString* key,
                                            void* value);
using RedisModuleTypeMemUsageFunc = size_t (*)(const void* value);
using RedisModuleTypeDigestFunc = void (*)(RedisModuleDigest* digest, void* value);
using RedisModuleTypeFreeFunc = void (*)(void* value);
using RedisModuleTypeFreeEffortFunc = size_t (*)(RedisModuleString* key, const void* value);
using RedisModuleTypeUnlinkFunc = void (*)(RedisModuleString* key, const void* value);
using RedisModuleTypeCopyFunc = void* (*)(RedisModuleString* fromkey, RedisModuleString* tokey,
                                          const void* value);
using RedisModuleTypeDefragFunc = int (*)(RedisModuleDefragCtx* ctx, RedisModuleString* key,
                                          void** value);
using RedisModuleTypeMemUsageFunc2 = size_t (*)(RedisModuleKeyOptCtx* ctx, const void* value,
                                                size_t sample_size);
using RedisModuleTypeFreeEffortFunc2 = size_t (*)(RedisModuleKeyOptCtx* ctx, const void* value);
using RedisModuleTypeUnlinkFunc2 = void (*)(RedisModuleKeyOptCtx* ctx, const void* value);
using RedisModuleTypeCopyFunc2 = void* (*)(RedisModuleKeyOptCtx* ctx, const void* value);

// Field order is ABI: the server reads it by position.
struct RedisModuleTypeMethods {
  uint64_t version = 0;  // REDISMODULE_TYPE_METHOD_VERSION
  RedisModuleTypeLoadFunc rdb_load = nullptr;
  RedisModuleTypeSaveFunc rdb_save = nullptr;
  RedisModuleTypeRewriteFunc aof_rewrite = nullptr;
  RedisModuleTypeMemUsageFunc mem_usage = nullptr;
  RedisModuleTypeDigestFunc digest = nullptr;
  RedisModuleTypeFreeFunc free = nullptr;
  // version 2
  RedisModuleTypeAuxLoadFunc aux_load = nullptr;
  RedisModuleTypeAuxSaveFunc aux_save = nullptr;
  int aux_save_triggers = 0;  // REDISMODULE_AUX_*
  // version 3
  RedisModuleTypeFreeEffortFunc free_effort = nullptr;
  RedisModuleTypeUnlinkFunc unlink = nullptr;
  RedisModuleTypeCopyFunc copy = nullptr;
  RedisModuleTypeDefragFunc defrag = nullptr;
  // version 4 (Redis 7.0); when set, the server calls these instead of their version 3 twins
  RedisModuleTypeMemUsageFunc2 mem_usage2 = nullptr;
  RedisModuleTypeFreeEffortFunc2 free_effort2 = nullptr;
  RedisModuleTypeUnlinkFunc2 unlink2 = nullptr;
  RedisModuleTypeCopyFunc2 copy2 = nullptr;
};

// Layout guards for the platforms rl builds on (LP64): a moved field is a silent ABI break.
#if defined(__LP64__)
static_assert(sizeof(RedisModuleCommandKeySpec) == 56);
static_assert(offsetof(RedisModuleCommandKeySpec, begin_search_type) == 16);
static_assert(offsetof(RedisModuleCommandKeySpec, bs) == 24);
static_assert(offsetof(RedisModuleCommandKeySpec, find_keys_type) == 40);
static_assert(offsetof(RedisModuleCommandKeySpec, fk) == 44);
static_assert(sizeof(RedisModuleCommandArg) == 64);
static_assert(sizeof(RedisModuleCommandInfo) == 72);
static_assert(offsetof(RedisModuleCommandInfo, arity) == 48);
static_assert(offsetof(RedisModuleCommandInfo, key_specs) == 56);
static_assert(offsetof(RedisModuleTypeMethods, aux_save_triggers) == 72);
static_assert(offsetof(RedisModuleTypeMethods, free_effort) == 80);
static_assert(offsetof(RedisModuleTypeMethods, mem_usage2) == 112);
static_assert(sizeof(RedisModuleTypeMethods) == 144);
#endif

// ---------------------------------------------------------------------------------------------
// Server events. [ref] RedisModule_SubscribeToServerEvent names each event and sub-event; the
// struct and the ids are redismodule.h 7.0's (which passes RedisModuleEvent by value and spells
// each event as {id, dataver 1}).
struct RedisModuleEvent {
  uint64_t id;       // REDISMODULE_EVENT_*
  uint64_t dataver;  // version of the struct passed as the callback's data
};
inline constexpr RedisModuleEvent RedisModuleEvent_ReplicationRoleChanged = {0, 1};
inline constexpr RedisModuleEvent RedisModuleEvent_ReplicaChange = {6, 1};
inline constexpr RedisModuleEvent RedisModuleEvent_CronLoop = {8, 1};  // every serverCron (hz)
inline constexpr RedisModuleEvent RedisModuleEvent_ForkChild = {13, 1};
// Sub-events of ForkChild: fired in the parent right after fork() and when the child is gone.
inline constexpr uint64_t REDISMODULE_SUBEVENT_FORK_CHILD_BORN = 0;
inline constexpr uint64_t REDISMODULE_SUBEVENT_FORK_CHILD_DIED = 1;

// ---------------------------------------------------------------------------------------------
// Modules Cluster API and Timers API. [ref] "Modules Cluster API": node ids are exactly this many
// bytes, without a terminating zero (GetMyClusterID, GetClusterNodesList, a receiver's
// sender_id); SendClusterMessage's target_id is read as a C string.
inline constexpr size_t REDISMODULE_NODE_ID_LEN = 40;
using RedisModuleTimerID = uint64_t;

// ---------------------------------------------------------------------------------------------
// Callback types taken by API functions.
using RedisModuleCmdFunc = int (*)(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);
// [ref] RedisModule_RegisterClusterMessageReceiver; runs on the main thread.
using RedisModuleClusterMessageReceiver = void (*)(RedisModuleCtx* ctx, const char* sender_id,
                                                   uint8_t type, const unsigned char* payload,
                                                   uint32_t len);
// [ref] RedisModule_CreateTimer: called once, on the main thread, `period` ms after creation.
using RedisModuleTimerProc = void (*)(RedisModuleCtx* ctx, void* data);
using RedisModuleInfoFunc = void (*)(RedisModuleInfoCtx* ctx, int for_crash_report);
using RedisModuleEventCallback = void (*)(RedisModuleCtx* ctx, RedisModuleEvent eid,
                                          uint64_t subevent, void* data);

// ---------------------------------------------------------------------------------------------
// The API functions, one row each: X(return type, name without "RedisModule_", parameters).
// RedisModule_Init fetches every row; a server that lacks one leaves it null, which
// rl::redis_module::FirstMissingFunction() reports. Grouped by [ref] section.
#define RL_REDISMODULE_API_FUNCTIONS(X)                                                           \
  /* Heap allocation raw functions: memory the server counts (INFO, maxmemory). */                \
  X(void*, Alloc, (size_t bytes))                                                                 \
  X(void*, Calloc, (size_t nmemb, size_t size))                                                   \
  X(void*, Realloc, (void* ptr, size_t bytes))                                                    \
  X(void, Free, (void* ptr))                                                                      \
  /* Miscellaneous APIs: usable size of an allocation made with Alloc (7.0). */                   \
  X(size_t, MallocSize, (void* ptr))                                                              \
  /* Used memory as maxmemory counts it (replica and AOF buffers excluded) / maxmemory; 0 when */ \
  /* maxmemory is 0 (6.0). */                                                                     \
  X(float, GetUsedMemoryRatio, ())                                                                \
  /* Module information (SetModuleAttribs is what Init ends with). */                             \
  X(void, SetModuleAttribs, (RedisModuleCtx * ctx, const char* name, int ver, int apiver))        \
  X(int, IsModuleNameBusy, (const char* name))                                                    \
  X(void, SetModuleOptions, (RedisModuleCtx * ctx, int options))                                  \
  X(int, GetServerVersion, ())     /* 0x00MMmmpp (7.0) */                                         \
  X(int, GetTypeMethodVersion, ()) /* the server's REDISMODULE_TYPE_METHOD_VERSION (7.0) */       \
  /* Commands API. */                                                                             \
  X(int, CreateCommand,                                                                           \
    (RedisModuleCtx * ctx, const char* name, RedisModuleCmdFunc cmdfunc, const char* strflags,    \
     int firstkey, int lastkey, int keystep))                                                     \
  X(RedisModuleCommand*, GetCommand, (RedisModuleCtx * ctx, const char* name))                    \
  X(int, CreateSubcommand,                                                                        \
    (RedisModuleCommand * parent, const char* name, RedisModuleCmdFunc cmdfunc,                   \
     const char* strflags, int firstkey, int lastkey, int keystep))                               \
  X(int, SetCommandInfo, (RedisModuleCommand * command, const RedisModuleCommandInfo* info))      \
  X(int, IsKeysPositionRequest, (RedisModuleCtx * ctx))                                           \
  X(void, KeyAtPos, (RedisModuleCtx * ctx, int pos))                                              \
  /* Reply APIs. */                                                                               \
  X(int, WrongArity, (RedisModuleCtx * ctx))                                                      \
  X(int, ReplyWithError, (RedisModuleCtx * ctx, const char* err))                                 \
  X(int, ReplyWithSimpleString, (RedisModuleCtx * ctx, const char* msg))                          \
  X(int, ReplyWithLongLong, (RedisModuleCtx * ctx, long long ll))                                 \
  X(int, ReplyWithStringBuffer, (RedisModuleCtx * ctx, const char* buf, size_t len))              \
  X(int, ReplyWithCString, (RedisModuleCtx * ctx, const char* buf))                               \
  X(int, ReplyWithNull, (RedisModuleCtx * ctx))                                                   \
  X(int, ReplyWithArray, (RedisModuleCtx * ctx, long len))                                        \
  X(int, ReplyWithMap, (RedisModuleCtx * ctx, long len)) /* RESP2: flat array of 2*len */         \
  X(void, ReplySetArrayLength, (RedisModuleCtx * ctx, long len))                                  \
  X(void, ReplySetMapLength, (RedisModuleCtx * ctx, long len))                                    \
  X(int, ReplyWithVerbatimString, (RedisModuleCtx * ctx, const char* buf, size_t len))            \
  X(int, ReplyWithDouble, (RedisModuleCtx * ctx, double d))                                       \
  /* String objects APIs. */                                                                      \
  X(RedisModuleString*, CreateString, (RedisModuleCtx * ctx, const char* ptr, size_t len))        \
  X(void, FreeString, (RedisModuleCtx * ctx, RedisModuleString * str))                            \
  X(const char*, StringPtrLen, (const RedisModuleString* str, size_t* len))                       \
  X(int, StringToLongLong, (const RedisModuleString* str, long long* ll))                         \
  /* Commands replication API: Replicate takes RedisModule_Call's format ("s", "b", "c", "l"). */ \
  X(int, Replicate, (RedisModuleCtx * ctx, const char* cmdname, const char* fmt, ...))            \
  X(int, ReplicateVerbatim, (RedisModuleCtx * ctx))                                               \
  /* DB and Key APIs - Generic API. */                                                            \
  X(unsigned long long, GetClientId, (RedisModuleCtx * ctx))                                      \
  X(int, GetContextFlags, (RedisModuleCtx * ctx))                                                 \
  X(unsigned long long, DbSize, (RedisModuleCtx * ctx)) /* keys in the selected db (DBSIZE) */    \
  X(RedisModuleKey*, OpenKey, (RedisModuleCtx * ctx, RedisModuleString * keyname, int mode))      \
  X(void, CloseKey, (RedisModuleKey * key))                                                       \
  X(int, KeyType, (RedisModuleKey * key))                                                         \
  X(int, DeleteKey, (RedisModuleKey * key))                                                       \
  /* Key API for String type: a string key's bytes (an integer-encoded one decoded first). */     \
  X(char*, StringDMA, (RedisModuleKey * key, size_t * len, int mode))                             \
  /* With REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED: WATCH/tracking see explicit calls. */   \
  X(int, SignalModifiedKey, (RedisModuleCtx * ctx, RedisModuleString * keyname))                  \
  X(long long, GetExpire, (RedisModuleKey * key)) /* remaining ms, or NO_EXPIRE */                \
  X(int, SetExpire, (RedisModuleKey * key, long long expire))                                     \
  X(long long, GetAbsExpire, (RedisModuleKey * key)) /* unix ms, or NO_EXPIRE */                  \
  X(int, SetAbsExpire, (RedisModuleKey * key, long long expire))                                  \
  /* Module information and time measurement. */                                                  \
  X(long long, Milliseconds, ())         /* unix time in ms */                                    \
  X(uint64_t, MonotonicMicroseconds, ()) /* arbitrary origin (7.0) */                             \
  /* Modules data types. */                                                                       \
  X(RedisModuleType*, CreateDataType,                                                             \
    (RedisModuleCtx * ctx, const char* name, int encver, RedisModuleTypeMethods* typemethods))    \
  X(int, ModuleTypeSetValue, (RedisModuleKey * key, RedisModuleType * mt, void* value))           \
  X(int, ModuleTypeReplaceValue,                                                                  \
    (RedisModuleKey * key, RedisModuleType * mt, void* new_value, void** old_value))              \
  X(RedisModuleType*, ModuleTypeGetType, (RedisModuleKey * key))                                  \
  X(void*, ModuleTypeGetValue, (RedisModuleKey * key))                                            \
  /* RDB loading and saving functions. */                                                         \
  X(int, IsIOError, (RedisModuleIO * io))                                                         \
  X(void, SaveUnsigned, (RedisModuleIO * io, uint64_t value))                                     \
  X(uint64_t, LoadUnsigned, (RedisModuleIO * io))                                                 \
  X(void, SaveSigned, (RedisModuleIO * io, int64_t value))                                        \
  X(int64_t, LoadSigned, (RedisModuleIO * io))                                                    \
  X(void, SaveStringBuffer, (RedisModuleIO * io, const char* str, size_t len))                    \
  X(char*, LoadStringBuffer, (RedisModuleIO * io, size_t * lenptr)) /* free with Free */          \
  /* Key digest API (DEBUG DIGEST). */                                                            \
  X(void, DigestAddStringBuffer, (RedisModuleDigest * md, const char* ele, size_t len))           \
  X(void, DigestAddLongLong, (RedisModuleDigest * md, long long ele))                             \
  X(void, DigestEndSequence, (RedisModuleDigest * md))                                            \
  /* AOF API for modules data types: only inside aof_rewrite. */                                  \
  X(void, EmitAOF, (RedisModuleIO * io, const char* cmdname, const char* fmt, ...))               \
  /* Logging. */                                                                                  \
  X(void, Log, (RedisModuleCtx * ctx, const char* level, const char* fmt, ...))                   \
  X(void, LogIOError, (RedisModuleIO * io, const char* levelstr, const char* fmt, ...))           \
  /* Modules Info fields: sections and fields are prefixed with the module name. */               \
  X(int, RegisterInfoFunc, (RedisModuleCtx * ctx, RedisModuleInfoFunc cb))                        \
  X(int, InfoAddSection, (RedisModuleInfoCtx * ctx, const char* name))                            \
  X(int, InfoAddFieldLongLong, (RedisModuleInfoCtx * ctx, const char* field, long long value))    \
  X(int, InfoAddFieldCString, (RedisModuleInfoCtx * ctx, const char* field, const char* value))   \
  /* Module ACL API (7.0): the ACL user of a client; NULL with errno ENOTSUP when it has none */  \
  /* (a master's link, the AOF), ENOENT for a client without a connection (scripts, RM_Call). */  \
  X(RedisModuleString*, GetClientUserNameById, (RedisModuleCtx * ctx, uint64_t id))               \
  X(RedisModuleUser*, GetModuleUserFromUserName, (RedisModuleString * name))                      \
  X(int, ACLCheckCommandPermissions,                                                              \
    (RedisModuleUser * user, RedisModuleString * *argv, int argc))                                \
  X(int, FreeModuleUser, (RedisModuleUser * user))                                                \
  /* The server's own INFO, one section at a time. */                                             \
  X(RedisModuleServerInfoData*, GetServerInfo, (RedisModuleCtx * ctx, const char* section))       \
  X(void, FreeServerInfo, (RedisModuleCtx * ctx, RedisModuleServerInfoData * data))               \
  X(const char*, ServerInfoGetFieldC, (RedisModuleServerInfoData * data, const char* field))      \
  X(unsigned long long, ServerInfoGetFieldUnsigned,                                               \
    (RedisModuleServerInfoData * data, const char* field, int* out_err))                          \
  /* Server hooks. */                                                                             \
  X(int, SubscribeToServerEvent,                                                                  \
    (RedisModuleCtx * ctx, RedisModuleEvent event, RedisModuleEventCallback callback))            \
  /* Modules Cluster API (proven by tests/module/rl_cluster_test.cc, not the probe): messages */  \
  /* over the cluster bus reach connected nodes only; a null target broadcasts. The receiver */   \
  /* does nothing outside cluster mode. */                                                        \
  X(void, RegisterClusterMessageReceiver,                                                         \
    (RedisModuleCtx * ctx, uint8_t type, RedisModuleClusterMessageReceiver callback))             \
  X(int, SendClusterMessage,                                                                      \
    (RedisModuleCtx * ctx, const char* target_id, uint8_t type, const char* msg, uint32_t len))   \
  X(const char*, GetMyClusterID, ()) /* null outside cluster mode */                              \
  X(char**, GetClusterNodesList, (RedisModuleCtx * ctx, size_t * numnodes))                       \
  X(void, FreeClusterNodesList, (char** ids))                                                     \
  /* Modules Timers API. */                                                                       \
  X(RedisModuleTimerID, CreateTimer,                                                              \
    (RedisModuleCtx * ctx, long long period, RedisModuleTimerProc callback, void* data))

// The function pointers, named as in the reference (RedisModule_<name>), null until Init.
#define RL_REDISMODULE_DECLARE_POINTER(ret, name, params) \
  inline ret(*RedisModule_##name) params = nullptr;
RL_REDISMODULE_API_FUNCTIONS(RL_REDISMODULE_DECLARE_POINTER)
#undef RL_REDISMODULE_DECLARE_POINTER

// The server's lookup function: fills *target_ptr (a pointer to a function pointer) with the
// function called `name` ("RedisModule_CreateCommand"); REDISMODULE_ERR when it has none.
inline int (*RedisModule_GetApi)(const char* name, void* target_ptr) = nullptr;

// Call first in RedisModule_OnLoad. Takes GetApi from the first word of the context (the
// server's documented contract: RedisModuleCtx starts with it), fetches every function above,
// refuses a name another loaded module already uses, and registers the module's name and
// version. Returns REDISMODULE_ERR if the name is taken. [intro] "RedisModule_Init".
inline int RedisModule_Init(RedisModuleCtx* ctx, const char* name, int module_version,
                            int api_version) {
  void* getapi = *reinterpret_cast<void**>(ctx);
  RedisModule_GetApi = reinterpret_cast<int (*)(const char*, void*)>(getapi);
#define RL_REDISMODULE_FETCH(ret, name, params) \
  RedisModule_GetApi("RedisModule_" #name, reinterpret_cast<void*>(&RedisModule_##name));
  RL_REDISMODULE_API_FUNCTIONS(RL_REDISMODULE_FETCH)
#undef RL_REDISMODULE_FETCH
  if (RedisModule_IsModuleNameBusy != nullptr && RedisModule_IsModuleNameBusy(name)) {
    return REDISMODULE_ERR;
  }
  if (RedisModule_SetModuleAttribs == nullptr) return REDISMODULE_ERR;
  RedisModule_SetModuleAttribs(ctx, name, module_version, api_version);
  return REDISMODULE_OK;
}

namespace rl::redis_module {

// After RedisModule_Init: the name of the first declared function the server did not provide
// ("RedisModule_MonotonicMicroseconds" on a server older than 7.0), or nullptr when all are
// there. A module should refuse to load (log it, return REDISMODULE_ERR) rather than crash later.
inline const char* FirstMissingFunction() {
#define RL_REDISMODULE_CHECK(ret, name, params) \
  if (RedisModule_##name == nullptr) return "RedisModule_" #name;
  RL_REDISMODULE_API_FUNCTIONS(RL_REDISMODULE_CHECK)
#undef RL_REDISMODULE_CHECK
  return nullptr;
}

}  // namespace rl::redis_module

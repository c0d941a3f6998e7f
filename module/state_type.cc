// The "ratelimit" type: callbacks over rl::KeyState's encoding, and key access for commands.
#include "state_type.h"

#include <atomic>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "glue.h"
#include "policies.h"

namespace rl::module {
namespace {

// Nine characters, as the type API requires; what TYPE answers.
constexpr const char* kTypeName = "ratelimit";
// Encoding version of the RDB value: one string holding KeyState::Encode's bytes (which carry
// their own format version inside).
constexpr int kEncodingVersion = 1;

RedisModuleType* g_type = nullptr;
std::atomic<uint64_t> g_rejected_loads{0};

// Values live in Redis's allocator, so INFO memory and maxmemory count them.
KeyState* NewState(KeyState&& from) {
  void* p = RedisModule_Alloc(sizeof(KeyState));
  return new (p) KeyState(std::move(from));
}
void FreeState(void* value) {
  if (value == nullptr) return;
  static_cast<KeyState*>(value)->~KeyState();
  RedisModule_Free(value);
}

std::string Encoded(const void* value) {
  std::string out;
  static_cast<const KeyState*>(value)->Encode(&out);
  return out;
}

void* RdbLoad(RedisModuleIO* rdb, int encver) {
  if (encver != kEncodingVersion) {
    RedisModule_LogIOError(rdb, REDISMODULE_LOGLEVEL_WARNING,
                           "rl: ratelimit value of unknown encoding version %d", encver);
    ++g_rejected_loads;
    return nullptr;
  }
  size_t len = 0;
  char* buf = RedisModule_LoadStringBuffer(rdb, &len);
  if (RedisModule_IsIOError(rdb) || buf == nullptr) {
    if (buf != nullptr) RedisModule_Free(buf);
    RedisModule_LogIOError(rdb, REDISMODULE_LOGLEVEL_WARNING, "rl: truncated ratelimit value");
    ++g_rejected_loads;
    return nullptr;
  }
  absl::StatusOr<KeyState> state = KeyState::Decode(std::string_view(buf, len));
  RedisModule_Free(buf);
  if (!state.ok()) {
    RedisModule_LogIOError(rdb, REDISMODULE_LOGLEVEL_WARNING, "rl: %s",
                           std::string(state.status().message()).c_str());
    ++g_rejected_loads;
    return nullptr;
  }
  return NewState(*std::move(state));
}

void RdbSave(RedisModuleIO* rdb, void* value) {
  const std::string bytes = Encoded(value);
  RedisModule_SaveStringBuffer(rdb, bytes.data(), bytes.size());
}

void AofRewrite(RedisModuleIO* aof, RedisModuleString* key, void* value) {
  const std::string bytes = Encoded(value);
  RedisModule_EmitAOF(aof, "RL.SETSTATE", "sb", key, bytes.data(), bytes.size());
}

size_t MemUsage(const void* value) {
  return sizeof(KeyState) + static_cast<const KeyState*>(value)->MemoryBytes();
}

void Digest(RedisModuleDigest* digest, void* value) {
  const std::string bytes = Encoded(value);
  RedisModule_DigestAddStringBuffer(digest, bytes.data(), bytes.size());
  RedisModule_DigestEndSequence(digest);
}

void* Copy(RedisModuleString*, RedisModuleString*, const void* value) {
  absl::StatusOr<KeyState> copy = KeyState::Decode(Encoded(value));
  return copy.ok() ? NewState(*std::move(copy)) : nullptr;
}

size_t FreeEffort(RedisModuleString*, const void* value) {
  return static_cast<const KeyState*>(value)->size();
}

void ReplicateState(RedisModuleCtx* ctx, RedisModuleString* name, const KeyState& state) {
  std::string bytes;
  state.Encode(&bytes);
  RedisModule_Replicate(ctx, "RL.SETSTATE", "sb", name, bytes.data(), bytes.size());
}

absl::Status WrongType() { return absl::FailedPreconditionError(REDISMODULE_ERRORMSG_WRONGTYPE); }

// The key's TTL for states fresh at `expiry_ms` (> now_ms). Redis adds its wall clock to the
// TTL, so an absurd expiry (a forged RL.SETSTATE, a GCRA with a burst of 2^40 over ten years)
// is capped at a century rather than overflowing there.
int64_t TtlMs(int64_t expiry_ms, int64_t now_ms) {
  constexpr int64_t kMaxTtlMs = int64_t{100} * 365 * 24 * 3600 * 1000;
  return expiry_ms - now_ms > kMaxTtlMs ? kMaxTtlMs : expiry_ms - now_ms;
}

}  // namespace

bool RegisterStateType(RedisModuleCtx* ctx) {
  RedisModuleTypeMethods methods;
  methods.version = REDISMODULE_TYPE_METHOD_VERSION;
  methods.rdb_load = RdbLoad;
  methods.rdb_save = RdbSave;
  methods.aof_rewrite = AofRewrite;
  methods.mem_usage = MemUsage;
  methods.digest = Digest;
  methods.free = FreeState;
  methods.aux_load = PoliciesAuxLoad;
  methods.aux_save = PoliciesAuxSave;
  methods.aux_save_triggers = REDISMODULE_AUX_BEFORE_RDB;
  methods.free_effort = FreeEffort;
  methods.copy = Copy;
  g_type = RedisModule_CreateDataType(ctx, kTypeName, kEncodingVersion, &methods);
  return g_type != nullptr;
}

uint64_t RejectedLoads() { return g_rejected_loads.load(std::memory_order_relaxed); }

StateKey::StateKey(RedisModuleCtx* ctx, RedisModuleString* name, int mode)
    : ctx_(ctx), name_(name) {
  key_ = static_cast<RedisModuleKey*>(RedisModule_OpenKey(ctx, name, mode));
  const int type = RedisModule_KeyType(key_);
  if (type == REDISMODULE_KEYTYPE_EMPTY) return;
  if (type != REDISMODULE_KEYTYPE_MODULE || RedisModule_ModuleTypeGetType(key_) != g_type) {
    status_ = WrongType();
    return;
  }
  stored_ = static_cast<KeyState*>(RedisModule_ModuleTypeGetValue(key_));
}

StateKey::~StateKey() {
  if (key_ != nullptr) RedisModule_CloseKey(key_);
}

void StateKey::Commit(int64_t now_ms) {
  KeyState& s = state();
  if (s.empty() || s.ExpiryMs() <= now_ms) {
    if (stored_ != nullptr) {
      RedisModule_DeleteKey(key_);  // frees the value
      stored_ = nullptr;
      RedisModule_SignalModifiedKey(ctx_, name_);
      RedisModule_Replicate(ctx_, "DEL", "s", name_);
    }
    return;
  }
  if (stored_ == nullptr) {
    stored_ = NewState(std::move(fresh_));
    RedisModule_ModuleTypeSetValue(key_, g_type, stored_);
  }
  // Relative to this node's clock: the key expires when its states are fresh, whatever the
  // offset between the anchored clock and the server's wall clock.
  RedisModule_SetExpire(key_, TtlMs(stored_->ExpiryMs(), now_ms));
  RedisModule_SignalModifiedKey(ctx_, name_);
  ReplicateState(ctx_, name_, *stored_);
}

int SetStateCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  size_t len = 0;
  const char* bytes = RedisModule_StringPtrLen(argv[2], &len);
  absl::StatusOr<KeyState> decoded = KeyState::Decode(std::string_view(bytes, len));
  if (!decoded.ok()) {
    const std::string msg = "ERR " + std::string(decoded.status().message());
    return RedisModule_ReplyWithError(ctx, msg.c_str());
  }
  RedisModuleKey* key = static_cast<RedisModuleKey*>(
      RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE));
  const int type = RedisModule_KeyType(key);
  if (type != REDISMODULE_KEYTYPE_EMPTY &&
      (type != REDISMODULE_KEYTYPE_MODULE || RedisModule_ModuleTypeGetType(key) != g_type)) {
    RedisModule_CloseKey(key);
    return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
  }
  const int64_t now = Clock().NowMs();
  if (decoded->empty() || decoded->ExpiryMs() <= now) {
    // Nothing left that is not fresh: the key is gone (as on the master when it wrote this).
    if (type != REDISMODULE_KEYTYPE_EMPTY) RedisModule_DeleteKey(key);
  } else {
    const int64_t expiry = decoded->ExpiryMs();
    RedisModule_ModuleTypeSetValue(key, g_type, NewState(*std::move(decoded)));
    RedisModule_SetExpire(key, TtlMs(expiry, now));
  }
  RedisModule_CloseKey(key);
  RedisModule_SignalModifiedKey(ctx, argv[1]);
  RedisModule_ReplicateVerbatim(ctx);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

}  // namespace rl::module

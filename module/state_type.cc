// The "ratelimit" type: callbacks over rl::KeyState's encoding, and key access for commands.
#include "state_type.h"

#include <atomic>
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

// A key's value is its state's block (KeyState::ReleaseBlock), allocated by the state in Redis's
// allocator (rl::SetStateAllocator in OnLoad), so INFO memory and maxmemory count it. An empty
// state has no block; as a value (only a loaded or restored empty encoding makes one: commands
// delete a key whose states are gone) it is this marker, since rdb_load's null means failure.
char g_empty_marker;

void* ToValue(KeyState&& state) {
  void* block = state.ReleaseBlock();
  return block != nullptr ? block : &g_empty_marker;
}
void* BlockOf(const void* value) {
  return value == &g_empty_marker ? nullptr : const_cast<void*>(value);
}

// A stored value seen as a KeyState for the duration of a call: never freed here.
class Borrowed {
 public:
  explicit Borrowed(const void* value) : state_(KeyState::AdoptBlock(BlockOf(value))) {}
  ~Borrowed() { state_.ReleaseBlock(); }
  Borrowed(const Borrowed&) = delete;
  Borrowed& operator=(const Borrowed&) = delete;
  const KeyState& operator*() const { return state_; }
  const KeyState* operator->() const { return &state_; }

 private:
  KeyState state_;
};

void FreeState(void* value) {
  KeyState owned = KeyState::AdoptBlock(BlockOf(value));  // frees the block and its logs
}

std::string Encoded(const void* value) {
  std::string out;
  Borrowed(value)->Encode(&out);
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
  return ToValue(*std::move(state));
}

void RdbSave(RedisModuleIO* rdb, void* value) {
  const std::string bytes = Encoded(value);
  RedisModule_SaveStringBuffer(rdb, bytes.data(), bytes.size());
}

void AofRewrite(RedisModuleIO* aof, RedisModuleString* key, void* value) {
  const std::string bytes = Encoded(value);
  RedisModule_EmitAOF(aof, "RL.SETSTATE", "sb", key, bytes.data(), bytes.size());
}

// The block and the logs: all the memory the value holds (the key's value pointer itself lives
// in Redis's moduleValue).
size_t MemUsage(const void* value) { return Borrowed(value)->MemoryBytes(); }

void Digest(RedisModuleDigest* digest, void* value) {
  const std::string bytes = Encoded(value);
  RedisModule_DigestAddStringBuffer(digest, bytes.data(), bytes.size());
  RedisModule_DigestEndSequence(digest);
}

void* Copy(RedisModuleString*, RedisModuleString*, const void* value) {
  absl::StatusOr<KeyState> copy = KeyState::Decode(Encoded(value));
  return copy.ok() ? ToValue(*std::move(copy)) : nullptr;
}

size_t FreeEffort(RedisModuleString*, const void* value) { return Borrowed(value)->size(); }

absl::Status WrongType() { return absl::FailedPreconditionError(REDISMODULE_ERRORMSG_WRONGTYPE); }

// The key's TTL for states fresh at `expiry_ms` (> now_ms). Redis adds its wall clock to the
// TTL, so an absurd expiry (a forged RL.SETSTATE, a GCRA with a burst of 2^40 over ten years)
// is capped at a century rather than overflowing there.
int64_t TtlMs(int64_t expiry_ms, int64_t now_ms) {
  constexpr int64_t kMaxTtlMs = int64_t{100} * 365 * 24 * 3600 * 1000;
  return expiry_ms - now_ms > kMaxTtlMs ? kMaxTtlMs : expiry_ms - now_ms;
}

// Replays from upstream: the replication link or an AOF being loaded.
bool FromUpstream(int ctx_flags) {
  return (ctx_flags & (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING)) != 0;
}

// A replayed state's TTL on this node: a state kept from upstream although this node's clock
// says it has ended lives a millisecond (Redis expires nothing while loading, and a replica
// never expires the master's keys on its own: the master's DEL ends it).
int64_t ReplayTtlMs(int64_t expiry_ms, int64_t now_ms) {
  return expiry_ms > now_ms ? TtlMs(expiry_ms, now_ms) : 1;
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
  stored_ = true;
  value_ = RedisModule_ModuleTypeGetValue(key_);
  state_ = KeyState::AdoptBlock(BlockOf(value_));
}

StateKey::~StateKey() {
  if (stored_) {
    // A change without Commit (an error after Check pruned) may still have moved the block.
    Sync();
    state_.ReleaseBlock();  // the key owns it
  }
  if (key_ != nullptr) RedisModule_CloseKey(key_);
}

void StateKey::Sync() {
  if (state_.block() == BlockOf(value_)) return;
  void* value = state_.block() != nullptr ? const_cast<void*>(state_.block()) : &g_empty_marker;
  // The old block is already gone (moved or freed by the state): only the pointer changes.
  RedisModule_ModuleTypeReplaceValue(key_, g_type, value, nullptr);
  value_ = value;
}

// Every change goes through RedisModule_Replicate or _ReplicateVerbatim: besides propagating,
// they are what counts it in server.dirty (rdb_changes_since_last_save, what `save` points
// trigger on). With nothing downstream (MustPropagate false) there is no effect to build: the
// verbatim call only counts the change, and Redis drops its propagation unseen, as it drops
// every command's when no AOF, replica or backlog exists (server.c shouldPropagate).
template <class Replicate>
void StateKey::Propagate(bool replicate, Replicate&& effect) {
  if (replicate) {
    effect();
  } else {
    RedisModule_ReplicateVerbatim(ctx_);
  }
}

bool StateKey::Drop() {
  if (!stored_) return false;
  Sync();
  RedisModule_DeleteKey(key_);  // frees the value (the current block)
  state_.ReleaseBlock();
  stored_ = false;
  RedisModule_SignalModifiedKey(ctx_, name_);
  return true;
}

bool StateKey::Store(int64_t ttl_ms) {
  if (!stored_) {
    void* value = const_cast<void*>(state_.block());
    if (RedisModule_ModuleTypeSetValue(key_, g_type, value) != REDISMODULE_OK) return false;
    stored_ = true;
    value_ = value;
  } else {
    Sync();
  }
  // Relative to this node's clock: the key expires when its states are fresh, whatever the
  // offset between the anchored clock and the server's wall clock.
  RedisModule_SetExpire(key_, ttl_ms);
  RedisModule_SignalModifiedKey(ctx_, name_);
  return true;
}

void StateKey::Commit(int64_t now_ms, bool replicate, const Effect& effect) {
  const int64_t expiry_ms = state_.ExpiryMs();  // INT64_MIN when empty
  if (expiry_ms <= now_ms) {
    // A state never stored is freed with this StateKey.
    if (Drop()) Propagate(replicate, [&] { RedisModule_Replicate(ctx_, "DEL", "s", name_); });
    return;
  }
  if (!Store(TtlMs(expiry_ms, now_ms))) return;
  Propagate(replicate,
            [&] { ReplicateEffect(ctx_, name_, now_ms, effect, state_.size(), expiry_ms); });
}

void StateKey::CommitReplayed(int64_t op_now_ms, int ctx_flags) {
  const int64_t now_ms = Clock().NowMs();
  const int64_t expiry_ms = state_.ExpiryMs();
  if (expiry_ms <= op_now_ms || (!FromUpstream(ctx_flags) && expiry_ms <= now_ms)) {
    if (Drop()) {
      RedisModule_Replicate(ctx_, "DEL", "s", name_);
    } else {
      RedisModule_ReplicateVerbatim(ctx_);
    }
    return;
  }
  if (Store(ReplayTtlMs(expiry_ms, now_ms))) RedisModule_ReplicateVerbatim(ctx_);
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
  const bool upstream = FromUpstream(RedisModule_GetContextFlags(ctx));
  bool dropped = false;
  if (decoded->empty() || (!upstream && decoded->ExpiryMs() <= now)) {
    // Nothing left that is not fresh: the key is gone, and replicas are told so (from upstream
    // they would keep the state, see CommitReplayed).
    if (type != REDISMODULE_KEYTYPE_EMPTY) RedisModule_DeleteKey(key);
    dropped = true;
  } else {
    const int64_t expiry = decoded->ExpiryMs();
    RedisModule_ModuleTypeSetValue(key, g_type, ToValue(*std::move(decoded)));
    RedisModule_SetExpire(key, ReplayTtlMs(expiry, now));
  }
  RedisModule_CloseKey(key);
  RedisModule_SignalModifiedKey(ctx, argv[1]);
  if (dropped) {
    RedisModule_Replicate(ctx, "DEL", "s", argv[1]);
  } else {
    RedisModule_ReplicateVerbatim(ctx);
  }
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

}  // namespace rl::module

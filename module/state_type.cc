// The "ratelimit" type: callbacks over rl::KeyState's encoding, and key access for commands.
#include "state_type.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <utility>

#include "compact_value.h"
#include "glue.h"
#include "policies.h"
#include "propagation.h"
#include "put.h"
#include "rl/key_state_single.h"

namespace rl::module {
namespace {

// Nine characters, as the type API requires; what TYPE answers.
constexpr const char* kTypeName = "ratelimit";
// Encoding version of the RDB value (and of DUMP / RESTORE payloads): one string holding
// KeyState::Encode's bytes (which carry their own format version inside); from version 2 it is
// followed by the writer's "now" (signed ms on its node clock), so a load can tell how far
// ahead of ours the writer's clock was. Version 1 values still load, their times as stored.
constexpr int kEncodingVersion = 2;
constexpr int kEncodingWithoutTime = 1;

RedisModuleType* g_type = nullptr;
std::atomic<uint64_t> g_rejected_loads{0};

// A key's value is its state's block (KeyState::ReleaseBlock), allocated by the state in Redis's
// allocator (rl::SetStateAllocator in OnLoad), so INFO memory and maxmemory count it, or, for a
// state of one token bucket, one of compact_value.h's small forms (the state in the pointer
// itself, or in an 8-byte box). An empty state has no block; as a value (only a loaded or restored
// empty encoding makes one: commands delete a key whose states are gone) it is this marker, since
// rdb_load's null means failure. Aligned, so that its low bits (the small forms' tags) are clear.
alignas(8) char g_empty_marker;

void* BlockOf(const void* value) {
  return value == &g_empty_marker || IsPacked(value) ? nullptr : const_cast<void*>(value);
}

// `s` in a small form, or null.
void* Packed(const SingleState& s, int64_t capacity, int64_t rate) {
  void* packed = capacity > 0 ? PackAs(s, capacity, rate) : nullptr;
  return packed != nullptr ? packed : Pack(s);
}

// A stored value seen as a KeyState for the duration of a call: never freed here (a packed
// value is unpacked into a block of this object's own).
class Borrowed {
 public:
  explicit Borrowed(const void* value) {
    if (IsPacked(value)) {
      WriteSingleBlock(unpacked_, Unpack(value));
      state_ = KeyState::AdoptBlock(unpacked_);
    } else {
      state_ = KeyState::AdoptBlock(BlockOf(value));
    }
  }
  ~Borrowed() { state_.ReleaseBlock(); }
  Borrowed(const Borrowed&) = delete;
  Borrowed& operator=(const Borrowed&) = delete;
  const KeyState& operator*() const { return state_; }
  const KeyState* operator->() const { return &state_; }

 private:
  alignas(16) char unpacked_[kSingleBlockBytes];
  KeyState state_;
};

void FreeState(void* value) {
  FreeBox(value);
  KeyState owned = KeyState::AdoptBlock(BlockOf(value));  // frees the block and its logs
}

std::string Encoded(const void* value) {
  std::string out;
  Borrowed(value)->Encode(&out);
  return out;
}

void* RdbLoad(RedisModuleIO* rdb, int encver) {
  if (encver != kEncodingVersion && encver != kEncodingWithoutTime) {
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
  int64_t shift_ms = 0;
  if (encver != kEncodingWithoutTime) {
    const int64_t written_ms = RedisModule_LoadSigned(rdb);
    if (RedisModule_IsIOError(rdb)) {
      // Say what is wrong with the string when something is (its length was damaged).
      const absl::StatusOr<KeyState> state = KeyState::Decode(std::string_view(buf, len));
      RedisModule_Free(buf);
      RedisModule_LogIOError(
          rdb, REDISMODULE_LOGLEVEL_WARNING, "rl: %s",
          state.ok() ? "truncated ratelimit value" : std::string(state.status().message()).c_str());
      ++g_rejected_loads;
      return nullptr;
    }
    shift_ms = LoadShiftMs(written_ms);
  }
  absl::StatusOr<KeyState> state = KeyState::Decode(std::string_view(buf, len), shift_ms);
  RedisModule_Free(buf);
  if (!state.ok()) {
    RedisModule_LogIOError(rdb, REDISMODULE_LOGLEVEL_WARNING, "rl: %s",
                           std::string(state.status().message()).c_str());
    ++g_rejected_loads;
    return nullptr;
  }
  return ValueOf(*std::move(state));
}

void RdbSave(RedisModuleIO* rdb, void* value) {
  const std::string bytes = Encoded(value);
  RedisModule_SaveStringBuffer(rdb, bytes.data(), bytes.size());
  RedisModule_SaveSigned(rdb, Clock().NowMs());
}

void AofRewrite(RedisModuleIO* aof, RedisModuleString* key, void* value) {
  const std::string bytes = Encoded(value);
  RedisModule_EmitAOF(aof, "RL.SETSTATE", "sbl", key, bytes.data(), bytes.size(),
                      static_cast<long long>(Clock().NowMs()));
}

// The block and the logs: all the memory the value holds (the key's value pointer itself lives
// in Redis's moduleValue, and a packed state is that pointer: nothing more).
size_t MemUsage(const void* value) {
  return IsPacked(value) ? PackedBytes(value) : Borrowed(value)->MemoryBytes();
}

void Digest(RedisModuleDigest* digest, void* value) {
  const std::string bytes = Encoded(value);
  RedisModule_DigestAddStringBuffer(digest, bytes.data(), bytes.size());
  RedisModule_DigestEndSequence(digest);
}

void* Copy(RedisModuleString*, RedisModuleString*, const void* value) {
  absl::StatusOr<KeyState> copy = KeyState::Decode(Encoded(value));
  return copy.ok() ? ValueOf(*std::move(copy)) : nullptr;
}

// A packed value holds one state: no need to unpack it to count (Redis asks on every delete,
// an expired key's included).
size_t FreeEffort(RedisModuleString*, const void* value) {
  return IsPacked(value) ? 1 : Borrowed(value)->size();
}

absl::Status WrongType() { return absl::FailedPreconditionError(REDISMODULE_ERRORMSG_WRONGTYPE); }

// Wall-clock steps. Redis turns a TTL into a deadline on its wall clock, while states count on
// the node's monotonic clock: a forward step of the wall clock (date -s, an NTP step, a VM
// resumed) ends, at once, every key whose TTL is shorter than the step, a fresh allowance that
// Redis 7.0 gives modules no hook to veto or delay. What rl.so can do is notice: the offset
// between the wall clock and the node clock, compared at each expiry it sets, moves by the step.
// A slewing NTP moves it by at most 500 ppm; more than a second beyond that is a step.
struct WallWatch {
  int64_t offset_ms = 0;  // wall clock minus node clock at the last look
  int64_t seen_at_ms = INT64_MIN;
  uint64_t steps = 0;
  int64_t step_ms = 0;
};
WallWatch g_wall;

void WatchWallClock(int64_t now_ms) {
  const int64_t offset = static_cast<int64_t>(RedisModule_Milliseconds()) - now_ms;
  if (g_wall.seen_at_ms != INT64_MIN) {
    const int64_t moved = offset - g_wall.offset_ms;
    const int64_t slew = (now_ms - g_wall.seen_at_ms) / 1000;
    if (moved > 1000 + slew) {
      ++g_wall.steps;
      g_wall.step_ms += moved;
      RedisModule_Log(nullptr, REDISMODULE_LOGLEVEL_WARNING,
                      "rl: the wall clock stepped forward by %lld ms: Redis has expired the "
                      "rate-limit keys whose TTL was shorter (they start fresh); let NTP slew "
                      "instead of stepping",
                      static_cast<long long>(moved));
    }
  }
  g_wall.offset_ms = offset;
  g_wall.seen_at_ms = now_ms;
}

// The key's TTL for states fresh at `expiry_ms` (> now_ms). Redis adds its wall clock to the
// TTL, so an absurd expiry (a forged RL.SETSTATE, a GCRA with a burst of 2^40 over ten years)
// is capped at a century rather than overflowing there.
int64_t TtlMs(int64_t expiry_ms, int64_t now_ms) {
  WatchWallClock(now_ms);
  constexpr int64_t kMaxTtlMs = int64_t{100} * 365 * 24 * 3600 * 1000;
  return expiry_ms - now_ms > kMaxTtlMs ? kMaxTtlMs : expiry_ms - now_ms;
}

}  // namespace

void* ValueOf(KeyState&& state, int64_t capacity, int64_t rate) {
  SingleState single;
  if (GetSingleState(state, &single)) {
    if (void* packed = Packed(single, capacity, rate)) {
      KeyState gone = std::move(state);  // frees the block
      return packed;
    }
  }
  void* block = state.ReleaseBlock();
  return block != nullptr ? block : &g_empty_marker;
}

void* ValueOf(const SingleState& s, int64_t capacity, int64_t rate) {
  if (void* packed = Packed(s, capacity, rate)) return packed;
  void* block = RedisModule_Alloc(kSingleBlockBytes);  // the state allocator's (OnLoad)
  WriteSingleBlock(block, s);
  return block;
}

namespace {
// A non-empty key of type `type` (RedisModule_KeyType's) holds an rl state.
bool OfOurType(RedisModuleKey* key, int type) {
  return type == REDISMODULE_KEYTYPE_MODULE && RedisModule_ModuleTypeGetType(key) == g_type;
}
}  // namespace

bool HoldsOtherType(RedisModuleKey* key) {
  const int type = RedisModule_KeyType(key);
  return type != REDISMODULE_KEYTYPE_EMPTY && !OfOurType(key, type);
}

void PutValue(RedisModuleKey* key, void* value) {
  // In place: Redis frees the old value (FreeState) and keeps the key, its dict entry and its
  // expiry entry. Setting a value deletes the key and adds it again, each a lookup of the name.
  if (RedisModule_ModuleTypeReplaceValue(key, g_type, value, nullptr) != REDISMODULE_OK) {
    RedisModule_ModuleTypeSetValue(key, g_type, value);
  }
}

// A state kept from upstream although this node's clock says it has ended lives a millisecond
// (Redis expires nothing while loading, and a replica never expires the master's keys on its
// own: the master's DEL ends it).
int64_t ReplayTtlMs(int64_t expiry_ms, int64_t now_ms) {
  return expiry_ms > now_ms ? TtlMs(expiry_ms, now_ms) : 1;
}

// How far to move the times of a value written at `written_ms` on its writer's clock. A clock
// that was ahead of ours (an RDB saved before this node's clock was set back, a VM restored from
// a snapshot, a start before time sync, a DUMP from a node whose clock runs ahead) would make
// every stored wait longer by the difference: a key at its limit denied for a day, a one-minute
// lease held for a day. Such a value loads as if no time had passed since it was written, so a
// state waits at most what its own limit, charges, block or lease explained at the writer. A
// writer behind us needs nothing: its times only look older, as after real downtime.
//
// A replica keeps its primary's times as they are (a full resync's RDB, a propagated RESTORE):
// they are the primary's decisions, and promoting the replica must not change them. So does a
// value from a writer less than kSkewMs ahead: nodes kept in sync by NTP differ by milliseconds,
// and MIGRATE (resharding) should carry a state unchanged, as it does a string.
int64_t LoadShiftMs(int64_t written_ms) {
  return LoadShiftMs(written_ms, RedisModule_GetContextFlags(nullptr));
}

int64_t LoadShiftMs(int64_t written_ms, int ctx_flags) {
  constexpr int64_t kSkewMs = 1000;
  if ((ctx_flags & REDISMODULE_CTX_FLAGS_SLAVE) != 0) return 0;
  const int64_t now = Clock().NowMs();
  if (written_ms <= now + kSkewMs) return 0;
  // Beyond the longest window every state is fresh anyway; the bound keeps the shift finite.
  return -std::min<int64_t>(written_ms - now, 2 * kMaxWindowMs);
}

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
  InitPacking(Clock().NowMs());
  g_type = RedisModule_CreateDataType(ctx, kTypeName, kEncodingVersion, &methods);
  return g_type != nullptr;
}

uint64_t RejectedLoads() { return g_rejected_loads.load(std::memory_order_relaxed); }
uint64_t WallClockSteps() { return g_wall.steps; }
int64_t WallClockStepMs() { return g_wall.step_ms; }

StateKey::StateKey(RedisModuleCtx* ctx, RedisModuleString* name, int mode)
    : ctx_(ctx), name_(name), writable_((mode & REDISMODULE_WRITE) != 0) {
  key_ = static_cast<RedisModuleKey*>(RedisModule_OpenKey(ctx, name, mode));
  const int type = RedisModule_KeyType(key_);
  if (type == REDISMODULE_KEYTYPE_EMPTY) return;
  if (!OfOurType(key_, type)) {
    status_ = WrongType();
    return;
  }
  stored_ = true;
  value_ = RedisModule_ModuleTypeGetValue(key_);
  // A packed state runs in a block of this StateKey's own, packed again by Sync.
  state_ = KeyState::AdoptBlock(IsPacked(value_) ? UnpackToBlock(value_) : BlockOf(value_));
}

StateKey::~StateKey() {
  if (stored_) {
    // A change without Commit (an error after Check pruned) may still have moved the block.
    if (!synced_) Sync();
    if (!IsPacked(value_)) {
      state_.ReleaseBlock();  // the key owns it
    } else if (KeepsBlock(state_.block())) {
      state_.ReleaseBlock();  // the unpacked copy, kept for the next command
    }
  }
  if (key_ != nullptr) RedisModule_CloseKey(key_);
}

StateKey::Single StateKey::ReadSingle() const {
  Single single;
  single.is = GetSingleState(state_, &single.s);
  return single;
}

void* StateKey::ValueFor(std::string_view scope, absl::Span<const Limit> limits,
                         const Single& single) const {
  if (single.is) {
    if (void* packed = Pack(single.s, scope, limits, value_)) return packed;
  }
  const void* block = state_.block();
  return block != nullptr ? const_cast<void*>(block) : &g_empty_marker;
}

void StateKey::Sync(std::string_view scope, absl::Span<const Limit> limits, const Single& single) {
  // A key opened for reading is never changed (nor repacked: Redis would refuse the new value).
  if (!writable_) return;
  void* value = ValueFor(scope, limits, single);
  synced_ = true;
  if (value == value_) return;
  // A block needs no freeing (the state kept, moved or freed it), an inline word holds nothing,
  // a box is freed unless the new value reuses it.
  RedisModule_ModuleTypeReplaceValue(key_, g_type, value, nullptr);
  if (!SameBox(value, value_)) FreeBox(value_);
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
  RedisModule_DeleteKey(key_);  // frees the value (the current block; a packed word holds none)
  if (!IsPacked(value_)) state_.ReleaseBlock();  // freed with the key; else the state frees it
  stored_ = false;
  RedisModule_SignalModifiedKey(ctx_, name_);
  return true;
}

bool StateKey::Store(int64_t ttl_ms, std::string_view scope, absl::Span<const Limit> limits,
                     const Single& single) {
  if (!stored_) {
    void* value = ValueFor(scope, limits, single);
    if (RedisModule_ModuleTypeSetValue(key_, g_type, value) != REDISMODULE_OK) {
      FreeBox(value);  // the state (this StateKey's) still holds its block
      return false;
    }
    stored_ = true;
    value_ = value;
    synced_ = true;
  } else {
    Sync(scope, limits, single);
  }
  // Relative to this node's clock: the key expires when its states are fresh, whatever the
  // offset between the anchored clock and the server's wall clock.
  RedisModule_SetExpire(key_, ttl_ms);
  RedisModule_SignalModifiedKey(ctx_, name_);
  return true;
}

void StateKey::Commit(int64_t now_ms, bool replicate, const Effect& effect) {
  const Single single = ReadSingle();
  const int64_t expiry_ms = single.is ? single.s.expiry_ms : state_.ExpiryMs();  // MIN: empty
  if (expiry_ms <= now_ms) {
    // A state never stored is freed with this StateKey.
    if (Drop()) Propagate(replicate, [&] { RedisModule_Replicate(ctx_, "DEL", "s", name_); });
    return;
  }
  if (!Store(TtlMs(expiry_ms, now_ms), effect.scope, effect.limits, single)) return;
  Propagate(replicate, [&] {
    if (single.is) {
      ReplicatePut(ctx_, name_, now_ms, single.s, value_);  // a one-state block fits RL.PUT
    } else if (effect.whole || FitsPut(state_)) {
      ReplicatePut(ctx_, name_, now_ms, state_, expiry_ms, value_);
    } else {
      ReplicateEffect(ctx_, name_, now_ms, effect, state_.size(), expiry_ms);
    }
  });
}

void StateKey::CommitReplayed(int64_t op_now_ms, int ctx_flags, const Effect& effect) {
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
  if (Store(ReplayTtlMs(expiry_ms, now_ms), effect.scope, effect.limits, ReadSingle())) {
    RedisModule_ReplicateVerbatim(ctx_);
  }
}

}  // namespace rl::module

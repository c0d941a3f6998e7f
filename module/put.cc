// The whole-state forms (see put.h): RL.PUT's form 1, built on the primary and read on replicas
// and AOF loads, and RL.SETSTATE, which AOF rewrites and earlier versions write.
#include "put.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/attributes.h"
#include "compact_value.h"
#include "glue.h"
#include "permissions.h"
#include "propagation.h"
#include "rl/key_state_single.h"
#include "state_type.h"

namespace rl::module {
namespace {

constexpr uint8_t kForm1 = 1;
constexpr uint8_t kForm2 = 2;
// u8 form, i64 now-ms, i64 expiry-ms, then the two varints.
constexpr size_t kFixedBytes = 17;
// The primary's times are absolute Unix milliseconds: anything outside [0, 2^48) is a forgery.
constexpr int64_t kMaxNowMs = int64_t{1} << 48;

void PutInt64(char* p, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((u >> (8 * i)) & 0xff);
}

int64_t GetInt64(const char* p) {
  uint64_t u = 0;
  for (int i = 7; i >= 0; --i) u = (u << 8) | static_cast<uint8_t>(p[i]);
  return static_cast<int64_t>(u);
}

// LEB128 into a raw buffer (at most kMaxVarintBytes): forms are written per check, and a
// std::string's per-byte appends cost more than the form's fields.
constexpr size_t kMaxVarintBytes = 10;
char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// Reads a varint of up to 64 bits (ten bytes) from the front of `*in`; false when malformed.
// Inlined, over a pointer and an end: a replica reads eight of them per RL.PUT it applies.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool GetVarint(std::string_view* in, uint64_t* out) {
  const char* p = in->data();
  const char* const end = p + in->size();
  uint64_t v = 0;
  auto done = [&] {
    *in = std::string_view(p, static_cast<size_t>(end - p));
    *out = v;
    return true;
  };
  for (int shift = 0; shift < 63; shift += 7) {  // the first nine bytes: 63 bits
    if (p == end) return false;
    const auto byte = static_cast<uint8_t>(*p++);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return done();
  }
  if (p == end) return false;
  const auto last = static_cast<uint8_t>(*p++);
  if (last > 1) return false;  // beyond 64 bits
  v |= static_cast<uint64_t>(last) << 63;
  return done();
}

// A non-negative int64 (form 1's numbers): a varint above INT64_MAX is malformed.
bool GetVarint(std::string_view* in, int64_t* out) {
  uint64_t u = 0;
  if (!GetVarint(in, &u) || u > static_cast<uint64_t>(INT64_MAX)) return false;
  *out = static_cast<int64_t>(u);
  return true;
}

// Zigzag: a signed difference of small magnitude takes few varint bytes.
uint64_t Zig(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t Unzig(uint64_t u) { return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1); }

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool GetZig(std::string_view* in, int64_t* out) {
  uint64_t u = 0;
  if (!GetVarint(in, &u)) return false;
  *out = Unzig(u);
  return true;
}

// The longest form 2: the version, eight varints, the algorithm.
constexpr size_t kMaxForm2Bytes = 1 + 8 * kMaxVarintBytes + 1;

// Form 2 of a state holding one two-word state (see put.h) into `buf`; returns its length.
size_t BuildForm2(char (&buf)[kMaxForm2Bytes], int64_t now_ms, const SingleState& s,
                  int64_t capacity, int64_t rate) {
  char* p = buf;
  *p++ = static_cast<char>(kForm2);
  p = PutVarint(p, static_cast<uint64_t>(now_ms));
  p = PutVarint(p, Zig(s.expiry_ms - now_ms));
  p = PutVarint(p, static_cast<uint64_t>(capacity));
  p = PutVarint(p, static_cast<uint64_t>(rate));
  p = PutVarint(p, s.scope_id);
  *p++ = static_cast<char>(s.algorithm);
  p = PutVarint(p, static_cast<uint64_t>(s.window_ms));
  p = PutVarint(p, Zig(s.time - now_ms));
  p = PutVarint(p, Zig(s.word));
  return static_cast<size_t>(p - buf);
}

// What form 2 carries: the primary's time, the state, the numbers it was packed under.
struct Form2 {
  int64_t now_ms = 0;
  SingleState s;
  int64_t capacity = 0, rate = 0;
};

// `fn(state)` on a KeyState over a one-state block holding exactly `s`, in this frame's buffer.
template <class Fn>
auto OnSingleBlock(const SingleState& s, Fn&& fn) {
  alignas(16) char block[kSingleBlockBytes];
  WriteSingleBlock(block, s);
  KeyState state = KeyState::AdoptBlock(block);
  auto result = fn(std::as_const(state));
  state.ReleaseBlock();  // the buffer is this frame's
  return result;
}

// Reads form 2 (after its version byte) into `*f`; an error text when malformed. The state must
// be one a one-state block holds as sent (a two-word algorithm, a window its id holds), checked
// by writing that block and reading it back, so nothing else is ever stored.
const char* ReadForm2(std::string_view in, Form2* f) {
  uint64_t now = 0, capacity = 0, rate = 0, window = 0;
  int64_t expiry = 0, time = 0;
  SingleState& s = f->s;
  if (!GetVarint(&in, &now) || !GetZig(&in, &expiry) || !GetVarint(&in, &capacity) ||
      !GetVarint(&in, &rate) || !GetVarint(&in, &s.scope_id) || in.empty()) {
    return "ERR invalid RL.PUT form: short";
  }
  s.algorithm = static_cast<Algorithm>(static_cast<uint8_t>(in.front()));
  in.remove_prefix(1);
  if (!GetVarint(&in, &window) || !GetZig(&in, &time) || !GetZig(&in, &s.word)) {
    return "ERR invalid RL.PUT form: short";
  }
  if (!in.empty()) return "ERR invalid RL.PUT form: trailing bytes";
  if (now >= static_cast<uint64_t>(kMaxNowMs)) return "ERR invalid time";
  if (capacity > static_cast<uint64_t>(INT64_MAX) || rate > static_cast<uint64_t>(INT64_MAX) ||
      window < 1 || window > static_cast<uint64_t>(kMaxWindowMs)) {
    return "ERR invalid RL.PUT form: bad numbers";
  }
  f->now_ms = static_cast<int64_t>(now);
  // |differences| < 2^62 and now < 2^48: the sums cannot overflow.
  constexpr int64_t kMaxOffset = int64_t{1} << 62;
  if (expiry <= -kMaxOffset || expiry >= kMaxOffset || time <= -kMaxOffset || time >= kMaxOffset) {
    return "ERR invalid RL.PUT form: bad time";
  }
  // Only a known algorithm reaches the block's helpers (they index its row).
  if (AlgorithmName(s.algorithm) == "UNKNOWN") return "ERR invalid RL.PUT form: unknown algorithm";
  s.window_ms = static_cast<int64_t>(window);
  s.expiry_ms = f->now_ms + expiry;
  s.time = f->now_ms + time;
  f->capacity = static_cast<int64_t>(capacity);
  f->rate = static_cast<int64_t>(rate);
  const bool same = OnSingleBlock(s, [&](const KeyState& state) {
    SingleState back;
    return GetSingleState(state, &back) && back.algorithm == s.algorithm &&
           back.window_ms == s.window_ms && back.scope_id == s.scope_id;
  });
  return same ? nullptr : "ERR invalid RL.PUT form: not a two-word state";
}

// KeyState::Encode's bytes of a state holding exactly `s`.
std::string EncodeSingle(const SingleState& s) {
  return OnSingleBlock(s, [](const KeyState& state) {
    std::string bytes;
    state.Encode(&bytes);
    return bytes;
  });
}

// A whole state as RL.SETSTATE and RL.PUT's form 1 carry it.
struct WholeState {
  std::string_view bytes;             // KeyState::Encode's
  std::optional<int64_t> written_ms;  // the writer's node clock, when sent
  std::optional<int64_t> expiry_ms;   // the state's expiry as the writer had it, when sent
  int64_t capacity = 0, rate = 0;     // the numbers the writer packed it under (0: none)
};

// What every whole-state write does once its state is validated: opens `name` (refusing another
// type), stores `value(now)` (the key's value; it may replicate the state itself, then `moved`)
// with the expiry `expiry_ms`, or deletes the key when the state is `empty` or, from a client,
// ended by this node's clock (from upstream a key stays until the primary's DEL, as
// CommitReplayed keeps keys); replies OK and replicates itself, or DEL when the key goes.
template <class MakeValue>
int StoreValidated(RedisModuleCtx* ctx, RedisModuleString* name, int ctx_flags, bool empty,
                   int64_t expiry_ms, bool moved, MakeValue&& value) {
  auto* key = static_cast<RedisModuleKey*>(
      RedisModule_OpenKey(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE));
  if (HoldsOtherType(key)) {
    RedisModule_CloseKey(key);
    return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
  }
  const int64_t now = Clock().NowMs();
  const bool dropped = empty || (!FromUpstream(ctx_flags) && expiry_ms <= now);
  if (dropped) {
    if (RedisModule_KeyType(key) != REDISMODULE_KEYTYPE_EMPTY) RedisModule_DeleteKey(key);
  } else {
    PutValue(key, value(now));
    RedisModule_SetExpire(key, ReplayTtlMs(expiry_ms, now));
  }
  RedisModule_CloseKey(key);
  RedisModule_SignalModifiedKey(ctx, name);
  if (dropped) {
    RedisModule_Replicate(ctx, "DEL", "s", name);
  } else if (!moved) {
    RedisModule_ReplicateVerbatim(ctx);
  }
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

// Validates `w` (a hostile encoding, or one whose expiry is not the one sent, is refused, never
// a crash) and stores it (StoreValidated). On a node that is not a replica, a writer more than a
// second ahead has the state's times moved back by the difference (as an RDB load or RESTORE
// does: LoadShiftMs), and the moved state replicates as RL.PUT.
int StoreWholeState(RedisModuleCtx* ctx, RedisModuleString* name, const WholeState& w,
                    int ctx_flags) {
  const int64_t shift_ms = w.written_ms ? LoadShiftMs(*w.written_ms, ctx_flags) : 0;
  absl::StatusOr<KeyState> decoded = KeyState::Decode(w.bytes, shift_ms);
  if (!decoded.ok()) {
    const std::string msg = "ERR " + std::string(decoded.status().message());
    return RedisModule_ReplyWithError(ctx, msg.c_str());
  }
  // The expiry sent beside the state is the state's own: anything else is a damaged form.
  if (w.expiry_ms && (decoded->empty() || decoded->ExpiryMs() - shift_ms != *w.expiry_ms)) {
    return RedisModule_ReplyWithError(ctx, "ERR the state's expiry is not the one sent");
  }
  const int64_t expiry = decoded->ExpiryMs();
  return StoreValidated(ctx, name, ctx_flags, decoded->empty(), expiry, shift_ms != 0,
                        [&](int64_t now) {
                          // Replicas (which keep the times they are sent) get the moved state.
                          if (shift_ms != 0)
                            ReplicatePut(ctx, name, now, *decoded, expiry, nullptr);
                          return ValueOf(*std::move(decoded), w.capacity, w.rate);
                        });
}

}  // namespace

void ReplicatePut(RedisModuleCtx* ctx, RedisModuleString* name, int64_t now_ms,
                  const KeyState& state, int64_t expiry_ms, const void* value) {
  SingleState single;
  if (GetSingleState(state, &single)) return ReplicatePut(ctx, name, now_ms, single, value);
  int64_t capacity = 0, rate = 0;
  if (value != nullptr) PackedNumbers(value, &capacity, &rate);
  // One buffer for the module's life (commands run one at a time): no allocation per write.
  static std::string form;
  char head[kFixedBytes + 2 * kMaxVarintBytes];
  head[0] = static_cast<char>(kForm1);
  PutInt64(head + 1, now_ms);
  PutInt64(head + 9, expiry_ms);
  char* end = PutVarint(head + kFixedBytes, static_cast<uint64_t>(capacity));
  end = PutVarint(end, static_cast<uint64_t>(rate));
  form.assign(head, static_cast<size_t>(end - head));
  state.Encode(&form);
  RedisModule_Replicate(ctx, "RL.PUT", "sb", name, form.data(), form.size());
}

void ReplicatePut(RedisModuleCtx* ctx, RedisModuleString* name, int64_t now_ms,
                  const SingleState& single, const void* value) {
  int64_t capacity = 0, rate = 0;
  if (value != nullptr) PackedNumbers(value, &capacity, &rate);
  char buf[kMaxForm2Bytes];
  const size_t len = BuildForm2(buf, now_ms, single, capacity, rate);
  RedisModule_Replicate(ctx, "RL.PUT", "sb", name, buf, len);
}

int PutCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc, int ctx_flags) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  size_t len = 0;
  const char* p = RedisModule_StringPtrLen(argv[2], &len);
  if (len == 0) return RedisModule_ReplyWithError(ctx, "ERR invalid RL.PUT form: empty");
  if (static_cast<uint8_t>(p[0]) == kForm2) {
    Form2 f;
    if (const char* error = ReadForm2(std::string_view(p + 1, len - 1), &f)) {
      return RedisModule_ReplyWithError(ctx, error);
    }
    if (LoadShiftMs(f.now_ms, ctx_flags) != 0) {
      // A writer's clock ahead of this node's (an AOF loaded elsewhere): its times move as any
      // load's do, through the encoding.
      const std::string bytes = EncodeSingle(f.s);
      WholeState w;
      w.bytes = bytes;
      w.written_ms = f.now_ms;
      w.capacity = f.capacity;
      w.rate = f.rate;
      return StoreWholeState(ctx, argv[1], w, ctx_flags);
    }
    // The usual case (a replica, an AOF on its writer's node): the fields are the state, stored
    // as they are, with no encoding in between.
    return StoreValidated(ctx, argv[1], ctx_flags, false, f.s.expiry_ms, false,
                          [&](int64_t) { return ValueOf(f.s, f.capacity, f.rate); });
  }
  if (static_cast<uint8_t>(p[0]) != kForm1) {
    const std::string msg = "ERR RL.PUT form " + std::to_string(static_cast<uint8_t>(p[0])) +
                            " is unknown to this rl.so (a newer primary's: upgrade replicas first)";
    return RedisModule_ReplyWithError(ctx, msg.c_str());
  }
  WholeState w;
  std::string_view rest(p, len);
  if (len >= kFixedBytes) {
    w.written_ms = GetInt64(p + 1);
    w.expiry_ms = GetInt64(p + 9);
    rest.remove_prefix(kFixedBytes);
  }
  if (len < kFixedBytes || !GetVarint(&rest, &w.capacity) || !GetVarint(&rest, &w.rate)) {
    return RedisModule_ReplyWithError(ctx, "ERR invalid RL.PUT form: short");
  }
  if (*w.written_ms < 0 || *w.written_ms >= kMaxNowMs) {
    return RedisModule_ReplyWithError(ctx, "ERR invalid time");
  }
  w.bytes = rest;
  return StoreWholeState(ctx, argv[1], w, ctx_flags);
}

int SetStateCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc, int ctx_flags) {
  if (argc != 3 && argc != 4) return RedisModule_WrongArity(ctx);
  WholeState w;
  size_t len = 0;
  const char* bytes = RedisModule_StringPtrLen(argv[2], &len);
  w.bytes = std::string_view(bytes, len);
  // The writer's time (absent from what an older rl.so wrote): an AOF replayed on a clock behind
  // the one that wrote it moves the state's times as an RDB load does.
  if (argc == 4) {
    long long written_ms = 0;
    if (RedisModule_StringToLongLong(argv[3], &written_ms) != REDISMODULE_OK) {
      return RedisModule_ReplyWithError(ctx, "ERR invalid writer time");
    }
    w.written_ms = written_ms;
  }
  return StoreWholeState(ctx, argv[1], w, ctx_flags);
}

bool RegisterPut(RedisModuleCtx* ctx) {
  // Internal like RL.APPLY: guarded as RESTORE is (permissions.h), not callable from scripts.
  return RedisModule_CreateCommand(ctx, "rl.put", GuardedPutCommand,
                                   "write deny-oom admin deny-script", 1, 1, 1) == REDISMODULE_OK;
}

}  // namespace rl::module

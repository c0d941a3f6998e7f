// The whole-state forms (see put.h): RL.PUT's form 1, built on the primary and read on replicas
// and AOF loads, and RL.SETSTATE, which AOF rewrites and earlier versions write.
#include "put.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "compact_value.h"
#include "glue.h"
#include "permissions.h"
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

void PutInt64(std::string* out, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

int64_t GetInt64(const char* p) {
  uint64_t u = 0;
  for (int i = 7; i >= 0; --i) u = (u << 8) | static_cast<uint8_t>(p[i]);
  return static_cast<int64_t>(u);
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads a varint of at most 63 bits from the front of `*in`; false when malformed.
bool GetVarint(std::string_view* in, int64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 63; shift += 7) {
    if (in->empty()) return false;
    const auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *out = static_cast<int64_t>(v & ~(uint64_t{1} << 63));
      return true;
    }
  }
  return false;
}

// Zigzag: a signed difference of small magnitude takes few varint bytes.
uint64_t Zig(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t Unzig(uint64_t u) { return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1); }

// Reads a varint of up to 64 bits (ten bytes) from the front of `*in`; false when malformed.
bool GetUvarint(std::string_view* in, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (in->empty()) return false;
    const auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    if (shift == 63 && byte > 1) return false;  // beyond 64 bits
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

bool GetZig(std::string_view* in, int64_t* out) {
  uint64_t u = 0;
  if (!GetUvarint(in, &u)) return false;
  *out = Unzig(u);
  return true;
}

// A varint into a raw buffer: form 2 is written per check, and a std::string's per-byte
// push_back cost ~500 instructions a form, 2.5% of a replicated check.
char* PutVarintRaw(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// The longest form 2: the version, eight varints of up to ten bytes, the algorithm.
constexpr size_t kMaxForm2Bytes = 1 + 8 * 10 + 1;

// Form 2 of a state holding one two-word state (see put.h) into `buf`; returns its length.
size_t BuildForm2(char (&buf)[kMaxForm2Bytes], int64_t now_ms, const SingleState& s,
                  int64_t capacity, int64_t rate) {
  char* p = buf;
  *p++ = static_cast<char>(kForm2);
  p = PutVarintRaw(p, static_cast<uint64_t>(now_ms));
  p = PutVarintRaw(p, Zig(s.expiry_ms - now_ms));
  p = PutVarintRaw(p, static_cast<uint64_t>(capacity));
  p = PutVarintRaw(p, static_cast<uint64_t>(rate));
  p = PutVarintRaw(p, s.scope_id);
  *p++ = static_cast<char>(s.algorithm);
  p = PutVarintRaw(p, static_cast<uint64_t>(s.window_ms));
  p = PutVarintRaw(p, Zig(s.time - now_ms));
  p = PutVarintRaw(p, Zig(s.word));
  return static_cast<size_t>(p - buf);
}

// Reads form 2 (after its version byte) into `w`, the state's encoding into `*bytes`; an error
// text when malformed. The state is rebuilt as a one-state block and must read back as the very
// fields sent (a two-word algorithm, a window its id holds), so nothing else reaches Encode.
const char* ReadForm2(std::string_view in, WholeState* w, std::string* bytes) {
  uint64_t now = 0, capacity = 0, rate = 0, window = 0;
  int64_t expiry = 0, time = 0;
  SingleState s;
  if (!GetUvarint(&in, &now) || !GetZig(&in, &expiry) || !GetUvarint(&in, &capacity) ||
      !GetUvarint(&in, &rate) || !GetUvarint(&in, &s.scope_id) || in.empty()) {
    return "ERR invalid RL.PUT form: short";
  }
  s.algorithm = static_cast<Algorithm>(static_cast<uint8_t>(in.front()));
  in.remove_prefix(1);
  if (!GetUvarint(&in, &window) || !GetZig(&in, &time) || !GetZig(&in, &s.word)) {
    return "ERR invalid RL.PUT form: short";
  }
  if (!in.empty()) return "ERR invalid RL.PUT form: trailing bytes";
  if (now >= static_cast<uint64_t>(kMaxNowMs)) return "ERR invalid time";
  if (capacity > static_cast<uint64_t>(INT64_MAX) || rate > static_cast<uint64_t>(INT64_MAX) ||
      window < 1 || window > static_cast<uint64_t>(kMaxWindowMs)) {
    return "ERR invalid RL.PUT form: bad numbers";
  }
  const auto now_ms = static_cast<int64_t>(now);
  // |differences| < 2^62 and now < 2^48: the sums cannot overflow; Decode bounds the times.
  constexpr int64_t kMaxOffset = int64_t{1} << 62;
  if (expiry <= -kMaxOffset || expiry >= kMaxOffset || time <= -kMaxOffset || time >= kMaxOffset) {
    return "ERR invalid RL.PUT form: bad time";
  }
  // Only a known algorithm reaches the block's helpers (they index its row).
  if (AlgorithmName(s.algorithm) == "UNKNOWN") return "ERR invalid RL.PUT form: unknown algorithm";
  s.window_ms = static_cast<int64_t>(window);
  s.expiry_ms = now_ms + expiry;
  s.time = now_ms + time;
  alignas(16) char block[kSingleBlockBytes];
  WriteSingleBlock(block, s);
  KeyState state = KeyState::AdoptBlock(block);
  SingleState back;
  const bool same = GetSingleState(state, &back) && back.algorithm == s.algorithm &&
                    back.window_ms == s.window_ms && back.scope_id == s.scope_id;
  if (same) state.Encode(bytes);
  state.ReleaseBlock();  // the buffer is this frame's
  if (!same) return "ERR invalid RL.PUT form: not a two-word state";
  w->written_ms = now_ms;
  w->expiry_ms = s.expiry_ms;
  w->capacity = static_cast<int64_t>(capacity);
  w->rate = static_cast<int64_t>(rate);
  w->bytes = *bytes;
  return nullptr;
}

}  // namespace

void ReplicatePut(RedisModuleCtx* ctx, RedisModuleString* name, int64_t now_ms,
                  const KeyState& state, int64_t expiry_ms, const void* value) {
  int64_t capacity = 0, rate = 0;
  if (value != nullptr) PackedNumbers(value, &capacity, &rate);
  SingleState single;
  if (GetSingleState(state, &single)) {
    char buf[kMaxForm2Bytes];
    const size_t len = BuildForm2(buf, now_ms, single, capacity, rate);
    RedisModule_Replicate(ctx, "RL.PUT", "sb", name, buf, len);
    return;
  }
  // One buffer for the module's life (commands run one at a time): no allocation per write.
  static std::string form;
  form.clear();
  form.push_back(static_cast<char>(kForm1));
  PutInt64(&form, now_ms);
  PutInt64(&form, expiry_ms);
  PutVarint(&form, static_cast<uint64_t>(capacity));
  PutVarint(&form, static_cast<uint64_t>(rate));
  state.Encode(&form);
  RedisModule_Replicate(ctx, "RL.PUT", "sb", name, form.data(), form.size());
}

int PutCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  size_t len = 0;
  const char* p = RedisModule_StringPtrLen(argv[2], &len);
  if (len == 0) return RedisModule_ReplyWithError(ctx, "ERR invalid RL.PUT form: empty");
  if (static_cast<uint8_t>(p[0]) == kForm2) {
    WholeState w;
    std::string bytes;
    if (const char* error = ReadForm2(std::string_view(p + 1, len - 1), &w, &bytes)) {
      return RedisModule_ReplyWithError(ctx, error);
    }
    return StoreWholeState(ctx, argv[1], w);
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
  return StoreWholeState(ctx, argv[1], w);
}

int SetStateCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
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
  return StoreWholeState(ctx, argv[1], w);
}

bool RegisterPut(RedisModuleCtx* ctx) {
  // Internal like RL.APPLY: guarded as RESTORE is (permissions.h), not callable from scripts.
  return RedisModule_CreateCommand(ctx, "rl.put", GuardedPutCommand,
                                   "write deny-oom admin deny-script", 1, 1, 1) == REDISMODULE_OK;
}

}  // namespace rl::module

// See cell_keys.h: redis-cell's string keys adopted by CL.THROTTLE.
#include "cell_keys.h"

#include "absl/types/span.h"

namespace rl::module {
namespace {

using int128 = __int128;

// redis-cell parses its value with Rust's i64 parser: an optional sign, then decimal digits, and
// nothing else.
std::optional<int64_t> ParseTat(std::string_view s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i == s.size() || s.size() - i > 19) return std::nullopt;
  int128 v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  if (s[0] == '-') v = -v;
  if (v > INT64_MAX || v < INT64_MIN) return std::nullopt;
  return static_cast<int64_t>(v);
}

int128 CeilDiv(int128 a, int128 b) {  // b > 0
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

}  // namespace

std::optional<int64_t> TakeCellState(RedisModuleCtx* ctx, RedisModuleString* name, int64_t now_ms,
                                     bool replicate) {
  RedisModuleKey* key = static_cast<RedisModuleKey*>(
      RedisModule_OpenKey(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE));
  std::optional<int64_t> tat;
  if (RedisModule_KeyType(key) == REDISMODULE_KEYTYPE_STRING) {
    size_t len = 0;
    // Redis keeps such a number integer-encoded; the DMA access decodes it to text.
    const char* p = RedisModule_StringDMA(key, &len, REDISMODULE_READ);
    if (p != nullptr) tat = ParseTat(std::string_view(p, len));
    // A time further ahead than rl's longest window was not written by a GCRA of redis-cell's.
    if (tat && *tat / 1000000 > now_ms + kMaxWindowMs) tat.reset();
    if (tat) {
      RedisModule_DeleteKey(key);
      // Without anything downstream the verbatim call only counts the change (propagation.h).
      if (replicate) {
        RedisModule_Replicate(ctx, "DEL", "s", name);
      } else {
        RedisModule_ReplicateVerbatim(ctx);
      }
    }
  }
  RedisModule_CloseKey(key);
  return tat;
}

bool SeedCellState(KeyState& state, std::string_view scope, const Limit& limit, int64_t tat_ns,
                   int64_t now_ms) {
  // rl's GCRA counts time in ticks of 1/limit ms and stores the TAT as such (algorithms.cc).
  const int128 l = limit.limit;
  const int128 target = CeilDiv(int128{tat_ns} * l, 1000000);
  if (target <= int128{now_ms} * l) return false;  // fully replenished: a fresh state
  // A call of cost 1 on a fresh state at t0 leaves TAT = t0 * l + window: the smallest t0 that
  // reaches the target (under a millisecond over it, never under: no extra allowance).
  const int64_t t0 = static_cast<int64_t>(CeilDiv(target - limit.window_ms, l));
  bool changed = false;
  return state.Check(scope, absl::MakeConstSpan(&limit, 1), 1, t0, &changed).ok() && changed;
}

}  // namespace rl::module

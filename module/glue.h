// Small pieces every rl.so command needs: the reply Sink the command layer writes to (over the
// module reply API), the arguments as string views, and the node's clock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/inlined_vector.h"
#include "redis_module_api.h"

namespace rl::module {

// The command layer's Sink (rl/command/reply.h) over the module reply calls. RESP3 clients get
// maps; ReplyWithMap itself writes a flat array for RESP2 clients, as resp::Writer does.
class ModuleSink {
 public:
  explicit ModuleSink(RedisModuleCtx* ctx) : ModuleSink(ctx, RedisModule_GetContextFlags(ctx)) {}
  // `ctx_flags`: RedisModule_GetContextFlags(ctx), when the caller has it already.
  ModuleSink(RedisModuleCtx* ctx, int ctx_flags)
      : ctx_(ctx), protocol_((ctx_flags & REDISMODULE_CTX_FLAGS_RESP3) ? 3 : 2) {}

  int protocol() const { return protocol_; }
  void ArrayHeader(size_t n) { RedisModule_ReplyWithArray(ctx_, static_cast<long>(n)); }
  void MapHeader(size_t n) { RedisModule_ReplyWithMap(ctx_, static_cast<long>(n)); }
  void Integer(int64_t v) { RedisModule_ReplyWithLongLong(ctx_, v); }
  void Bulk(std::string_view s) { RedisModule_ReplyWithStringBuffer(ctx_, s.data(), s.size()); }
  void Null() { RedisModule_ReplyWithNull(ctx_); }
  // `s` starts with the error code ("ERR ...", "WRONGTYPE ..."); the server adds the '-' and
  // turns CR/LF into spaces.
  void Error(std::string_view s) { RedisModule_ReplyWithError(ctx_, std::string(s).c_str()); }
  void SimpleString(std::string_view s) {
    RedisModule_ReplyWithSimpleString(ctx_, std::string(s).c_str());
  }

 private:
  RedisModuleCtx* ctx_;
  int protocol_;
};

// argv as views (valid for the command's duration).
using ArgViews = absl::InlinedVector<std::string_view, 16>;
inline ArgViews Views(RedisModuleString** argv, int argc) {
  // Sized once and filled in place: a push per argument costs more than its StringPtrLen.
  ArgViews out(static_cast<size_t>(argc));
  std::string_view* views = out.data();
  for (int i = 0; i < argc; ++i) {
    size_t len = 0;
    const char* p = RedisModule_StringPtrLen(argv[i], &len);
    views[i] = std::string_view(p, len);
  }
  return out;
}

// The node's clock: monotonic, anchored to wall-clock time when the module loads, so the times
// stored in states are absolute Unix milliseconds that RDB files, the AOF, replicas and a
// promoted replica all read the same way, while a wall-clock step never moves "now" back.
class NodeClock {
 public:
  void Anchor() {
    wall_ms_ = RedisModule_Milliseconds();
    mono_us_ = RedisModule_MonotonicMicroseconds();
  }
  int64_t NowMs() const {
    return wall_ms_ + static_cast<int64_t>((RedisModule_MonotonicMicroseconds() - mono_us_) / 1000);
  }

 private:
  int64_t wall_ms_ = 0;
  uint64_t mono_us_ = 0;
};

// The one clock of this module instance (anchored in OnLoad).
NodeClock& Clock();

}  // namespace rl::module

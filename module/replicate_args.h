// The arguments of what rl.so replicates (RL.APPLY), as Redis strings that cost as little as
// possible to propagate. Propagating a command costs Redis, per argument, an object, and for an
// integer object one more string per consumer (the AOF and the replication stream each decode it
// into a new one): an RL.APPLY built from C strings and integers cost a dozen allocations beyond
// the two times it carries. Text that repeats call after call (the op, the scope, the limits'
// text, small counts) is kept here as strings for the module's life, which Redis only counts a
// reference to; the rest are made as strings, never integers. The bytes replicated are the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "redis_module_api.h"

namespace rl::module {

// Up to nine arguments for one RedisModule_Replicate call ("s" each); frees those made for it.
class ReplicateArgs {
 public:
  explicit ReplicateArgs(RedisModuleCtx* ctx) : ctx_(ctx) {}
  ~ReplicateArgs();
  ReplicateArgs(const ReplicateArgs&) = delete;
  ReplicateArgs& operator=(const ReplicateArgs&) = delete;

  // The key name (a reference to the command's own).
  void Key(RedisModuleString* name) { Add(name, false); }
  // Text that repeats (kept, up to a bound; beyond it made for this call).
  void Text(std::string_view text);
  // Text that does not repeat (a lease id): made for this call.
  void Once(std::string_view text) {
    Add(RedisModule_CreateString(ctx_, text.data(), text.size()), true);
  }
  // A number in decimal (small ones kept).
  void Number(int64_t v);
  // Replicates `command` with the arguments added.
  void Replicate(const char* command);

 private:
  void Add(RedisModuleString* s, bool owned);

  static constexpr size_t kMax = 9;
  RedisModuleCtx* ctx_;
  RedisModuleString* args_[kMax] = {};
  bool owned_[kMax] = {};
  size_t count_ = 0;
};

}  // namespace rl::module

// See replicate_args.h.
#include "replicate_args.h"

#include <charconv>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace rl::module {
namespace {

// Commands run on the main thread: no lock. Bounded, so a stream of distinct scopes or limits
// cannot grow it without end (beyond the bound each call makes its own strings, as before).
constexpr size_t kMaxKept = 1024;
absl::flat_hash_map<std::string, RedisModuleString*>& Kept() {
  static auto* kept = new absl::flat_hash_map<std::string, RedisModuleString*>();
  return *kept;
}
constexpr int64_t kSmallNumbers = 1024;
RedisModuleString* g_small[kSmallNumbers] = {};

}  // namespace

ReplicateArgs::~ReplicateArgs() {
  for (size_t i = 0; i < count_; ++i) {
    if (owned_[i]) RedisModule_FreeString(ctx_, args_[i]);
  }
}

void ReplicateArgs::Add(RedisModuleString* s, bool owned) {
  args_[count_] = s;
  owned_[count_] = owned;
  ++count_;
}

void ReplicateArgs::Text(std::string_view text) {
  auto& kept = Kept();
  if (auto it = kept.find(absl::string_view(text.data(), text.size())); it != kept.end()) {
    return Add(it->second, false);
  }
  if (kept.size() < kMaxKept) {
    RedisModuleString* s = RedisModule_CreateString(nullptr, text.data(), text.size());
    kept.emplace(std::string(text), s);
    return Add(s, false);
  }
  Add(RedisModule_CreateString(ctx_, text.data(), text.size()), true);
}

void ReplicateArgs::Number(int64_t v) {
  char buf[24];
  const size_t len = static_cast<size_t>(std::to_chars(buf, buf + sizeof(buf), v).ptr - buf);
  if (v >= 0 && v < kSmallNumbers) {
    RedisModuleString*& s = g_small[v];
    if (s == nullptr) s = RedisModule_CreateString(nullptr, buf, len);
    return Add(s, false);
  }
  // A string object (not an integer one): the AOF and the replication stream use it as it is.
  Add(RedisModule_CreateString(ctx_, buf, len), true);
}

void ReplicateArgs::Replicate(const char* command) {
  static constexpr char kFormats[] = "sssssssss";
  static_assert(sizeof(kFormats) == kMax + 1);
  const char* fmt = kFormats + (kMax - count_);
  RedisModuleString** a = args_;
  switch (count_) {
    case 6:
      RedisModule_Replicate(ctx_, command, fmt, a[0], a[1], a[2], a[3], a[4], a[5]);
      break;
    case 7:
      RedisModule_Replicate(ctx_, command, fmt, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
      break;
    case 8:
      RedisModule_Replicate(ctx_, command, fmt, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
      break;
    case 9:
      RedisModule_Replicate(ctx_, command, fmt, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                            a[8]);
      break;
    default:  // RL.APPLY has six to nine arguments
      break;
  }
}

}  // namespace rl::module

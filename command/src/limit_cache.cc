// One parsed limit list per connection; see limit_cache.h.
#include "rl/command/limit_cache.h"

#include <algorithm>
#include <cstring>

#include "rl/ascii.h"

namespace rl::command {

absl::Span<const Limit> LimitCache::Find(absl::Span<const std::string_view> args, size_t pos,
                                         size_t* end) const {
  if (tokens_ == 0 || pos > args.size() || args.size() - pos < tokens_) return {};
  const char* p = bytes_.data();
  for (size_t i = 0; i < tokens_; ++i) {
    const std::string_view a = args[pos + i];
    if (a.size() != sizes_[i] || !SameShortBytes(a.data(), p, a.size())) return {};
    p += a.size();
  }
  // What follows decides where the list ends (BURST, BLOCK, LEASE or another algorithm would
  // extend it): only a token that ends any list keeps the cached parse valid.
  const size_t after = pos + tokens_;
  if (after < args.size() && !EqualsIgnoreCase(args[after], "COST") &&
      !EqualsIgnoreCase(args[after], "HEADERS")) {
    return {};
  }
  *end = after;
  return absl::MakeConstSpan(limits_.data(), count_);
}

void LimitCache::Store(absl::Span<const std::string_view> args, size_t pos, size_t end,
                       absl::Span<const Limit> limits) {
  tokens_ = 0;
  if (end <= pos || end > args.size() || end - pos > kMaxTokens || limits.empty() ||
      limits.size() > limits_.size()) {
    return;
  }
  size_t bytes = 0;
  for (size_t i = pos; i < end; ++i) {
    if (args[i].size() > UINT8_MAX) return;
    bytes += args[i].size();
  }
  if (bytes > kMaxBytes) return;
  bytes_.reserve(kMaxBytes);  // once: no allocation per stored list after the first
  bytes_.clear();
  for (size_t i = pos; i < end; ++i) {
    sizes_[i - pos] = static_cast<uint8_t>(args[i].size());
    bytes_.append(args[i]);
  }
  std::copy(limits.begin(), limits.end(), limits_.begin());
  count_ = limits.size();
  tokens_ = end - pos;
}

}  // namespace rl::command

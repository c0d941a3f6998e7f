// The limit list a client sent last, parsed, keyed by its raw argument bytes. Clients (an API
// gateway, rl::RemoteLimiter in inline mode) send the same few limits with every check, and
// parsing them again (algorithm names, counts, durations like "1m", validation) is a measurable
// share of a pipelined RL.CHECK (bench/ has the figures); comparing a few short byte strings is
// not. One entry per connection: rl-server keeps one in each connection and passes it to
// ParseRequest.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/types/span.h"
#include "rl/limit.h"

namespace rl::command {

// Byte equality of two equally long short tokens without a memcmp call (the cache compares a
// few per check): up to 16 bytes as two overlapping word loads, and the short counts and
// durations ("100", "1m") as two overlapping 16-bit loads rather than a byte loop.
inline bool SameShortBytes(const char* a, const char* b, size_t n) {
  auto load8 = [](const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  };
  auto load4 = [](const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  };
  if (n >= 8) {
    if (n > 16) return std::memcmp(a, b, n) == 0;
    return ((load8(a) ^ load8(b)) | (load8(a + n - 8) ^ load8(b + n - 8))) == 0;
  }
  auto load2 = [](const char* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  };
  if (n >= 4) return ((load4(a) ^ load4(b)) | (load4(a + n - 4) ^ load4(b + n - 4))) == 0;
  if (n >= 2) return ((load2(a) ^ load2(b)) | (load2(a + n - 2) ^ load2(b + n - 2))) == 0;
  return n == 0 || a[0] == b[0];
}

class LimitCache {
 public:
  // Longer lists (more tokens or bytes) are parsed every time; real lists are far shorter.
  static constexpr size_t kMaxTokens = 32;
  static constexpr size_t kMaxBytes = 256;

  // Whether `token` is the first token of the cached list (so it is an algorithm name).
  bool StartsWith(std::string_view token) const {
    return tokens_ > 0 && token.size() == sizes_[0] &&
           SameShortBytes(token.data(), bytes_.data(), token.size());
  }
  // The cached limits when args[pos..] holds the cached tokens byte for byte, followed by the end
  // of args or by COST or HEADERS (tokens that end every limit list, so the same bytes parse to
  // the same limits); *end is then the position after them. Otherwise an empty span.
  absl::Span<const Limit> Find(absl::Span<const std::string_view> args, size_t pos,
                               size_t* end) const;
  // The list stored last (empty: none), whatever tokens come: a guess at the next command's limits
  // for a hint (rl-server's prefetch), never for an answer.
  absl::Span<const Limit> last() const {
    return absl::MakeConstSpan(limits_.data(), tokens_ > 0 ? count_ : 0);
  }
  // Remembers that args[pos, end) parsed (and validated) to `limits`; too long a list is not kept
  // (and the previous entry is dropped).
  void Store(absl::Span<const std::string_view> args, size_t pos, size_t end,
             absl::Span<const Limit> limits);

 private:
  std::string bytes_;  // the tokens, concatenated
  std::array<uint8_t, kMaxTokens> sizes_{};
  size_t tokens_ = 0;  // 0: empty
  std::array<Limit, kMaxLimitsPerCheck> limits_{};
  size_t count_ = 0;
};

}  // namespace rl::command

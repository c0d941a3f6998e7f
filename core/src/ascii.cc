// ASCII helpers (see rl/ascii.h).
#include "rl/ascii.h"

#include <charconv>

namespace rl {

bool ParseInt64(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 20 || text[0] == '+') return false;
  if (text.size() > 1 && text[0] == '0') return false;
  if (text.size() > 1 && text[0] == '-' && text[1] == '0') return false;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return false;
  *out = value;
  return true;
}

std::string EchoToken(std::string_view token) {
  constexpr size_t kMaxEchoLength = 48;
  std::string out;
  const size_t n = token.size() < kMaxEchoLength ? token.size() : kMaxEchoLength;
  out.reserve(n + 3);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    out.push_back(c >= 0x20 && c <= 0x7e ? static_cast<char>(c) : '?');
  }
  if (token.size() > n) out += "...";
  return out;
}

}  // namespace rl

// ASCII text helpers shared by every layer that reads commands or specs (core's spec parser, the
// command layer, rl-server, rl.so): case-insensitive keywords, Redis-strict integers, and
// echoing untrusted tokens inside one-line error replies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rl {

inline char AsciiLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

inline char AsciiUpper(char c) {
  return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
}

// Copies folded to one case (ASCII only: keywords, command and policy names).
inline std::string AsciiLowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = AsciiLower(c);
  return out;
}
inline std::string AsciiUppered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = AsciiUpper(c);
  return out;
}

// Case-insensitive ASCII equality.
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

// Strict decimal int64 as Redis's string2ll: no spaces, no '+', no leading zeros, no overflow.
bool ParseInt64(std::string_view text, int64_t* out);

// A token made safe to quote inside a one-line error reply: control bytes and non-ASCII become
// '?', and anything past 48 bytes is cut with "...", so junk does not come back at length.
std::string EchoToken(std::string_view token);

}  // namespace rl

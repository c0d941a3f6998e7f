// RESP request parser. Follows Redis's processMultibulkBuffer / processInlineBuffer: the same
// accepted inputs, the same error texts, the same limits, but binary-safe line searches and a
// result that never depends on how the bytes were split into reads.
//
// Deliberate differences from Redis, all in inputs no real client sends:
// - Redis ignores the two bytes after a header's '\r' and after a bulk's data; here they must be
//   "\r\n" (otherwise "invalid multibulk length" / "invalid bulk length"), so a desynchronised
//   stream is caught instead of being read as the next command.
// - A NUL byte is an ordinary byte (Redis's strchr stops at it and waits for 64 KiB).
// - A line is measured the same way whether it arrived in one read or many: a line longer than
//   max_inline is an error even when its terminator arrived in the same read.
#include "resp/parser.h"

#include <array>
#include <climits>
#include <cstring>

namespace resp {
namespace {

constexpr std::string_view kTooBigInline = "Protocol error: too big inline request";
constexpr std::string_view kTooBigMbulk = "Protocol error: too big mbulk count string";
constexpr std::string_view kTooBigBulk = "Protocol error: too big bulk count string";
constexpr std::string_view kInvalidMbulk = "Protocol error: invalid multibulk length";
constexpr std::string_view kInvalidBulk = "Protocol error: invalid bulk length";
constexpr std::string_view kUnauthMbulk = "Protocol error: unauthenticated multibulk length";
constexpr std::string_view kUnauthBulk = "Protocol error: unauthenticated bulk length";
constexpr std::string_view kUnbalanced = "Protocol error: unbalanced quotes in request";

// Past this many spans the vector is released after the command instead of kept for reuse, so
// one huge command does not pin its memory for the life of the connection.
constexpr size_t kKeepSpans = 4096;

// Strict decimal integer as Redis's string2ll reads it: optional '-', no '+', no spaces, no
// leading zeros, no "-0", no overflow.
bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  if (s[i] == '0') {
    if (s.size() != 1) return false;
    *out = 0;
    return true;
  }
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    const unsigned d = static_cast<unsigned char>(s[i]) - '0';
    if (d > 9) return false;
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (negative) {
    if (v > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = static_cast<int64_t>(0 - v);
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

// Byte classes for the inline splitter, looked up once per byte.
constexpr uint8_t kSpace = 1;    // isspace() in the C locale: skipped between arguments
constexpr uint8_t kEndsArg = 2;  // ends an unquoted argument in sdssplitargs (not \v or \f)
constexpr uint8_t kQuote = 4;
constexpr std::array<uint8_t, 256> kByteClass = [] {
  std::array<uint8_t, 256> table{};
  for (unsigned char c : {' ', '\t', '\n', '\v', '\f', '\r'}) table[c] |= kSpace;
  for (unsigned char c : {' ', '\t', '\n', '\r'}) table[c] |= kEndsArg;
  for (unsigned char c : {'"', '\''}) table[c] |= kQuote;
  return table;
}();

uint8_t ClassOf(char c) { return kByteClass[static_cast<unsigned char>(c)]; }
bool IsSpace(char c) { return ClassOf(c) & kSpace; }
bool EndsArg(char c) { return ClassOf(c) & kEndsArg; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void Parser::Reset() {
  ClearCommand();
  failed_ = false;
  error_.clear();
}

void Parser::ClearCommand() {
  mode_ = Mode::kNone;
  expected_args_ = -1;
  bulk_len_ = -1;
  pos_ = 0;
  scanned_ = 0;
  if (spans_.capacity() > kKeepSpans) {
    std::vector<std::pair<size_t, size_t>>().swap(spans_);
  } else {
    spans_.clear();
  }
  spans_in_storage_ = false;
}

ParseStatus Parser::Fail(std::string_view message) {
  ClearCommand();
  failed_ = true;
  error_.assign(message);
  return ParseStatus::kError;
}

ParseStatus Parser::Parse(std::string_view buf, size_t* consumed,
                          std::vector<std::string_view>* args) {
  *consumed = 0;
  args->clear();
  if (failed_) return ParseStatus::kError;
  // A caller that handed back fewer bytes than before broke the contract; start over rather
  // than read past the end.
  if (buf.size() < pos_ + scanned_) ClearCommand();
  if (buf.empty()) return ParseStatus::kIncomplete;
  if (mode_ == Mode::kNone) {
    if (buf[0] == '*' && ParseWholeMultibulk(buf, consumed, args)) return ParseStatus::kCommand;
    mode_ = buf[0] == '*' ? Mode::kMultibulk : Mode::kInline;
  }
  if (mode_ == Mode::kInline) return ParseInline(buf, consumed, args);
  return ParseMultibulk(buf, consumed, args);
}

namespace {

// Whether the two bytes at `p` are CRLF, in one 16-bit compare.
bool IsCrlf(const char* p) {
  uint16_t two;
  std::memcpy(&two, p, 2);
  uint16_t crlf;
  std::memcpy(&crlf, "\r\n", 2);
  return two == crlf;
}

// The length in a "*N\r\n" or "$N\r\n" line at *p (after its prefix) in one pass: a decimal of
// at most 18 digits without a leading zero (but "0" itself), then CRLF. False for anything else
// (the general path then gives Redis's error, or waits for more bytes).
bool ReadLength(const char** p, const char* end, uint64_t* out) {
  const char* q = *p;
  uint64_t v = 0;
  const char* const first = q;
  while (q < end && *q >= '0' && *q <= '9') {
    v = v * 10 + static_cast<unsigned>(*q - '0');
    ++q;
  }
  const size_t digits = static_cast<size_t>(q - first);
  if (digits == 0 || digits > 18 || (digits > 1 && *first == '0')) return false;
  if (end - q < 2 || q[0] != '\r' || q[1] != '\n') return false;
  *p = q + 2;
  *out = v;
  return true;
}

}  // namespace

bool Parser::ParseWholeMultibulk(std::string_view buf, size_t* consumed,
                                 std::vector<std::string_view>* args) {
  const char* p = buf.data() + 1;
  const char* const end = buf.data() + buf.size();
  uint64_t count = 0;
  if (!ReadLength(&p, end, &count) || count == 0 || count > limits_.max_args) return false;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t len = 0;
    if (p == end || *p != '$') {
      args->clear();
      return false;
    }
    ++p;
    // "$N\r\n" of one or two digits (every argument of a rate-limit check) without the general
    // loop; anything else (a leading zero, more digits, a short buffer) goes through ReadLength.
    const size_t left = static_cast<size_t>(end - p);
    const unsigned d0 = left > 0 ? static_cast<unsigned char>(p[0]) - '0' : 10;
    const unsigned d1 = left > 1 ? static_cast<unsigned char>(p[1]) - '0' : 10;
    if (left >= 3 && d0 <= 9 && IsCrlf(p + 1)) {
      len = d0;
      p += 3;
    } else if (left >= 4 && d0 - 1 <= 8 && d1 <= 9 && IsCrlf(p + 2)) {
      len = d0 * 10 + d1;
      p += 4;
    } else if (!ReadLength(&p, end, &len)) {
      args->clear();
      return false;
    }
    if (len > limits_.max_bulk || static_cast<uint64_t>(end - p) < len + 2 || !IsCrlf(p + len)) {
      args->clear();
      return false;
    }
    args->emplace_back(p, len);
    p += len + 2;
  }
  *consumed = static_cast<size_t>(p - buf.data());
  return true;
}

Parser::LineStatus Parser::FindLineEnd(std::string_view buf, char ch, size_t* at) {
  const size_t avail = buf.size() - pos_;
  // Never look further than the longest allowed line plus its terminator.
  const size_t window = limits_.max_inline < avail ? limits_.max_inline + 1 : avail;
  if (scanned_ < window) {
    const char* begin = buf.data() + pos_;
    const void* hit = std::memchr(begin + scanned_, ch, window - scanned_);
    if (hit != nullptr) {
      const size_t len = static_cast<const char*>(hit) - begin;
      scanned_ = len;  // a resumed search finds the same byte at once
      *at = pos_ + len;
      return LineStatus::kFound;
    }
    scanned_ = window;
  }
  return window > limits_.max_inline ? LineStatus::kTooLong : LineStatus::kIncomplete;
}

ParseStatus Parser::ParseInline(std::string_view buf, size_t* consumed,
                                std::vector<std::string_view>* args) {
  size_t newline = 0;
  switch (FindLineEnd(buf, '\n', &newline)) {
    case LineStatus::kIncomplete:
      return ParseStatus::kIncomplete;
    case LineStatus::kTooLong:
      return Fail(kTooBigInline);
    case LineStatus::kFound:
      break;
  }
  size_t end = newline;
  if (end > 0 && buf[end - 1] == '\r') --end;
  if (!SplitInline(buf.substr(0, end))) return Fail(kUnbalanced);
  pos_ = newline + 1;
  return Finish(buf, consumed, args);
}

bool Parser::SplitInline(std::string_view line) {
  spans_.clear();
  spans_in_storage_ = false;
  const size_t n = line.size();
  size_t i = 0;
  // Common case, no quotes: every argument is a plain run of bytes, so it can be a view into the
  // buffer. A quote can only sit inside an argument, so the first one found sends the whole line
  // to the unescaping path below.
  while (true) {
    while (i < n && IsSpace(line[i])) ++i;
    if (i == n) return true;
    const size_t start = i;
    while (i < n && !(ClassOf(line[i]) & (kEndsArg | kQuote))) ++i;
    if (i < n && (ClassOf(line[i]) & kQuote)) break;
    spans_.emplace_back(start, i - start);
  }
  spans_.clear();
  spans_in_storage_ = true;
  i = 0;
  // Quotes: unescape into inline_storage_, which never outgrows the line.
  inline_storage_.clear();
  std::string& out = inline_storage_;
  while (true) {
    while (i < n && IsSpace(line[i])) ++i;
    if (i == n) return true;
    const size_t start = out.size();
    bool in_double = false;
    bool in_single = false;
    bool done = false;
    while (!done) {
      if (in_double) {
        if (i >= n) return false;  // unterminated quotes
        const char c = line[i];
        if (c == '\\' && i + 3 < n && line[i + 1] == 'x' && HexValue(line[i + 2]) >= 0 &&
            HexValue(line[i + 3]) >= 0) {
          out.push_back(static_cast<char>(HexValue(line[i + 2]) * 16 + HexValue(line[i + 3])));
          i += 4;
        } else if (c == '\\' && i + 1 < n) {
          char e = line[i + 1];
          switch (e) {
            case 'n':
              e = '\n';
              break;
            case 'r':
              e = '\r';
              break;
            case 't':
              e = '\t';
              break;
            case 'b':
              e = '\b';
              break;
            case 'a':
              e = '\a';
              break;
            default:
              break;  // \\ \" and any other char stand for themselves
          }
          out.push_back(e);
          i += 2;
        } else if (c == '"') {
          // The closing quote must be followed by a space or the end of the line.
          if (i + 1 < n && !IsSpace(line[i + 1])) return false;
          done = true;
          i += 1;
        } else {
          out.push_back(c);
          i += 1;
        }
      } else if (in_single) {
        if (i >= n) return false;
        const char c = line[i];
        if (c == '\\' && i + 1 < n && line[i + 1] == '\'') {
          out.push_back('\'');
          i += 2;
        } else if (c == '\'') {
          if (i + 1 < n && !IsSpace(line[i + 1])) return false;
          done = true;
          i += 1;
        } else {
          out.push_back(c);
          i += 1;
        }
      } else if (i >= n) {
        done = true;
      } else {
        const char c = line[i++];
        if (EndsArg(c)) {
          done = true;
        } else if (c == '"') {
          in_double = true;
        } else if (c == '\'') {
          in_single = true;
        } else {
          out.push_back(c);
        }
      }
    }
    spans_.emplace_back(start, out.size() - start);
  }
}

ParseStatus Parser::ParseMultibulk(std::string_view buf, size_t* consumed,
                                   std::vector<std::string_view>* args) {
  if (expected_args_ < 0) {
    size_t cr = 0;
    switch (FindLineEnd(buf, '\r', &cr)) {
      case LineStatus::kIncomplete:
        return ParseStatus::kIncomplete;
      case LineStatus::kTooLong:
        return Fail(kTooBigMbulk);
      case LineStatus::kFound:
        break;
    }
    if (cr + 1 >= buf.size()) return ParseStatus::kIncomplete;
    int64_t count = 0;
    if (!ParseInt(buf.substr(1, cr - 1), &count) || count > INT_MAX || buf[cr + 1] != '\n') {
      return Fail(kInvalidMbulk);
    }
    if (count > 0 && static_cast<uint64_t>(count) > limits_.max_args) {
      return Fail(limits_.unauthenticated ? kUnauthMbulk : kInvalidMbulk);
    }
    pos_ = cr + 2;
    scanned_ = 0;
    if (count <= 0) return Finish(buf, consumed, args);  // Redis ignores *0 and *-N
    expected_args_ = count;
    spans_.clear();
    spans_in_storage_ = false;
  }
  while (spans_.size() < static_cast<size_t>(expected_args_)) {
    if (bulk_len_ < 0) {
      size_t cr = 0;
      switch (FindLineEnd(buf, '\r', &cr)) {
        case LineStatus::kIncomplete:
          return ParseStatus::kIncomplete;
        case LineStatus::kTooLong:
          return Fail(kTooBigBulk);
        case LineStatus::kFound:
          break;
      }
      if (cr + 1 >= buf.size()) return ParseStatus::kIncomplete;
      if (buf[pos_] != '$') {
        std::string message = "Protocol error: expected '$', got '";
        message.push_back(buf[pos_]);
        message.push_back('\'');
        return Fail(message);
      }
      int64_t len = 0;
      if (!ParseInt(buf.substr(pos_ + 1, cr - pos_ - 1), &len) || len < 0 || buf[cr + 1] != '\n') {
        return Fail(kInvalidBulk);
      }
      if (static_cast<uint64_t>(len) > limits_.max_bulk) {
        return Fail(limits_.unauthenticated ? kUnauthBulk : kInvalidBulk);
      }
      bulk_len_ = len;
      pos_ = cr + 2;
      scanned_ = 0;
    }
    // The bulk's bytes are not scanned, only counted: a large pending bulk costs O(1) per call.
    const size_t len = static_cast<size_t>(bulk_len_);
    if (buf.size() - pos_ < len + 2) return ParseStatus::kIncomplete;
    if (buf[pos_ + len] != '\r' || buf[pos_ + len + 1] != '\n') return Fail(kInvalidBulk);
    spans_.emplace_back(pos_, len);
    pos_ += len + 2;
    bulk_len_ = -1;
  }
  return Finish(buf, consumed, args);
}

ParseStatus Parser::Finish(std::string_view buf, size_t* consumed,
                           std::vector<std::string_view>* args) {
  const std::string_view base = spans_in_storage_ ? std::string_view(inline_storage_) : buf;
  args->reserve(spans_.size());
  for (const auto& [offset, length] : spans_) args->push_back(base.substr(offset, length));
  *consumed = pos_;
  ClearCommand();
  return ParseStatus::kCommand;
}

}  // namespace resp

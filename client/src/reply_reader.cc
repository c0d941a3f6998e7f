// RESP reply reader. Replies to a rate-limit client are small, so an incomplete reply is simply
// re-read from its first byte when more data arrives; that keeps the reader stateless.
#include "reply_reader.h"

#include <charconv>
#include <utility>

namespace rl::client_internal {
namespace {

// Strict base-10 integer: optional '-', digits only, no overflow.
bool ParseInt(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

}  // namespace

ReadStatus ReplyReader::Fail(std::string message) {
  error_ = std::move(message);
  return ReadStatus::kError;
}

ReadStatus ReplyReader::ReadLine(std::string_view buf, size_t* pos, std::string_view* line) {
  size_t end = buf.find("\r\n", *pos);
  if (end == std::string_view::npos) {
    if (buf.size() - *pos > limits_.max_line) return Fail("reply line too long");
    return ReadStatus::kIncomplete;
  }
  if (end - *pos > limits_.max_line) return Fail("reply line too long");
  *line = buf.substr(*pos, end - *pos);
  *pos = end + 2;
  return ReadStatus::kValue;
}

ReadStatus ReplyReader::ReadValue(std::string_view buf, size_t* pos, size_t depth,
                                  RespValue* value) {
  if (depth > limits_.max_depth) return Fail("reply nested too deeply");
  if (*pos >= buf.size()) return ReadStatus::kIncomplete;
  const char type = buf[*pos];
  ++*pos;
  std::string_view line;
  if (ReadStatus s = ReadLine(buf, pos, &line); s != ReadStatus::kValue) return s;

  switch (type) {
    case '+':
    case '-':
    case ',':  // RESP3 double: kept as text, we never compute with it
      value->type = type == '-' ? RespValue::Type::kError : RespValue::Type::kSimpleString;
      value->text.assign(line);
      return ReadStatus::kValue;
    case ':':
      value->type = RespValue::Type::kInteger;
      if (!ParseInt(line, &value->integer)) return Fail("bad integer in reply");
      return ReadStatus::kValue;
    case '#':
      value->type = RespValue::Type::kInteger;
      if (line != "t" && line != "f") return Fail("bad boolean in reply");
      value->integer = line == "t" ? 1 : 0;
      return ReadStatus::kValue;
    case '_':
      value->type = RespValue::Type::kNull;
      return ReadStatus::kValue;
    case '$': {
      int64_t len = 0;
      if (!ParseInt(line, &len) || len < -1) return Fail("bad bulk length in reply");
      if (len == -1) {
        value->type = RespValue::Type::kNull;
        return ReadStatus::kValue;
      }
      if (static_cast<uint64_t>(len) > limits_.max_bulk) return Fail("bulk reply too large");
      const size_t n = static_cast<size_t>(len);
      if (buf.size() - *pos < n + 2) return ReadStatus::kIncomplete;
      if (buf.substr(*pos + n, 2) != "\r\n") return Fail("bulk reply not terminated");
      value->type = RespValue::Type::kBulk;
      value->text.assign(buf.substr(*pos, n));
      *pos += n + 2;
      return ReadStatus::kValue;
    }
    case '*':
    case '%': {
      int64_t count = 0;
      if (!ParseInt(line, &count) || count < -1) return Fail("bad array length in reply");
      if (count == -1) {
        value->type = RespValue::Type::kNull;
        return ReadStatus::kValue;
      }
      if (type == '%') count *= 2;
      if (static_cast<uint64_t>(count) > limits_.max_elements) return Fail("reply too long");
      value->type = RespValue::Type::kArray;
      value->elements.clear();
      value->elements.resize(static_cast<size_t>(count));
      for (RespValue& element : value->elements) {
        if (ReadStatus s = ReadValue(buf, pos, depth + 1, &element); s != ReadStatus::kValue) {
          return s;
        }
      }
      return ReadStatus::kValue;
    }
    default:
      return Fail(std::string("unexpected reply type byte '") + type + "'");
  }
}

ReadStatus ReplyReader::Read(std::string_view buf, size_t* consumed, RespValue* value) {
  size_t pos = 0;
  *consumed = 0;
  ReadStatus status = ReadValue(buf, &pos, 0, value);
  if (status == ReadStatus::kValue) *consumed = pos;
  return status;
}

}  // namespace rl::client_internal

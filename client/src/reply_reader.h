// A bounded reader for RESP *replies* (what a server sends back), the client-side counterpart of
// resp::Parser, which reads requests. RESP2 types plus the few RESP3 ones a server might send
// anyway (null, boolean, double, map), so a reply is never misread as a protocol error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rl::client_internal {

struct RespValue {
  enum class Type : uint8_t { kSimpleString, kError, kInteger, kBulk, kNull, kArray };
  Type type = Type::kNull;
  int64_t integer = 0;              // kInteger (RESP3 booleans read as 0/1)
  std::string text;                 // kSimpleString, kError, kBulk (RESP3 doubles as text)
  std::vector<RespValue> elements;  // kArray (a RESP3 map reads as its flat key/value array)
};

struct ReplyLimits {
  size_t max_bulk = 1 << 20;  // our replies are a few hundred bytes; anything huge is wrong
  size_t max_elements = 4096;
  size_t max_depth = 8;
  size_t max_line = 64 * 1024;
};

enum class ReadStatus { kValue, kIncomplete, kError };

class ReplyReader {
 public:
  explicit ReplyReader(ReplyLimits limits = {}) : limits_(limits) {}

  // Reads one complete reply from the start of `buf`. On kValue sets *value and *consumed (bytes
  // of the reply). On kIncomplete nothing is consumed: call again with more bytes appended. On
  // kError the stream cannot be trusted any more (error() says why); the caller drops it.
  ReadStatus Read(std::string_view buf, size_t* consumed, RespValue* value);
  const std::string& error() const { return error_; }

 private:
  ReadStatus ReadValue(std::string_view buf, size_t* pos, size_t depth, RespValue* value);
  ReadStatus ReadLine(std::string_view buf, size_t* pos, std::string_view* line);
  ReadStatus Fail(std::string message);

  ReplyLimits limits_;
  std::string error_;
};

}  // namespace rl::client_internal

// Incremental, bounded RESP2/RESP3 *reply* parser: the bytes a server sends back, read into a
// tree of values. The client-side counterpart of resp::Parser (which reads requests). Every RESP3
// type is understood, so a reply from any Redis-protocol server is never misread as a protocol
// error; attributes (|) are read and dropped, streamed strings and aggregates (?) are refused.
// Input is untrusted: every length is bounded, and nothing is allocated because a length says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace resp {

struct Value {
  enum class Type : uint8_t {
    kSimpleString,  // +
    kError,         // - and ! (blob error): text is the whole line, e.g. "ERR unknown command"
    kInteger,       // :
    kBulk,          // $ (binary-safe)
    kNull,          // _ and the RESP2 nulls $-1 and *-1
    kArray,         // *
    kMap,           // %: elements hold key, value, key, value, ...
    kSet,           // ~
    kPush,          // >: out-of-band data (invalidations, pub/sub), not the reply to a command
    kBoolean,       // #: integer is 1 or 0
    kDouble,        // ,: text as sent ("1.5", "inf", "nan")
    kBigNumber,     // (: text as sent (digits)
    kVerbatim,      // =: text without the "fmt:" prefix
  };
  Type type = Type::kNull;
  int64_t integer = 0;
  std::string text;
  std::vector<Value> elements;

  // The value under `key` in a map (keys compared as strings), or null.
  const Value* Find(std::string_view key) const;
};

struct ReplyLimits {
  size_t max_line = 64 * 1024;          // bytes in a simple string, error, number or header line
  size_t max_bulk = 512 * 1024 * 1024;  // bytes in one bulk, blob error or verbatim string
  size_t max_elements = 1024 * 1024;    // elements in one aggregate (a map counts its pairs x2)
  size_t max_depth = 32;                // aggregates nested in one another
  // Bytes one reply may span from its first to its last byte: bounds what a reply can make the
  // parser hold, however its elements are shaped.
  size_t max_reply = 1024 * 1024 * 1024;
};

enum class ReplyStatus {
  kValue,       // one complete reply: *value and *consumed are set
  kIncomplete,  // need more bytes; *consumed is 0 (nothing may be discarded yet)
  kError,       // the stream cannot be trusted any more: error() says why; drop the connection
};

class ReplyParser {
 public:
  explicit ReplyParser(ReplyLimits limits = {}) : limits_(limits) {}

  // Parses at most one reply from `buf`, which must start at the first byte not yet consumed.
  // On kValue, *value is the reply and *consumed its size in bytes. Between calls the caller may
  // append to or move the unconsumed bytes, but not change them: the parser keeps what it has
  // read of a pending reply (and how far) and resumes, so a large reply arriving in many small
  // reads is not re-parsed from its start each time. After kError every further call returns
  // kError until Reset().
  ReplyStatus Parse(std::string_view buf, size_t* consumed, Value* value);

  const std::string& error() const { return error_; }
  const ReplyLimits& limits() const { return limits_; }
  // Forgets a half-parsed reply and a past error.
  void Reset();

 private:
  // An aggregate being filled: `remaining` elements still to come.
  struct Frame {
    Value value;
    size_t remaining = 0;
    bool attribute = false;  // dropped when complete
  };
  enum class Step { kDone, kIncomplete, kError };

  // Reads one element (a whole leaf, or an aggregate header) at pos_.
  Step ParseElement(std::string_view buf, Value* leaf, bool* is_leaf);
  // Finds the CRLF ending the line that starts at `from`, resuming the search at scanned_.
  Step FindLineEnd(std::string_view buf, size_t from, size_t* end);
  // A length-prefixed payload (bulk, blob error, verbatim): the header line ends at `line_end`.
  Step ReadBlob(std::string_view buf, std::string_view header, size_t line_end,
                std::string_view* payload, bool* null);
  // Hands a completed value to its parent aggregate (or marks the reply complete); closes every
  // aggregate this completes.
  void Deliver(Value value);
  Step Fail(std::string message);

  ReplyLimits limits_;
  std::string error_;
  bool failed_ = false;
  size_t pos_ = 0;      // bytes of the pending reply already turned into values
  size_t scanned_ = 0;  // bytes from pos_ already searched for a line end
  std::vector<Frame> stack_;
  bool complete_ = false;
  Value result_;
};

}  // namespace resp

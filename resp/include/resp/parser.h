// Incremental, bounded RESP request parser: bytes in, one command (a list of arguments) out.
// Knows nothing of commands or the engine. Multibulk (*N of $len bulks) and inline commands.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace resp {

struct ParserLimits {
  // Bytes in an inline command line (its "\r" included, its "\n" not) or in a "*N"/"$N" header
  // line before its "\r". Measured the same however the line was split into reads.
  size_t max_inline = 64 * 1024;
  // Arguments in one multibulk (an inline command is bounded by max_inline alone, as in Redis).
  size_t max_args = 1024 * 1024;
  size_t max_bulk = 512 * 1024 * 1024;  // bytes in one bulk argument
  // Set by Unauthenticated(): a multibulk over max_args or a bulk over max_bulk is reported with
  // Redis's "unauthenticated multibulk length" / "unauthenticated bulk length" wording.
  bool unauthenticated = false;
  // Redis's tighter limits for clients that have not authenticated yet.
  static ParserLimits Unauthenticated() { return ParserLimits{16 * 1024, 10, 16 * 1024, true}; }
};

enum class ParseStatus {
  kCommand,     // one complete command: *args and *consumed are set
  kIncomplete,  // need more bytes; *consumed is 0 (nothing may be discarded yet)
  kError,       // protocol error: error() has Redis's text; the connection should close
};

class Parser {
 public:
  explicit Parser(ParserLimits limits = {}) : limits_(limits) {}

  // Parses at most one command from `buf`, which must start at the first byte not yet consumed.
  // On kCommand, `args` holds views into `buf` (valid while those bytes are) and `consumed` is the
  // size of the command including its terminator. An empty line (inline) or a "*0"/"*-1" header
  // is consumed with zero args (still kCommand with args empty: the caller skips it).
  // Exception: the arguments of an inline command that uses quotes are unescaped into storage
  // owned by the parser; those views stay valid until the next Parse() or Reset() call, so run
  // (or copy) a command before parsing the next one.
  // Between calls the caller may append to or move the unconsumed bytes, but not change them:
  // the parser remembers how far it got (offsets) and does not re-scan a large pending bulk.
  // After kError every further call returns kError until Reset().
  ParseStatus Parse(std::string_view buf, size_t* consumed, std::vector<std::string_view>* args);

  // Redis's wording, e.g. "Protocol error: invalid multibulk length" (no "ERR " prefix).
  const std::string& error() const { return error_; }
  // New limits apply from the next command header on (an AUTH in a pipeline lifts them for the
  // commands after it).
  void set_limits(const ParserLimits& limits) { limits_ = limits; }
  const ParserLimits& limits() const { return limits_; }
  // Forgets a half-parsed command and a past error.
  void Reset();

 private:
  enum class Mode : uint8_t { kNone, kInline, kMultibulk };
  enum class LineStatus : uint8_t { kFound, kIncomplete, kTooLong };

  ParseStatus ParseInline(std::string_view buf, size_t* consumed,
                          std::vector<std::string_view>* args);
  ParseStatus ParseMultibulk(std::string_view buf, size_t* consumed,
                             std::vector<std::string_view>* args);
  // The common case in one pass: a whole, well-formed multibulk command at the start of `buf`
  // (one read holds a pipeline of them). Leaves the parser's state alone and returns false for
  // anything else (incomplete, malformed, over a limit), which ParseMultibulk then reads with its
  // resumable state and exact errors.
  bool ParseWholeMultibulk(std::string_view buf, size_t* consumed,
                           std::vector<std::string_view>* args);
  // Looks for `ch` in the line that starts at pos_, resuming the search where the last call
  // stopped; kTooLong once the line (bytes before `ch`) is longer than limits_.max_inline.
  LineStatus FindLineEnd(std::string_view buf, char ch, size_t* at);
  // Splits an inline line with Redis's sdssplitargs rules into spans_; false on bad quoting.
  bool SplitInline(std::string_view line);
  ParseStatus Finish(std::string_view buf, size_t* consumed, std::vector<std::string_view>* args);
  ParseStatus Fail(std::string_view message);
  void ClearCommand();

  ParserLimits limits_;
  std::string error_;
  bool failed_ = false;
  // Resume state for a partially received command (offsets relative to the buffer start).
  Mode mode_ = Mode::kNone;
  int64_t expected_args_ = -1;  // -1: no multibulk header parsed yet
  int64_t bulk_len_ = -1;       // length announced by the pending bulk header, -1 if none
  size_t pos_ = 0;              // bytes of the pending command already validated
  size_t scanned_ = 0;          // bytes after pos_ already searched for a line end
  std::vector<std::pair<size_t, size_t>> spans_;  // (offset, length) of args parsed so far
  bool spans_in_storage_ = false;                 // spans_ index inline_storage_, not buf
  std::string inline_storage_;                    // unescaped inline args (quotes)
};

}  // namespace resp

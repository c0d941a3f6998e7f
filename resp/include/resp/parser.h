// Incremental, bounded RESP request parser: bytes in, one command (a list of arguments) out.
// Knows nothing of commands or the engine. Multibulk (*N of $len bulks) and inline commands.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace resp {

struct ParserLimits {
  size_t max_inline = 64 * 1024;            // bytes in an inline command or a header line
  size_t max_args = 1024 * 1024;            // arguments in one multibulk
  size_t max_bulk = 512 * 1024 * 1024;      // bytes in one bulk argument
  // Redis's tighter limits for clients that have not authenticated yet.
  static ParserLimits Unauthenticated() { return ParserLimits{16 * 1024, 10, 16 * 1024}; }
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
  // Between calls the caller may append to or move the unconsumed bytes, but not change them:
  // the parser remembers how far it got (offsets) and does not re-scan a large pending bulk.
  ParseStatus Parse(std::string_view buf, size_t* consumed, std::vector<std::string_view>* args);

  // Redis's wording, e.g. "Protocol error: invalid multibulk length" (no "ERR " prefix).
  const std::string& error() const { return error_; }
  void set_limits(const ParserLimits& limits) { limits_ = limits; }
  const ParserLimits& limits() const { return limits_; }
  // Forgets a half-parsed command.
  void Reset();

 private:
  ParserLimits limits_;
  std::string error_;
  // Resume state for a partially received multibulk (offsets relative to the buffer start).
  int64_t expected_args_ = -1;   // -1: no multibulk header parsed yet
  size_t pos_ = 0;               // bytes of the pending command already validated
  std::vector<std::pair<size_t, size_t>> spans_;  // (offset, length) of args parsed so far
  std::vector<std::string> inline_storage_;       // unescaped inline args (quotes)
};

}  // namespace resp

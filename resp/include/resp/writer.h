// RESP2/RESP3 reply writer: appends encoded values to a caller-owned buffer, so a batch of
// pipelined replies leaves in one write. With protocol 2 the RESP3-only types downgrade as Redis
// does: map -> flat array, set -> array, null -> $-1, boolean -> :1/:0, double -> bulk string,
// big number -> bulk string, verbatim -> bulk string, push -> array. A client writes its
// commands with it too (Command).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace resp {

class Writer {
 public:
  explicit Writer(std::string* out, int protocol = 2) : out_(out), protocol_(protocol) {}

  void set_protocol(int protocol) { protocol_ = protocol; }
  int protocol() const { return protocol_; }
  std::string* buffer() const { return out_; }

  void SimpleString(std::string_view s);  // +OK (CR/LF in s are replaced by spaces)
  void Error(std::string_view s);         // -ERR ... (caller includes the code: "ERR x"; CR/LF
                                          // are replaced by spaces)
  void Integer(int64_t v);
  // An array of integers (an RL.CHECK reply in RESP2), the same bytes as ArrayHeader + Integer
  // each, formatted on the stack and appended at once.
  void IntegerArray(std::span<const int64_t> values);
  void Bulk(std::string_view s);
  void Null();
  void ArrayHeader(size_t n);
  void MapHeader(size_t n);  // n key/value pairs; RESP2: array of 2n
  void SetHeader(size_t n);
  void PushHeader(size_t n);
  void NullArray();       // RESP2 *-1, RESP3 _
  void Double(double v);  // shortest round-trip text; inf, -inf, nan as Redis spells them
  void Boolean(bool v);
  void BigNumber(std::string_view digits);
  // format is 3 chars, e.g. "txt" (any other length is written as "txt"); RESP2: bulk of text.
  void Verbatim(std::string_view format, std::string_view text);

  // A command as a client sends it: an array of bulk strings, binary-safe (nothing is replaced;
  // the same bytes in any protocol version).
  void Command(std::span<const std::string_view> args);
  void Command(std::initializer_list<std::string_view> args) {
    Command(std::span<const std::string_view>(args.begin(), args.size()));
  }

 private:
  std::string* out_;
  int protocol_;
};

}  // namespace resp

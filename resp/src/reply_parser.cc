// RESP reply parser. A reply is read element by element: a leaf (or an aggregate's header) is
// taken only once all of its bytes are there, and an aggregate waits on a stack of open frames
// until its elements arrive. Offsets are relative to the start of the pending reply, which is
// the start of the caller's buffer.
#include "resp/reply_parser.h"

#include <algorithm>
#include <charconv>
#include <utility>

namespace resp {
namespace {

// Strict base-10 int64: optional '-', then digits only, no overflow.
bool ParseInteger(std::string_view text, int64_t* out) {
  if (text.empty() || text[0] == '+') return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

bool IsBigNumber(std::string_view text) {
  if (!text.empty() && text[0] == '-') text.remove_prefix(1);
  if (text.empty()) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsAggregate(char type) {
  return type == '*' || type == '%' || type == '~' || type == '>' || type == '|';
}

Value::Type AggregateType(char type) {
  switch (type) {
    case '%':
      return Value::Type::kMap;
    case '~':
      return Value::Type::kSet;
    case '>':
      return Value::Type::kPush;
    default:
      return Value::Type::kArray;
  }
}

}  // namespace

const Value* Value::Find(std::string_view key) const {
  if (type != Type::kMap) return nullptr;
  for (size_t i = 0; i + 1 < elements.size(); i += 2) {
    const Value& k = elements[i];
    const bool textual =
        k.type == Type::kBulk || k.type == Type::kSimpleString || k.type == Type::kVerbatim;
    if (textual && k.text == key) return &elements[i + 1];
  }
  return nullptr;
}

void ReplyParser::Reset() {
  error_.clear();
  failed_ = false;
  pos_ = 0;
  scanned_ = 0;
  stack_.clear();
  complete_ = false;
  result_ = Value{};
}

ReplyParser::Step ReplyParser::Fail(std::string message) {
  error_ = std::move(message);
  failed_ = true;
  return Step::kError;
}

ReplyParser::Step ReplyParser::FindLineEnd(std::string_view buf, size_t from, size_t* end) {
  const size_t at = buf.find("\r\n", std::max(from, scanned_));
  if (at == std::string_view::npos) {
    if (from >= buf.size()) return Step::kIncomplete;
    // The last byte may be the '\r' of a CRLF whose '\n' has not arrived: search it again.
    scanned_ = std::max(from, buf.size() - 1);
    const size_t line_so_far = buf.size() - from - (buf.back() == '\r' ? 1 : 0);
    if (line_so_far > limits_.max_line) return Fail("reply line too long");
    return Step::kIncomplete;
  }
  if (at - from > limits_.max_line) return Fail("reply line too long");
  scanned_ = at;
  *end = at;
  return Step::kDone;
}

ReplyParser::Step ReplyParser::ReadBlob(std::string_view buf, std::string_view header,
                                        size_t line_end, std::string_view* payload, bool* null) {
  int64_t len = 0;
  if (!ParseInteger(header, &len) || len < -1) return Fail("bad length in reply");
  if (len == -1) {
    *null = true;
    return Step::kDone;
  }
  if (static_cast<uint64_t>(len) > limits_.max_bulk) return Fail("bulk reply too large");
  const size_t start = line_end + 2;
  const size_t n = static_cast<size_t>(len);
  if (start + n + 2 > limits_.max_reply) return Fail("reply too large");
  if (buf.size() < start + n + 2) return Step::kIncomplete;
  if (buf[start + n] != '\r' || buf[start + n + 1] != '\n') {
    return Fail("bulk reply not terminated by CRLF");
  }
  *payload = buf.substr(start, n);
  return Step::kDone;
}

void ReplyParser::Deliver(Value value) {
  while (!stack_.empty()) {
    Frame& top = stack_.back();
    top.value.elements.push_back(std::move(value));
    if (--top.remaining > 0) return;
    Frame done = std::move(top);
    stack_.pop_back();
    // An attribute describes the value after it and is not an element of its parent: drop it.
    if (done.attribute) return;
    value = std::move(done.value);
  }
  result_ = std::move(value);
  complete_ = true;
}

ReplyParser::Step ReplyParser::ParseElement(std::string_view buf, Value* leaf, bool* is_leaf) {
  *is_leaf = false;
  if (pos_ >= buf.size()) return Step::kIncomplete;
  const char type = buf[pos_];
  size_t line_end = 0;
  if (Step s = FindLineEnd(buf, pos_ + 1, &line_end); s != Step::kDone) return s;
  const std::string_view line = buf.substr(pos_ + 1, line_end - pos_ - 1);
  if (line_end + 2 > limits_.max_reply) return Fail("reply too large");
  size_t next = line_end + 2;

  if (IsAggregate(type)) {
    if (line == "?") return Fail("streamed RESP3 aggregates are not supported");
    int64_t count = 0;
    if (!ParseInteger(line, &count) || count < -1) return Fail("bad aggregate length in reply");
    pos_ = next;
    if (count == -1) {
      if (type == '|' || type == '>') return Fail("bad aggregate length in reply");
      leaf->type = Value::Type::kNull;
      *is_leaf = true;
      return Step::kDone;
    }
    const size_t factor = (type == '%' || type == '|') ? 2 : 1;
    if (static_cast<uint64_t>(count) > limits_.max_elements / factor) {
      return Fail("reply aggregate too long");
    }
    const size_t n = static_cast<size_t>(count) * factor;
    if (n == 0) {
      if (type == '|') return Step::kDone;  // an empty attribute: nothing to drop
      leaf->type = AggregateType(type);
      *is_leaf = true;
      return Step::kDone;
    }
    if (stack_.size() >= limits_.max_depth) return Fail("reply nested too deeply");
    Frame frame;
    frame.value.type = AggregateType(type);
    frame.attribute = type == '|';
    // Reserve only a little: the announced count is untrusted, the elements' bytes are not here.
    frame.value.elements.reserve(std::min<size_t>(n, 16));
    frame.remaining = n;
    stack_.push_back(std::move(frame));
    return Step::kDone;
  }

  *is_leaf = true;
  switch (type) {
    case '+':
      leaf->type = Value::Type::kSimpleString;
      leaf->text.assign(line);
      break;
    case '-':
      leaf->type = Value::Type::kError;
      leaf->text.assign(line);
      break;
    case ':':
      leaf->type = Value::Type::kInteger;
      if (!ParseInteger(line, &leaf->integer)) return Fail("bad integer in reply");
      break;
    case '#':
      if (line != "t" && line != "f") return Fail("bad boolean in reply");
      leaf->type = Value::Type::kBoolean;
      leaf->integer = line == "t" ? 1 : 0;
      break;
    case '_':
      if (!line.empty()) return Fail("bad null in reply");
      leaf->type = Value::Type::kNull;
      break;
    case ',':
      if (line.empty()) return Fail("bad double in reply");
      leaf->type = Value::Type::kDouble;
      leaf->text.assign(line);
      break;
    case '(':
      if (!IsBigNumber(line)) return Fail("bad big number in reply");
      leaf->type = Value::Type::kBigNumber;
      leaf->text.assign(line);
      break;
    case '$':
    case '!':
    case '=': {
      if (line == "?") return Fail("streamed RESP3 strings are not supported");
      std::string_view payload;
      bool null = false;
      if (Step s = ReadBlob(buf, line, line_end, &payload, &null); s != Step::kDone) return s;
      if (null) {
        if (type != '$') return Fail("bad length in reply");
        leaf->type = Value::Type::kNull;
        break;
      }
      next += payload.size() + 2;
      if (type == '=') {
        // "fmt:" then the text; the format (txt, mkd) is not kept.
        if (payload.size() < 4 || payload[3] != ':') return Fail("bad verbatim string in reply");
        leaf->type = Value::Type::kVerbatim;
        leaf->text.assign(payload.substr(4));
      } else {
        leaf->type = type == '!' ? Value::Type::kError : Value::Type::kBulk;
        leaf->text.assign(payload);
      }
      break;
    }
    default:
      return Fail("unexpected reply type byte");
  }
  pos_ = next;
  return Step::kDone;
}

ReplyStatus ReplyParser::Parse(std::string_view buf, size_t* consumed, Value* value) {
  *consumed = 0;
  if (failed_) return ReplyStatus::kError;
  while (!complete_) {
    Value leaf;
    bool is_leaf = false;
    const Step step = ParseElement(buf, &leaf, &is_leaf);
    if (step == Step::kError) return ReplyStatus::kError;
    if (step == Step::kIncomplete) {
      // Everything buffered belongs to this unfinished reply.
      if (buf.size() > limits_.max_reply) {
        Fail("reply too large");
        return ReplyStatus::kError;
      }
      return ReplyStatus::kIncomplete;
    }
    if (is_leaf) Deliver(std::move(leaf));
  }
  *value = std::move(result_);
  *consumed = pos_;
  pos_ = 0;
  scanned_ = 0;
  complete_ = false;
  result_ = Value{};
  return ReplyStatus::kValue;
}

}  // namespace resp

// RESP reply writer. Every reply is appended to the caller's buffer with at most a few append
// calls (an array of integers with one); numbers are formatted into a stack buffer (below 10^6
// from a digit-pair table, larger ones with std::to_chars), so nothing allocates beyond the
// buffer's own growth.
#include "resp/writer.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

namespace resp {
namespace {

// Room for one length or integer line: the prefix, up to 20 characters of int64, CRLF.
constexpr size_t kMaxLine = 24;

// "00" .. "99": two digits per table read.
constexpr std::array<char, 200> kDigitPairs = [] {
  std::array<char, 200> t{};
  for (int i = 0; i < 100; ++i) {
    t[2 * i] = static_cast<char>('0' + i / 10);
    t[2 * i + 1] = static_cast<char>('0' + i % 10);
  }
  return t;
}();

// Writes `prefix`, the decimal `v` and CRLF at `p` (kMaxLine bytes of room); returns the end.
// Values from 0 to 999999 (a reply's flag, limits, counts and delays up to a quarter of an hour)
// are written from the digit-pair table by direct branches; others by std::to_chars. (Direct
// branches, because a general pair loop costs a short reply more than the branches do.)
char* PutLine(char* p, char prefix, int64_t v) {
  *p = prefix;
  const uint64_t u = static_cast<uint64_t>(v);
  char* end;
  if (u < 10) {
    p[1] = static_cast<char>('0' + u);
    end = p + 2;
  } else if (u < 100) {
    std::memcpy(p + 1, &kDigitPairs[2 * u], 2);
    end = p + 3;
  } else if (u < 1000) {
    p[1] = static_cast<char>('0' + u / 100);
    std::memcpy(p + 2, &kDigitPairs[2 * (u % 100)], 2);
    end = p + 4;
  } else if (u < 10000) {
    std::memcpy(p + 1, &kDigitPairs[2 * (u / 100)], 2);
    std::memcpy(p + 3, &kDigitPairs[2 * (u % 100)], 2);
    end = p + 5;
  } else if (u < 1000000) {
    // Five or six digits: the retry or reset of a window of a minute or more (60000 ms).
    const uint64_t hi = u / 10000, lo = u % 10000;
    if (hi < 10) {
      p[1] = static_cast<char>('0' + hi);
      end = p + 2;
    } else {
      std::memcpy(p + 1, &kDigitPairs[2 * hi], 2);
      end = p + 3;
    }
    std::memcpy(end, &kDigitPairs[2 * (lo / 100)], 2);
    std::memcpy(end + 2, &kDigitPairs[2 * (lo % 100)], 2);
    end += 4;
  } else {
    end = std::to_chars(p + 1, p + kMaxLine - 2, v).ptr;
  }
  end[0] = '\r';
  end[1] = '\n';
  return end + 2;
}

// Appends `prefix`, the decimal `v` and CRLF: the shape of every RESP length and integer line.
void AppendLine(std::string* out, char prefix, int64_t v) {
  char buf[kMaxLine];
  out->append(buf, PutLine(buf, prefix, v) - buf);
}

// Appends `prefix`, `s` with CR and LF turned into spaces (a status line cannot hold them), CRLF.
void AppendSanitizedLine(std::string* out, char prefix, std::string_view s) {
  const size_t start = out->size() + 1;
  out->reserve(start + s.size() + 2);
  out->push_back(prefix);
  out->append(s);
  for (size_t i = start; i < out->size(); ++i) {
    char& c = (*out)[i];
    if (c == '\r' || c == '\n') c = ' ';
  }
  out->append("\r\n", 2);
}

// Shortest text that reads back as the same double, plus Redis's spellings of the non-finite
// values ("inf", "-inf", "nan").
std::string_view FormatDouble(double v, char* buf, size_t size) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char* end = std::to_chars(buf, buf + size, v).ptr;
  return std::string_view(buf, end - buf);
}

}  // namespace

void Writer::SimpleString(std::string_view s) { AppendSanitizedLine(out_, '+', s); }

void Writer::Error(std::string_view s) { AppendSanitizedLine(out_, '-', s); }

void Writer::Integer(int64_t v) { AppendLine(out_, ':', v); }

void Writer::IntegerArray(std::span<const int64_t> values) {
  constexpr size_t kMaxValues = 8;
  if (values.size() > kMaxValues) {
    ArrayHeader(values.size());
    for (int64_t v : values) Integer(v);
    return;
  }
  char buf[kMaxLine * (kMaxValues + 1)];
  char* p = PutLine(buf, '*', static_cast<int64_t>(values.size()));
  for (int64_t v : values) p = PutLine(p, ':', v);
  out_->append(buf, p - buf);
}

void Writer::Bulk(std::string_view s) {
  AppendLine(out_, '$', static_cast<int64_t>(s.size()));
  out_->append(s);
  out_->append("\r\n", 2);
}

void Writer::Null() { out_->append(protocol_ >= 3 ? "_\r\n" : "$-1\r\n"); }

void Writer::NullArray() { out_->append(protocol_ >= 3 ? "_\r\n" : "*-1\r\n"); }

void Writer::ArrayHeader(size_t n) { AppendLine(out_, '*', static_cast<int64_t>(n)); }

void Writer::MapHeader(size_t n) {
  if (protocol_ >= 3) {
    AppendLine(out_, '%', static_cast<int64_t>(n));
  } else {
    AppendLine(out_, '*', static_cast<int64_t>(n) * 2);
  }
}

void Writer::SetHeader(size_t n) {
  AppendLine(out_, protocol_ >= 3 ? '~' : '*', static_cast<int64_t>(n));
}

void Writer::PushHeader(size_t n) {
  AppendLine(out_, protocol_ >= 3 ? '>' : '*', static_cast<int64_t>(n));
}

void Writer::Double(double v) {
  char buf[32];
  const std::string_view text = FormatDouble(v, buf, sizeof(buf));
  if (protocol_ >= 3) {
    out_->push_back(',');
    out_->append(text);
    out_->append("\r\n", 2);
  } else {
    Bulk(text);
  }
}

void Writer::Boolean(bool v) {
  if (protocol_ >= 3) {
    out_->append(v ? "#t\r\n" : "#f\r\n", 4);
  } else {
    out_->append(v ? ":1\r\n" : ":0\r\n", 4);
  }
}

void Writer::BigNumber(std::string_view digits) {
  if (protocol_ >= 3) {
    AppendSanitizedLine(out_, '(', digits);
  } else {
    Bulk(digits);
  }
}

void Writer::Verbatim(std::string_view format, std::string_view text) {
  if (protocol_ < 3) {
    Bulk(text);
    return;
  }
  // The format is exactly three bytes on the wire; anything else would corrupt the frame.
  if (format.size() != 3) format = "txt";
  AppendLine(out_, '=', static_cast<int64_t>(text.size() + 4));
  out_->append(format);
  out_->push_back(':');
  out_->append(text);
  out_->append("\r\n", 2);
}

void Writer::Command(std::span<const std::string_view> args) {
  ArrayHeader(args.size());
  for (std::string_view arg : args) Bulk(arg);
}

}  // namespace resp

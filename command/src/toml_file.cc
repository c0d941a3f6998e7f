// The one TOML reader (see toml_file.h). Startup and reload code only: errors are values, and
// toml++'s exceptions never escape.
#include "rl/command/toml_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "absl/status/status.h"

namespace rl::command {
namespace {

// A config file is a page of settings and policies; anything this large is a mistake.
constexpr size_t kMaxConfigFileBytes = 16 << 20;

// No fmt here: rl.so links this and must not depend on more shared libraries than Redis has.
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts) out.append(part);
  return out;
}

absl::Status FileError(std::string_view what, const std::string& path, std::string_view why = {}) {
  return absl::InvalidArgumentError(Cat({what, path, why.empty() ? "" : ": ", why}));
}

// One UTF-8 sequence at the start of `text`, strictly (no overlong forms, no surrogates, at most
// U+10FFFF): its code point and length, or length 0 when it is not valid.
struct CodePoint {
  uint32_t value = 0;
  size_t length = 0;
};
CodePoint DecodeUtf8(std::string_view text) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = b(0);
  const size_t n = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  uint32_t cp = n == 2 ? lead & 0x1F : n == 3 ? lead & 0x0F : lead & 0x07;
  bool valid = n != 0 && lead < 0xF5 && n <= text.size();
  for (size_t k = 1; valid && k < n; ++k) {
    valid = (b(k) & 0xC0) == 0x80;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  const uint32_t least = n == 2 ? 0x80u : n == 3 ? 0x800u : 0x10000u;
  valid = valid && cp >= least && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
  return valid ? CodePoint{cp, n} : CodePoint{};
}

// toml++ 3.3.0 (Debian's) reaches __builtin_unreachable, undefined behaviour, when it asks
// whether a non-ASCII character such as 'Š' is whitespace (upstream issues #190 and #295, fixed
// after 3.3.0), which it does between tokens, while it scans a bare value (a number, a date)
// and after a line-ending backslash in a """ string. So toml++ is only ever given ASCII: in
// "..." strings (keys and values) a non-ASCII character becomes its \uXXXX escape, the same
// string to TOML; in comments it becomes '?'; anywhere else, and in '...' strings (which have no
// escapes), it is refused with its line. For a valid document the quotes found here are exactly
// its strings; for an invalid one the escapes cannot make it valid (no bare key or value holds
// a backslash), and toml++ reports its error on ASCII. (Found by fuzz/config_fuzz.)
class AsciiForToml {
 public:
  AsciiForToml(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  absl::StatusOr<std::string> Run() {
    out_.reserve(text_.size());
    i_ = text_.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;  // a UTF-8 byte order mark
    while (i_ < text_.size()) {
      absl::Status s = static_cast<unsigned char>(text_[i_]) >= 0x80 ? NonAscii() : Ascii();
      if (!s.ok()) return s;
    }
    return std::move(out_);
  }

 private:
  enum class In { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral };

  absl::Status Fail(std::string_view what) const {
    return absl::InvalidArgumentError(Cat({source_, ":", std::to_string(line_), ": ", what}));
  }

  absl::Status NonAscii() {
    const CodePoint cp = DecodeUtf8(text_.substr(i_));
    if (in_ == In::kComment) {
      out_.push_back('?');
    } else if (cp.length == 0) {
      return Fail("invalid UTF-8");
    } else if (in_ == In::kBasic || in_ == In::kMultiBasic) {
      char escape[16];
      std::snprintf(escape, sizeof(escape), cp.value > 0xFFFF ? "\\U%08X" : "\\u%04X", cp.value);
      out_ += escape;
    } else if (in_ == In::kCode) {
      return Fail("non-ASCII character outside a quoted string or comment");
    } else {
      return Fail("non-ASCII character in a '...' string: write it in a \"...\" string");
    }
    i_ += cp.length != 0 ? cp.length : 1;
    return absl::OkStatus();
  }

  // The length of the run of `q` starting at the character just copied.
  size_t Run(char q) const {
    size_t k = i_ - 1;
    while (k < text_.size() && text_[k] == q) ++k;
    return k - (i_ - 1);
  }

  absl::Status Ascii() {
    const char c = text_[i_];
    out_.push_back(c);
    ++i_;
    if (c == '\n') ++line_;
    switch (in_) {
      case In::kCode:
        if (c == '#') in_ = In::kComment;
        if (c == '"' || c == '\'') OpenString(c);
        break;
      case In::kComment:
        if (c == '\n') in_ = In::kCode;
        break;
      case In::kBasic:  // an unterminated one ends at the line (toml++ stops there too)
      case In::kMultiBasic:
        if (c == '\\' && i_ < text_.size()) {
          // The escaped character as is; a non-ASCII one is an invalid escape, kept invalid.
          if (static_cast<unsigned char>(text_[i_]) >= 0x80) {
            return Fail("invalid escape in a string");
          }
          if (text_[i_] == '\n') ++line_;
          out_.push_back(text_[i_++]);
          break;
        }
        InString(c);
        break;
      case In::kLiteral:
      case In::kMultiLiteral:
        InString(c);
        break;
    }
    return absl::OkStatus();
  }

  void OpenString(char quote) {
    const bool multi = Run(quote) >= 3;
    if (multi) {
      out_.append(2, quote);
      i_ += 2;
    }
    in_ = quote == '"' ? (multi ? In::kMultiBasic : In::kBasic)
                       : (multi ? In::kMultiLiteral : In::kLiteral);
  }

  // `c`, just copied, inside a string: whether it closes it.
  void InString(char c) {
    const bool multi = in_ == In::kMultiBasic || in_ == In::kMultiLiteral;
    const char quote = in_ == In::kBasic || in_ == In::kMultiBasic ? '"' : '\'';
    if (!multi && (c == quote || c == '\n')) {
      in_ = In::kCode;
    } else if (multi && c == quote && Run(quote) >= 3) {
      // Up to two quotes before the closing three belong to the string.
      const size_t n = Run(quote);
      out_.append(n - 1, quote);
      i_ += n - 1;
      in_ = In::kCode;
    }
  }

  std::string_view text_;
  std::string_view source_;
  std::string out_;
  size_t i_ = 0;
  size_t line_ = 1;
  In in_ = In::kCode;
};

}  // namespace

absl::StatusOr<std::string> ReadTomlFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return FileError("cannot read config file ", path, std::strerror(errno));
  struct stat st {};
  absl::Status error;
  if (::fstat(fd, &st) != 0) {
    error = FileError("cannot read config file ", path, std::strerror(errno));
  } else if (S_ISDIR(st.st_mode)) {
    error = FileError("config file ", path + " is a directory, not a TOML file");
  } else if (!S_ISREG(st.st_mode)) {
    error = FileError("config file ", path + " is not a regular file");
  } else if (static_cast<uint64_t>(st.st_size) > kMaxConfigFileBytes) {
    error = FileError("config file ",
                      path + " is too large (" + std::to_string(st.st_size) + " bytes)");
  }
  std::string content;
  char buf[16384];
  while (error.ok()) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = FileError("cannot read config file ", path, std::strerror(errno));
    if (n <= 0) break;
    content.append(buf, static_cast<size_t>(n));
    // The file may grow after fstat.
    if (content.size() > kMaxConfigFileBytes)
      error = FileError("config file ", path + " is too large");
  }
  ::close(fd);
  if (!error.ok()) return error;
  return content;
}

absl::StatusOr<toml::table> ParseToml(std::string_view text, std::string_view source) {
  absl::StatusOr<std::string> ascii = AsciiForToml(text, source).Run();
  if (!ascii.ok()) return ascii.status();
  // Debian's toml++ is built with exceptions: parse errors arrive as toml::parse_error.
  try {
    return toml::parse(*ascii, source);
  } catch (const toml::parse_error& err) {
    return absl::InvalidArgumentError(
        Cat({source, ":", std::to_string(err.source().begin.line), ": ", err.description()}));
  }
}

absl::StatusOr<PolicyTexts> PoliciesOf(const toml::table& root) {
  PolicyTexts out;
  const toml::node* node = root.get("policies");
  if (node == nullptr) return out;
  const toml::table* table = node->as_table();
  if (table == nullptr) return absl::InvalidArgumentError("[policies] must be a table");
  for (const auto& [key, value] : *table) {
    const auto* spec = value.as_string();
    if (spec == nullptr) {
      return absl::InvalidArgumentError(
          Cat({"policy '", key.str(), "' must be a string such as \"GCRA 100 1m\""}));
    }
    out.emplace_back(std::string(key.str()), spec->get());
  }
  return out;
}

absl::StatusOr<PolicyTexts> ReadPoliciesText(std::string_view text, std::string_view source) {
  absl::StatusOr<toml::table> parsed = ParseToml(text, source);
  if (!parsed.ok()) return parsed.status();
  return PoliciesOf(*parsed);
}

absl::StatusOr<PolicyTexts> ReadPoliciesFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTomlFile(path);
  if (!text.ok()) return text.status();
  return ReadPoliciesText(*text, path);
}

}  // namespace rl::command

// Helpers shared by the rl.so tests (see rl_util.h).
#include "rl_util.h"

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace rl::test {
namespace {

void PutU(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string RlModulePath() { return RL_MODULE_PATH; }

RedisOptions RlOptions(const std::string& load_args) {
  RedisOptions options;
  options.LoadModule(load_args.empty() ? RlModulePath() : RlModulePath() + " " + load_args);
  return options;
}

long long RlStat(RedisServer& server, const std::string& name) {
  const std::string value = server.InfoField("rl", "rl_" + name);
  return value.empty() ? -1 : std::stoll(value);
}

TempFile::TempFile(const std::string& text, const std::string& suffix) {
  std::string tmpl = "/tmp/rl-module-test-XXXXXX" + suffix;
  const int fd = ::mkstemps(tmpl.data(), static_cast<int>(suffix.size()));
  if (fd >= 0) ::close(fd);
  path_ = tmpl;
  std::ofstream(path_, std::ios::trunc) << text;
}

TempFile::~TempFile() { ::unlink(path_.c_str()); }

std::string Show(const Reply& reply) {
  std::ostringstream out;
  switch (reply.type) {
    case ':':
      out << reply.integer;
      break;
    case '*':
    case '%':
    case '~':
      if (reply.is_null()) {
        out << "(nil)";
        break;
      }
      out << (reply.type == '%' ? "{" : "[");
      for (size_t i = 0; i < reply.elements.size(); ++i) {
        out << (i ? " " : "") << Show(reply.elements[i]);
      }
      out << (reply.type == '%' ? "}" : "]");
      break;
    case '-':
      out << "-" << reply.str;
      break;
    case 'X':
      out << "(connection closed)";
      break;
    default:
      if (reply.is_null()) {
        out << "(nil)";
      } else {
        out << '"' << reply.str << '"';
      }
  }
  return out.str();
}

int64_t TimeMs(const Reply& time) {
  return std::stoll(time.elements.at(0).str) * 1000 + std::stoll(time.elements.at(1).str) / 1000;
}

std::vector<int64_t> DecisionOf(const Reply& reply) {
  std::vector<int64_t> out;
  if (reply.type == '*' && reply.elements.size() >= 5) {
    for (size_t i = 0; i < 5; ++i) out.push_back(reply.elements[i].integer);
  } else if (reply.type == '%') {
    for (const char* name : {"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms"}) {
      const Reply* field = reply.Get(name);
      if (field == nullptr) return {};
      out.push_back(field->integer);
    }
  }
  return out;
}

std::string EncodeState(const std::vector<EncodedEntry>& entries) {
  std::string out;
  PutU(&out, 1, 1);
  PutU(&out, entries.size(), 2);
  for (const EncodedEntry& e : entries) {
    PutU(&out, e.scope, 8);
    PutU(&out, e.algorithm, 1);
    PutU(&out, e.window_ms, 8);
    PutU(&out, static_cast<uint64_t>(e.expiry_ms), 8);
    if (e.log) {
      PutU(&out, e.runs.size(), 4);
      for (const auto& [t, c] : e.runs) {
        PutU(&out, static_cast<uint64_t>(t), 8);
        PutU(&out, static_cast<uint64_t>(c), 8);
      }
    } else {
      for (int64_t w : e.words) PutU(&out, static_cast<uint64_t>(w), 8);
    }
  }
  return out;
}

}  // namespace rl::test

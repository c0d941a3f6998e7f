// The tests' one RESP reader: a reply tree (Reply), its parser (ReadReply, over a socket or over
// bytes already in memory), and a small blocking RESP2/RESP3 client for the server tests that
// sends raw bytes or commands. Independent of resp/ on purpose, so the tests check the wire.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace rl::test {

struct Reply {
  char type = 0;    // RESP type byte: + - : $ * % ~ _ # , = ( > ; 'X' = connection closed
  std::string str;  // simple/bulk/error/verbatim text
  int64_t integer = 0;
  std::vector<Reply> elements;  // arrays, sets, pushes; maps as key, value, key, value

  bool closed() const { return type == 'X'; }
  bool is_error() const { return type == '-'; }
  bool is_null() const {
    return type == '_' || (type == '$' && integer == -1) || (type == '*' && integer == -1);
  }
  // Map lookup by key for '%' replies (and flat RESP2 arrays of pairs).
  const Reply* Get(std::string_view key) const {
    for (size_t i = 0; i + 1 < elements.size(); i += 2) {
      if (elements[i].str == key) return &elements[i + 1];
    }
    return nullptr;
  }
  std::vector<int64_t> Ints() const {
    std::vector<int64_t> out;
    for (const auto& e : elements) out.push_back(e.integer);
    return out;
  }
};

// Reads one RESP2/RESP3 reply from `in`, which provides `bool ReadLine(std::string*)` (a line
// without its CRLF) and `bool ReadExact(size_t, std::string*)`. Type 'X' when `in` ends first.
template <typename Source>
Reply ReadReply(Source& in) {
  Reply r;
  std::string line;
  if (!in.ReadLine(&line) || line.empty()) {
    r.type = 'X';
    return r;
  }
  r.type = line[0];
  std::string body = line.substr(1);
  switch (r.type) {
    case '+':
    case '-':
    case '(':
    case ',':
      r.str = body;
      break;
    case ':':
      r.integer = std::strtoll(body.c_str(), nullptr, 10);
      break;
    case '#':
      r.str = body;
      r.integer = body == "t" ? 1 : 0;
      break;
    case '_':
      break;
    case '$':
    case '=':
    case '!': {
      r.integer = std::strtoll(body.c_str(), nullptr, 10);
      if (r.integer >= 0) {
        if (!in.ReadExact(static_cast<size_t>(r.integer) + 2, &r.str)) r.type = 'X';
        r.str.resize(static_cast<size_t>(r.integer));
        if (r.type == '=' && r.str.size() >= 4) r.str = r.str.substr(4);  // "txt:"
      }
      break;
    }
    case '*':
    case '~':
    case '>':
    case '%': {
      r.integer = std::strtoll(body.c_str(), nullptr, 10);
      int64_t n = r.type == '%' ? r.integer * 2 : r.integer;
      for (int64_t i = 0; i < n; ++i) {
        r.elements.push_back(ReadReply(in));
        if (r.elements.back().closed()) {
          r.type = 'X';
          break;
        }
      }
      break;
    }
    default:
      r.type = 'X';
  }
  return r;
}

// ReadReply's source over bytes already received (the in-process server's output).
class BytesSource {
 public:
  explicit BytesSource(std::string_view bytes) : rest_(bytes) {}
  bool ReadLine(std::string* line) {
    const size_t eol = rest_.find("\r\n");
    if (eol == std::string_view::npos) return false;
    line->assign(rest_.substr(0, eol));
    rest_.remove_prefix(eol + 2);
    return true;
  }
  bool ReadExact(size_t n, std::string* out) {
    if (rest_.size() < n) return false;
    out->assign(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return true;
  }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

// Parses one reply from the front of *in and removes it; type 'X' when *in ends early.
inline Reply ParseReply(std::string_view* in) {
  BytesSource source(*in);
  Reply r = ReadReply(source);
  *in = source.rest();
  return r;
}

class RespClient {
 public:
  explicit RespClient(int port, int timeout_ms = 5000) : timeout_ms_(timeout_ms) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      fd_ = -1;
    }
    int one = 1;
    if (fd_ >= 0) setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    // A server that stops reading (backpressure from replies nobody reads) must fail a send,
    // not hang the test: sends give up after the same timeout as reads.
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    if (fd_ >= 0) setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  ~RespClient() {
    if (fd_ >= 0) close(fd_);
  }
  RespClient(const RespClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  bool SendRaw(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  static std::string Encode(const std::vector<std::string>& args) {
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    return out;
  }

  Reply Call(const std::vector<std::string>& args) {
    SendRaw(Encode(args));
    return Read();
  }

  // Reads one reply; type 'X' when the peer closed or the timeout passed.
  Reply Read() { return ReadReply(*this); }

  // True when the server closed the connection (EOF or reset) within the timeout; bytes that
  // arrive first are counted in *discarded.
  bool WaitClosed(size_t* discarded = nullptr) {
    while (true) {
      char c;
      int got = RecvSome(&c, 1);
      if (got == 0 || got == -2) return true;
      if (got < 0) return false;
      if (discarded != nullptr) ++*discarded;
    }
  }

 private:
  // 1 byte read, 0 EOF, -1 timeout, -2 error (reset).
  int RecvSome(char* c, size_t n) {
    if (pos_ < buf_.size()) {
      *c = buf_[pos_++];
      return 1;
    }
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms_) <= 0) return -1;
    char tmp[65536];
    ssize_t got = recv(fd_, tmp, sizeof(tmp), 0);
    if (got == 0) return 0;
    if (got < 0) return -2;
    buf_.assign(tmp, static_cast<size_t>(got));
    pos_ = 0;
    *c = buf_[pos_++];
    return 1;
  }

 public:
  // ReadReply's source: one line without its CRLF, and exactly n bytes; false at EOF/timeout.
  bool ReadLine(std::string* line) {
    line->clear();
    char c;
    while (RecvSome(&c, 1) == 1) {
      if (c == '\n' && !line->empty() && line->back() == '\r') {
        line->pop_back();
        return true;
      }
      line->push_back(c);
    }
    return false;
  }
  bool ReadExact(size_t n, std::string* out) {
    out->clear();
    char c;
    while (out->size() < n) {
      if (RecvSome(&c, 1) != 1) return false;
      out->push_back(c);
    }
    return true;
  }

 private:
  int fd_ = -1;
  int timeout_ms_;
  std::string buf_;
  size_t pos_ = 0;
};

// The seed's concurrency test: n clients, each connected first, send `cmd` at the same moment;
// their replies in client order. `connect` returns a std::unique_ptr<RespClient>.
template <class Connect>
std::vector<Reply> CallAtOnce(int n, Connect connect, const std::vector<std::string>& cmd) {
  std::vector<Reply> replies(n);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      std::unique_ptr<RespClient> client = connect();
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();
      replies[i] = client->Call(cmd);
    });
  }
  for (auto& t : threads) t.join();
  return replies;
}

}  // namespace rl::test

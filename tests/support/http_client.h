// Test support: one HTTP/1.1 request to a server on loopback (rl-http-example), read to the end,
// with the status, the headers (names lower-cased) and the body. Header-only, blocking, bounded
// by a 5 s receive timeout.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <string>

namespace rl_test {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// One HTTP/1.1 request with "Connection: close"; reads until the server closes. status 0 = the
// request failed.
inline HttpReply HttpRequest(int port, const std::string& method, const std::string& path,
                             const std::string& api_key = "") {
  HttpReply reply;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return reply;
  }
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!api_key.empty()) request += "X-Api-Key: " + api_key + "\r\n";
  request += "Content-Length: 0\r\nConnection: close\r\n\r\n";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string raw;
  char chunk[4096];
  for (ssize_t n; (n = ::recv(fd, chunk, sizeof(chunk), 0)) > 0;) raw.append(chunk, n);
  ::close(fd);

  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.compare(0, 9, "HTTP/1.1 ") != 0 || head_end == std::string::npos) return reply;
  reply.status = std::atoi(raw.c_str() + 9);
  reply.body = raw.substr(head_end + 4);
  size_t line = raw.find("\r\n") + 2;
  while (line < head_end) {
    const size_t end = raw.find("\r\n", line);
    const size_t colon = raw.find(':', line);
    std::string name = raw.substr(line, colon - line);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    size_t value = colon + 1;
    while (value < end && raw[value] == ' ') ++value;
    reply.headers[name] = raw.substr(value, end - value);
    line = end + 2;
  }
  return reply;
}

}  // namespace rl_test

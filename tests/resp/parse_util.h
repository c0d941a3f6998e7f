// Test helpers for the RESP parser: run a whole byte stream through a Parser the way a
// connection does (append what read() returned, parse until incomplete, drop what was consumed)
// and record everything that came out, so streams split differently can be compared.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "resp/parser.h"

namespace resp::testing {

using Command = std::vector<std::string>;

struct Outcome {
  std::vector<Command> commands;  // every kCommand, empty ones (blank lines, *0) included
  bool failed = false;            // the stream ended in kError
  std::string error;
  std::string leftover;  // bytes never consumed (pending incomplete command, or after an error)

  bool operator==(const Outcome&) const = default;
};

// Feeds `input` in the pieces delimited by the ascending offsets in `cuts`, moving the pending
// bytes to the front of the connection buffer after each command, as a server does.
inline Outcome ParseInPieces(std::string_view input, const std::vector<size_t>& cuts,
                             ParserLimits limits = {}) {
  Parser parser(limits);
  Outcome out;
  std::string conn;
  std::vector<std::string_view> args;
  size_t from = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const size_t to = i < cuts.size() ? std::min(cuts[i], input.size()) : input.size();
    conn.append(input.substr(from, to - from));
    from = to;
    while (!out.failed) {
      size_t consumed = 0;
      const ParseStatus status = parser.Parse(conn, &consumed, &args);
      if (status == ParseStatus::kIncomplete) break;
      if (status == ParseStatus::kError) {
        out.failed = true;
        out.error = parser.error();
        break;
      }
      out.commands.emplace_back(args.begin(), args.end());
      conn.erase(0, consumed);
    }
    if (out.failed) break;
  }
  out.leftover = conn + std::string(input.substr(from));
  return out;
}

inline Outcome ParseWhole(std::string_view input, ParserLimits limits = {}) {
  return ParseInPieces(input, {}, limits);
}

inline Outcome ParseBytewise(std::string_view input, ParserLimits limits = {}) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < input.size(); ++i) cuts.push_back(i);
  return ParseInPieces(input, cuts, limits);
}

// Concatenates pieces with append (GCC 12 warns falsely on `"literal" + std::string`).
template <typename... Pieces>
std::string Cat(const Pieces&... pieces) {
  std::string out;
  (out.append(pieces), ...);
  return out;
}

// "*N\r\n$len\r\narg\r\n..." for the given arguments.
inline std::string Multibulk(const Command& args) {
  std::string out;
  out.append("*").append(std::to_string(args.size())).append("\r\n");
  for (const auto& a : args) {
    out.append("$").append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
  }
  return out;
}

}  // namespace resp::testing

// libFuzzer target for resp::Parser. Besides "never crash, never read out of bounds" it checks
// the parser's contract on every input:
// - the same bytes give the same commands, error and leftover however they are split into reads
//   (one piece, one cut, many random cuts, one byte at a time);
// - kIncomplete consumes nothing, kCommand consumes something, never more than it was given;
// - a parsed multibulk command stays within the limits it was parsed under;
// - every command, written back with resp::Writer as an array of bulks, parses to itself.
// The first input byte chooses the limits (bits 0-2), whether they switch after each command
// (bit 3) and the cut positions; the rest is the stream.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "resp/parser.h"
#include "resp/writer.h"

namespace {

using Command = std::vector<std::string>;

#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

struct Outcome {
  std::vector<Command> commands;
  bool failed = false;
  std::string error;
  std::string leftover;
  bool operator==(const Outcome&) const = default;
};

// Feeds `input` cut at the ascending offsets `cuts`, as a connection would: append what arrived,
// parse until incomplete, drop consumed bytes from the front.
// With `toggle`, the limits switch between `limits` and Unauthenticated() after every command,
// as a server's do around AUTH; they change at command boundaries, so splits still agree.
Outcome Run(std::string_view input, const std::vector<size_t>& cuts,
            const resp::ParserLimits& limits, bool toggle = false) {
  resp::Parser parser(limits);
  Outcome out;
  std::string conn;
  std::vector<std::string_view> args;
  size_t from = 0;
  for (size_t i = 0; i <= cuts.size() && !out.failed; ++i) {
    const size_t to = i < cuts.size() ? cuts[i] : input.size();
    conn.append(input.substr(from, to - from));
    from = to;
    while (true) {
      size_t consumed = 12345;
      const resp::ParseStatus status = parser.Parse(conn, &consumed, &args);
      if (status == resp::ParseStatus::kIncomplete) {
        FUZZ_CHECK(consumed == 0);
        FUZZ_CHECK(args.empty());
        break;
      }
      if (status == resp::ParseStatus::kError) {
        FUZZ_CHECK(consumed == 0);
        FUZZ_CHECK(parser.error().rfind("Protocol error: ", 0) == 0);
        out.failed = true;
        out.error = parser.error();
        break;
      }
      FUZZ_CHECK(consumed > 0 && consumed <= conn.size());
      const resp::ParserLimits& now = parser.limits();
      if (conn[0] == '*') {
        FUZZ_CHECK(args.size() <= now.max_args);
        for (std::string_view a : args) {
          FUZZ_CHECK(a.size() <= now.max_bulk);
          // Multibulk args are always views into the buffer, inside the consumed bytes.
          FUZZ_CHECK(a.data() >= conn.data() && a.data() + a.size() <= conn.data() + consumed);
        }
      } else {
        FUZZ_CHECK(consumed <= now.max_inline + 1);
      }
      out.commands.emplace_back(args.begin(), args.end());
      conn.erase(0, consumed);
      if (toggle) {
        parser.set_limits(out.commands.size() % 2 ? resp::ParserLimits::Unauthenticated() : limits);
      }
    }
  }
  out.leftover = conn;
  out.leftover.append(input.substr(from));
  return out;
}

// A small deterministic generator so a crash reproduces from the input alone.
struct Rng {
  uint64_t state;
  uint64_t Next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  }
};

resp::ParserLimits PickLimits(uint8_t control) {
  switch (control & 3) {
    case 0:
      return resp::ParserLimits{};
    case 1:
      return resp::ParserLimits::Unauthenticated();
    case 2:
      return resp::ParserLimits{16, 4, 8, false};
    default:
      return resp::ParserLimits{64, 16, 64, (control & 4) != 0};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  const resp::ParserLimits limits = PickLimits(control);
  const bool toggle = (control & 8) != 0;

  const Outcome whole = Run(input, {}, limits, toggle);
  FUZZ_CHECK(whole.leftover.size() <= input.size());

  Rng rng{control * 0x9E3779B97F4A7C15ull + input.size()};
  // One cut anywhere.
  FUZZ_CHECK(Run(input, {input.empty() ? 0 : rng.Next() % (input.size() + 1)}, limits, toggle) ==
             whole);
  // Many small reads.
  std::vector<size_t> cuts;
  for (size_t pos = 0; pos < input.size();) {
    pos += 1 + rng.Next() % 16;
    if (pos < input.size()) cuts.push_back(pos);
  }
  FUZZ_CHECK(Run(input, cuts, limits, toggle) == whole);
  // One byte at a time (quadratic in the worst case, so only for short inputs).
  if (input.size() <= 512) {
    cuts.clear();
    for (size_t i = 1; i < input.size(); ++i) cuts.push_back(i);
    FUZZ_CHECK(Run(input, cuts, limits, toggle) == whole);
  }

  // Round trip: the writer's array of bulks is a multibulk command that parses to the same args.
  std::string encoded;
  resp::Writer writer(&encoded);
  size_t non_empty = 0;
  for (const Command& command : whole.commands) {
    if (command.empty()) continue;
    ++non_empty;
    writer.ArrayHeader(command.size());
    for (const std::string& arg : command) writer.Bulk(arg);
  }
  const Outcome again = Run(encoded, {}, resp::ParserLimits{});
  FUZZ_CHECK(!again.failed && again.leftover.empty());
  FUZZ_CHECK(again.commands.size() == non_empty);
  size_t j = 0;
  for (const Command& command : whole.commands) {
    if (!command.empty()) FUZZ_CHECK(again.commands[j++] == command);
  }
  return 0;
}

// libFuzzer target for resp::ReplyParser (what a client reads from an untrusted server). Besides
// "never crash, never read out of bounds" it checks on every input that the same bytes give the
// same replies, error and leftover however they are split into reads, that kIncomplete and kError
// consume nothing, and that a reply never spans more than max_reply bytes. The first input byte
// chooses the limits and the cut positions; the rest is the stream.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "resp/reply_parser.h"

namespace {

#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

// A reply as one line of text, so trees compare with ==.
void Dump(const resp::Value& v, std::string* out) {
  out->push_back(static_cast<char>('A' + static_cast<int>(v.type)));
  out->append(std::to_string(v.integer)).append(":").append(std::to_string(v.text.size()));
  out->append(":").append(v.text).append("[");
  for (const resp::Value& e : v.elements) Dump(e, out);
  out->append("]");
}

struct Outcome {
  std::vector<std::string> replies;
  bool failed = false;
  std::string leftover;
  bool operator==(const Outcome&) const = default;
};

Outcome Run(std::string_view input, const std::vector<size_t>& cuts,
            const resp::ReplyLimits& limits) {
  resp::ReplyParser parser(limits);
  Outcome out;
  std::string conn;
  size_t from = 0;
  for (size_t i = 0; i <= cuts.size() && !out.failed; ++i) {
    const size_t to = i < cuts.size() ? cuts[i] : input.size();
    conn.append(input.substr(from, to - from));
    from = to;
    while (true) {
      resp::Value value;
      size_t consumed = 12345;
      const resp::ReplyStatus status = parser.Parse(conn, &consumed, &value);
      if (status == resp::ReplyStatus::kIncomplete) {
        FUZZ_CHECK(consumed == 0);
        break;
      }
      if (status == resp::ReplyStatus::kError) {
        FUZZ_CHECK(consumed == 0);
        FUZZ_CHECK(!parser.error().empty());
        out.failed = true;
        break;
      }
      FUZZ_CHECK(consumed > 0 && consumed <= conn.size() && consumed <= limits.max_reply);
      std::string dump;
      Dump(value, &dump);
      out.replies.push_back(std::move(dump));
      conn.erase(0, consumed);
    }
  }
  out.leftover = conn;
  out.leftover.append(input.substr(from));
  return out;
}

struct Rng {
  uint64_t state;
  uint64_t Next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  }
};

resp::ReplyLimits PickLimits(uint8_t control) {
  switch (control & 3) {
    case 0:
      return resp::ReplyLimits{};
    case 1:
      return resp::ReplyLimits{16, 16, 4, 2, 128};
    case 2:
      return resp::ReplyLimits{64, 64, 16, 4, 1024};
    default:
      return resp::ReplyLimits{8, 4, 2, 1, 32};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  const resp::ReplyLimits limits = PickLimits(control);
  const Outcome whole = Run(input, {}, limits);
  Rng rng{control * 0x9E3779B97F4A7C15ull + input.size()};
  FUZZ_CHECK(Run(input, {input.empty() ? 0 : rng.Next() % (input.size() + 1)}, limits) == whole);
  std::vector<size_t> cuts;
  for (size_t pos = 0; pos < input.size();) {
    pos += 1 + rng.Next() % 16;
    if (pos < input.size()) cuts.push_back(pos);
  }
  FUZZ_CHECK(Run(input, cuts, limits) == whole);
  if (input.size() <= 512) {
    cuts.clear();
    for (size_t i = 1; i < input.size(); ++i) cuts.push_back(i);
    FUZZ_CHECK(Run(input, cuts, limits) == whole);
  }
  return 0;
}

// Split invariance: every input, valid or not, must give the same commands, the same error and
// the same unconsumed bytes whether it arrives in one read, split at any byte, split at any two
// bytes, or one byte at a time.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parse_util.h"

namespace resp {
namespace {

using testing::Cat;
using testing::Multibulk;
using testing::Outcome;
using testing::ParseBytewise;
using testing::ParseInPieces;
using testing::ParseWhole;

struct Case {
  std::string input;
  ParserLimits limits;
};

std::vector<Case> Cases() {
  const ParserLimits def;
  ParserLimits tiny;
  tiny.max_inline = 8;
  tiny.max_args = 3;
  tiny.max_bulk = 5;
  const ParserLimits unauth = ParserLimits::Unauthenticated();
  return {
      {Multibulk({"PING"}), def},
      {Multibulk({"SET", "k", "v"}) + Multibulk({"GET", "k"}), def},
      {Multibulk({"RL.CHECK", "user:1", "TOKEN_BUCKET", "10", "1s", "COST", "2"}), def},
      {Multibulk({"ECHO", std::string("a\r\nb\0\r", 6), ""}), def},
      {Cat("*0\r\n*-1\r\n", Multibulk({"PING"}), "*-10\r\n"), def},
      {"PING\r\nSET k v\nGET k\r\n", def},
      {"\r\n\n  \r\nPING\r\n", def},
      {"SET \"a \\x41\\n\\\"\" 'it\\'s' x\"y z\"\r\nPING\r\n", def},
      {"\v\fa\vb \t c\r\n", def},
      {Cat("PING\r\n", Multibulk({"ECHO", "x"}), "ECHO \"q\"\r\n", Multibulk({"GET", "k"})), def},
      // Incomplete tails.
      {Cat(Multibulk({"PING"}), "*2\r\n$3\r\nGET\r\n$1"), def},
      {"PING\r\nPIN", def},
      // Errors, alone and after good commands.
      {"*abc\r\n", def},
      {Cat(Multibulk({"PING"}), "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n"), def},
      {"*1\r\n$-10\r\n", def},
      {"*1\r\n$3\r\nabcd\r\n", def},
      {"*1\rX", def},
      {"*1\r\n$1\rX", def},
      {"PING\r\nSET \"abc\r\nPING\r\n", def},
      {"SET 'a'b\r\n", def},
      // Limits, with tiny ones so a short input reaches them.
      {"PING\r\nabcdefgh\r\n", tiny},  // 9 bytes with the CR: too big
      {"PING\r\nabcdefg\r\n", tiny},   // 8: fits
      {"abcdefghij", tiny},
      {"*123456789\r\n", tiny},
      {"*4\r\n", tiny},
      {"*3\r\n$5\r\nhello\r\n$6\r\n", tiny},
      {"*1\r\n$123456789", tiny},
      {"*11\r\n", unauth},
      {"*1\r\n$16385\r\n", unauth},
      {Multibulk({"AUTH", "secret"}), unauth},
      // Lengths at the edges of the one-pass reading of whole commands.
      {Multibulk({"ECHO", ""}), def},
      {"*02\r\n$4\r\nECHO\r\n$1\r\nx\r\n", def},
      {"*2\r\n$04\r\nECHO\r\n$1\r\nx\r\n", def},
      {"*2\r\n$+4\r\nECHO\r\n$1\r\nx\r\n", def},
      {"*1\r\n$99999999999999999999\r\n", def},
      {"*99999999999999999999\r\n$4\r\nPING\r\n", def},
      {"*1\r\n$1234567890123456789\r\n", def},
      {"*1\r\n$4\nPING\r\n", def},
      {"*1\r\n$4\r\nPINGX\n", def},
      {Cat(Multibulk({"SET", "k", "v"}), "*2\r\n$3\r\nGET\r\n$1\r\nk\r"), def},
      {Multibulk({"A", "B", "CDEFG"}), tiny},   // exactly at max_args and max_bulk
      {Multibulk({"A", "B", "CDEFGH"}), tiny},  // one byte over max_bulk
      {Multibulk({"A", "B", "C", "D"}), tiny},  // one over max_args
      // One- and two-digit bulk lengths (read without the general loop when whole) and the
      // lengths around them; malformed ones the fast reading must hand on to the exact errors.
      {Multibulk({"", "a", std::string(9, 'b'), std::string(10, 'c'), std::string(99, 'd'),
                  std::string(100, 'e')}),
       def},
      {"*1\r\n$00\r\n\r\n", def},
      {"*1\r\n$1\r\rx\r\n", def},
      {"*1\r\n$12\r\rabcdefghijkl\r\n", def},
      {"*1\r\n$1a\r\nx\r\n", def},
      {"*1\r\n$:\r\nx\r\n", def},
      {"*1\r\n$/\r\nx\r\n", def},
      {"*2\r\n$5\r\nabcde\r\n$10\r\nabcdefghij\r\n", tiny},
      {"*1\r\n$", def},
      {"*1\r\n$1", def},
      {"*1\r\n$12\r", def},
  };
}

TEST(SplitTest, EverySinglePosition) {
  for (const Case& c : Cases()) {
    const Outcome whole = ParseWhole(c.input, c.limits);
    for (size_t cut = 0; cut <= c.input.size(); ++cut) {
      EXPECT_EQ(ParseInPieces(c.input, {cut}, c.limits), whole)
          << "input " << ::testing::PrintToString(c.input) << " cut at " << cut;
    }
  }
}

TEST(SplitTest, EveryPairOfPositions) {
  for (const Case& c : Cases()) {
    if (c.input.size() > 80) continue;
    const Outcome whole = ParseWhole(c.input, c.limits);
    for (size_t a = 1; a < c.input.size(); ++a) {
      for (size_t b = a; b < c.input.size(); ++b) {
        EXPECT_EQ(ParseInPieces(c.input, {a, b}, c.limits), whole)
            << "input " << ::testing::PrintToString(c.input) << " cut at " << a << "," << b;
      }
    }
  }
}

TEST(SplitTest, OneByteAtATime) {
  for (const Case& c : Cases()) {
    EXPECT_EQ(ParseBytewise(c.input, c.limits), ParseWhole(c.input, c.limits))
        << "input " << ::testing::PrintToString(c.input);
  }
}

TEST(SplitTest, ExpectedOutcomes) {
  // Spot-check that the reference (one-piece) parse is itself right for a few cases.
  const std::vector<Case> cases = Cases();
  EXPECT_EQ(ParseWhole(cases[1].input).commands,
            (std::vector<testing::Command>{{"SET", "k", "v"}, {"GET", "k"}}));
  EXPECT_EQ(ParseWhole(cases[10].input).leftover, "*2\r\n$3\r\nGET\r\n$1");
  const Outcome err = ParseWhole(cases[13].input);
  EXPECT_EQ(err.commands.size(), 1u);
  EXPECT_EQ(err.error, "Protocol error: expected '$', got 'f'");
  const Outcome big = ParseWhole(cases[20].input, cases[20].limits);
  EXPECT_EQ(big.error, "Protocol error: too big inline request");
  EXPECT_FALSE(ParseWhole(cases[21].input, cases[21].limits).failed);
}

TEST(SplitTest, LargePipelineInRandomReads) {
  std::string input;
  for (int i = 0; i < 2000; ++i) {
    input += (i % 3 == 0) ? "PING\r\n"
                          : Multibulk({"RL.CHECK", Cat("k", std::to_string(i)), "GCRA", "5", "1s"});
  }
  const Outcome whole = ParseWhole(input);
  ASSERT_EQ(whole.commands.size(), 2000u);
  uint32_t seed = 12345;
  std::vector<size_t> cuts;
  for (size_t pos = 0; pos < input.size();) {
    seed = seed * 1664525u + 1013904223u;
    pos += 1 + (seed >> 16) % 97;
    cuts.push_back(pos);
  }
  EXPECT_EQ(ParseInPieces(input, cuts), whole);
}

}  // namespace
}  // namespace resp

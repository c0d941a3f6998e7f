// Unit tests for resp::Parser: multibulk and inline commands, Redis's quoting rules, pipelining,
// resumption, limits, and every protocol error with Redis's wording.
#include "resp/parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parse_util.h"

namespace resp {
namespace {

using testing::Command;
using testing::Multibulk;
using testing::Outcome;
using testing::ParseWhole;

// Parses exactly one command out of `input` and expects it to take all of it.
Command ParseOne(std::string_view input, ParserLimits limits = {}) {
  Parser parser(limits);
  size_t consumed = 0;
  std::vector<std::string_view> args;
  EXPECT_EQ(parser.Parse(input, &consumed, &args), ParseStatus::kCommand) << parser.error();
  EXPECT_EQ(consumed, input.size());
  return Command(args.begin(), args.end());
}

// The error text the stream ends with (empty if it did not fail).
std::string ErrorOf(std::string_view input, ParserLimits limits = {}) {
  const Outcome out = ParseWhole(input, limits);
  EXPECT_TRUE(out.failed) << "no error for input of " << input.size() << " bytes";
  return out.error;
}

TEST(ParserMultibulk, SimpleCommand) {
  EXPECT_EQ(ParseOne("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n"),
            (Command{"SET", "k", "value"}));
}

TEST(ParserMultibulk, BinarySafeBulks) {
  const std::string bin("a\r\nb\0c$*\n", 9);
  EXPECT_EQ(ParseOne(Multibulk({"ECHO", bin, ""})), (Command{"ECHO", bin, ""}));
}

TEST(ParserMultibulk, ArgsAreViewsIntoTheBuffer) {
  const std::string input = Multibulk({"RL.CHECK", "user:1", "TOKEN_BUCKET", "10", "1s"});
  Parser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse(input, &consumed, &args), ParseStatus::kCommand);
  ASSERT_EQ(args.size(), 5u);
  for (std::string_view a : args) {
    EXPECT_GE(a.data(), input.data());
    EXPECT_LE(a.data() + a.size(), input.data() + input.size());
  }
}

TEST(ParserMultibulk, ZeroAndNegativeCountsAreEmptyCommands) {
  for (const char* header : {"*0\r\n", "*-1\r\n", "*-10\r\n"}) {
    const Outcome out = ParseWhole(std::string(header) + "*1\r\n$4\r\nPING\r\n");
    EXPECT_FALSE(out.failed) << header;
    EXPECT_EQ(out.commands, (std::vector<Command>{{}, {"PING"}})) << header;
    EXPECT_EQ(out.leftover, "");
  }
}

TEST(ParserMultibulk, Pipelined) {
  const std::string a = Multibulk({"PING"});
  const std::string b = Multibulk({"ECHO", "hi"});
  const std::string c = "GET k\r\n";
  const std::string input = a + b + c + "*2\r\n$3\r\nGE";
  Parser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  std::string_view rest = input;
  ASSERT_EQ(parser.Parse(rest, &consumed, &args), ParseStatus::kCommand);
  EXPECT_EQ(consumed, a.size());
  EXPECT_EQ(args, (std::vector<std::string_view>{"PING"}));
  rest.remove_prefix(consumed);
  ASSERT_EQ(parser.Parse(rest, &consumed, &args), ParseStatus::kCommand);
  EXPECT_EQ(consumed, b.size());
  EXPECT_EQ(args, (std::vector<std::string_view>{"ECHO", "hi"}));
  rest.remove_prefix(consumed);
  ASSERT_EQ(parser.Parse(rest, &consumed, &args), ParseStatus::kCommand);
  EXPECT_EQ(consumed, c.size());
  EXPECT_EQ(args, (std::vector<std::string_view>{"GET", "k"}));
  rest.remove_prefix(consumed);
  EXPECT_EQ(parser.Parse(rest, &consumed, &args), ParseStatus::kIncomplete);
  EXPECT_EQ(consumed, 0u);
  EXPECT_TRUE(args.empty());
}

TEST(ParserMultibulk, ResumesAfterTheBufferMoves) {
  const std::string input = Multibulk({"SET", "key", std::string(1000, 'v')});
  Parser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  for (size_t n = 1; n < input.size(); n += 7) {
    const std::string copy = input.substr(0, n);  // a fresh allocation every time
    ASSERT_EQ(parser.Parse(copy, &consumed, &args), ParseStatus::kIncomplete) << n;
  }
  const std::string full = input;
  ASSERT_EQ(parser.Parse(full, &consumed, &args), ParseStatus::kCommand);
  EXPECT_EQ(consumed, input.size());
  EXPECT_EQ(args[2], std::string(1000, 'v'));
}

TEST(ParserMultibulk, LargeBulkArrivingSlowlyIsNotRescanned) {
  // 8 MiB in 64-byte reads is 131072 calls; re-scanning the pending bytes on each would take
  // minutes, counting them takes milliseconds.
  const std::string big(8 << 20, 'x');
  const std::string input = Multibulk({"SET", "k", big});
  Parser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  std::string conn;
  ParseStatus status = ParseStatus::kIncomplete;
  for (size_t i = 0; i < input.size(); i += 64) {
    conn.append(input, i, 64);
    status = parser.Parse(conn, &consumed, &args);
    if (status != ParseStatus::kIncomplete) break;
  }
  ASSERT_EQ(status, ParseStatus::kCommand);
  EXPECT_EQ(args[2].size(), big.size());
}

TEST(ParserInline, SplitsOnSpacesAndTabs) {
  EXPECT_EQ(ParseOne("SET  k\tv\r\n"), (Command{"SET", "k", "v"}));
  EXPECT_EQ(ParseOne("  PING  \r\n"), (Command{"PING"}));
  EXPECT_EQ(ParseOne("PING\n"), (Command{"PING"}));
  // A lone CR inside the line separates arguments too, as in sdssplitargs.
  EXPECT_EQ(ParseOne("a\rb\r\n"), (Command{"a", "b"}));
  // \v and \f are skipped before an argument but belong to it once it started.
  EXPECT_EQ(ParseOne("\v\fa\vb c\r\n"), (Command{"a\vb", "c"}));
}

TEST(ParserInline, UnquotedArgsAreViewsIntoTheBuffer) {
  const std::string input = "GET key\r\n";
  Parser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse(input, &consumed, &args), ParseStatus::kCommand);
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[1].data(), input.data() + 4);
}

TEST(ParserInline, EmptyLinesAreEmptyCommands) {
  const Outcome out = ParseWhole("\r\n\n   \r\n\t\nPING\r\n");
  EXPECT_FALSE(out.failed);
  EXPECT_EQ(out.commands, (std::vector<Command>{{}, {}, {}, {}, {"PING"}}));
}

TEST(ParserInline, DoubleQuotesAndEscapes) {
  EXPECT_EQ(ParseOne("SET \"a b\" \"\"\r\n"), (Command{"SET", "a b", ""}));
  EXPECT_EQ(ParseOne("ECHO \"\\n\\r\\t\\b\\a\\\\\\\"\"\r\n"), (Command{"ECHO", "\n\r\t\b\a\\\""}));
  EXPECT_EQ(ParseOne("ECHO \"\\x41\\x6a\\x6A\\x00z\"\r\n"),
            (Command{"ECHO", std::string("Ajj\0z", 5)}));
  // Not a valid \xHH: the backslash escapes the 'x'.
  EXPECT_EQ(ParseOne("ECHO \"\\xZ1\"\r\n"), (Command{"ECHO", "xZ1"}));
  EXPECT_EQ(ParseOne("ECHO \"\\q\"\r\n"), (Command{"ECHO", "q"}));
  // A quote in the middle of an argument opens a quoted part of it.
  EXPECT_EQ(ParseOne("SET a\"b c\" v\r\n"), (Command{"SET", "ab c", "v"}));
  EXPECT_EQ(ParseOne("SET \"k\"\tv\r\n"), (Command{"SET", "k", "v"}));
}

TEST(ParserInline, SingleQuotes) {
  EXPECT_EQ(ParseOne("SET 'a \"b' 'it\\'s'\r\n"), (Command{"SET", "a \"b", "it's"}));
  // Only \' is an escape inside single quotes.
  EXPECT_EQ(ParseOne("ECHO 'a\\nb'\r\n"), (Command{"ECHO", "a\\nb"}));
  EXPECT_EQ(ParseOne("ECHO ''\r\n"), (Command{"ECHO", ""}));
}

TEST(ParserInline, QuotedArgsOutliveTheirBytesUntilTheNextParse) {
  std::string input = "SET \"k k\" v\r\n";
  Parser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse(input, &consumed, &args), ParseStatus::kCommand);
  input.assign(input.size(), '#');
  EXPECT_EQ(args, (std::vector<std::string_view>{"SET", "k k", "v"}));
}

TEST(ParserInline, UnbalancedQuotes) {
  const std::string kUnbalanced = "Protocol error: unbalanced quotes in request";
  EXPECT_EQ(ErrorOf("SET \"abc\r\n"), kUnbalanced);
  EXPECT_EQ(ErrorOf("SET 'abc\r\n"), kUnbalanced);
  EXPECT_EQ(ErrorOf("SET \"abc\"def\r\n"), kUnbalanced);  // closing quote must end the arg
  EXPECT_EQ(ErrorOf("SET 'abc'def\r\n"), kUnbalanced);
  EXPECT_EQ(ErrorOf("SET \"abc\\\"\r\n"), kUnbalanced);  // escaped quote does not close
  EXPECT_EQ(ErrorOf("SET \"abc\\\r\n"), kUnbalanced);    // backslash at the end
}

TEST(ParserInline, TooBigInlineRequest) {
  const ParserLimits limits;
  // Exactly max_inline bytes without a newline may still become a command...
  Outcome out = ParseWhole(std::string(limits.max_inline, 'a'));
  EXPECT_FALSE(out.failed);
  EXPECT_EQ(out.leftover.size(), limits.max_inline);
  EXPECT_EQ(ParseWhole(std::string(limits.max_inline, 'a') + "\n").commands.size(), 1u);
  // ...one more cannot.
  EXPECT_EQ(ErrorOf(std::string(limits.max_inline + 1, 'a')),
            "Protocol error: too big inline request");
  EXPECT_EQ(ErrorOf(std::string(limits.max_inline + 1, 'a') + "\r\n"),
            "Protocol error: too big inline request");
}

TEST(ParserErrors, InvalidMultibulkLength) {
  const std::string kInvalid = "Protocol error: invalid multibulk length";
  for (const char* input :
       {"*abc\r\n", "*\r\n", "*+1\r\n", "* 1\r\n", "*1 \r\n", "*01\r\n", "*-0\r\n", "*-\r\n",
        "*3000000000\r\n", "*2147483648\r\n", "*99999999999999999999\r\n", "*1\rX", "*1\n$1\r\n"}) {
    EXPECT_EQ(ErrorOf(input), kInvalid) << input;
  }
  // 2^31-1 is a valid count; the default max_args then refuses it.
  EXPECT_EQ(ErrorOf("*2147483647\r\n"), kInvalid);
  ParserLimits small;
  small.max_args = 2;
  EXPECT_EQ(ErrorOf("*3\r\n", small), kInvalid);
  EXPECT_FALSE(ParseWhole("*2\r\n", small).failed);
}

TEST(ParserErrors, InvalidBulkLength) {
  const std::string kInvalid = "Protocol error: invalid bulk length";
  for (const char* bulk : {"$-1\r\n", "$-10\r\n", "$abc\r\n", "$\r\n", "$+1\r\n", "$ 1\r\n",
                           "$01\r\n", "$99999999999999999999\r\n", "$1\rX"}) {
    EXPECT_EQ(ErrorOf(std::string("*1\r\n") + bulk), kInvalid) << bulk;
  }
  // The data must be followed by CRLF, or the announced length was wrong.
  EXPECT_EQ(ErrorOf("*1\r\n$3\r\nabcd\r\n"), kInvalid);
  EXPECT_EQ(ErrorOf("*1\r\n$3\r\nab\r\n\r\n"), kInvalid);
  ParserLimits small;
  small.max_bulk = 3;
  EXPECT_EQ(ErrorOf("*1\r\n$4\r\n", small), kInvalid);
  EXPECT_FALSE(ParseWhole("*1\r\n$3\r\nabc\r\n", small).failed);
}

TEST(ParserErrors, ExpectedDollar) {
  EXPECT_EQ(ErrorOf("*1\r\nfoo\r\n"), "Protocol error: expected '$', got 'f'");
  EXPECT_EQ(ErrorOf("*2\r\n$1\r\na\r\n:1\r\n"), "Protocol error: expected '$', got ':'");
  EXPECT_EQ(ErrorOf("*1\r\n*1\r\n"), "Protocol error: expected '$', got '*'");
}

TEST(ParserErrors, TooBigCountStrings) {
  const ParserLimits limits;
  EXPECT_EQ(ErrorOf("*" + std::string(limits.max_inline, '1')),
            "Protocol error: too big mbulk count string");
  EXPECT_EQ(ErrorOf("*1\r\n$" + std::string(limits.max_inline, '1')),
            "Protocol error: too big bulk count string");
  // Just under the limit, still waiting for the CR.
  EXPECT_FALSE(ParseWhole("*" + std::string(limits.max_inline - 1, '1')).failed);
}

TEST(ParserErrors, ErrorIsStickyUntilReset) {
  Parser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse("*x\r\n", &consumed, &args), ParseStatus::kError);
  EXPECT_EQ(parser.Parse("PING\r\n", &consumed, &args), ParseStatus::kError);
  EXPECT_EQ(parser.error(), "Protocol error: invalid multibulk length");
  parser.Reset();
  EXPECT_EQ(parser.error(), "");
  ASSERT_EQ(parser.Parse("PING\r\n", &consumed, &args), ParseStatus::kCommand);
  EXPECT_EQ(consumed, 6u);
}

TEST(ParserErrors, ResetForgetsAHalfParsedCommand) {
  Parser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse("*2\r\n$3\r\nGET\r\n", &consumed, &args), ParseStatus::kIncomplete);
  parser.Reset();
  ASSERT_EQ(parser.Parse("PING\r\n", &consumed, &args), ParseStatus::kCommand);
  EXPECT_EQ(args, (std::vector<std::string_view>{"PING"}));
}

TEST(ParserLimitsTest, Unauthenticated) {
  const ParserLimits unauth = ParserLimits::Unauthenticated();
  EXPECT_EQ(unauth.max_args, 10u);
  EXPECT_EQ(unauth.max_bulk, 16u * 1024);
  EXPECT_EQ(ErrorOf("*11\r\n", unauth), "Protocol error: unauthenticated multibulk length");
  EXPECT_EQ(ErrorOf("*1\r\n$16385\r\n", unauth), "Protocol error: unauthenticated bulk length");
  // Malformed numbers keep their own wording.
  EXPECT_EQ(ErrorOf("*x\r\n", unauth), "Protocol error: invalid multibulk length");
  EXPECT_EQ(ErrorOf("*1\r\n$-1\r\n", unauth), "Protocol error: invalid bulk length");
  // At the limits everything passes.
  Command ten(10, "a");
  ten[9] = std::string(16 * 1024, 'b');
  const Outcome out = ParseWhole(Multibulk(ten), unauth);
  EXPECT_FALSE(out.failed) << out.error;
  EXPECT_EQ(out.commands, std::vector<Command>{ten});
  EXPECT_EQ(ErrorOf(std::string(16 * 1024 + 1, 'a'), unauth),
            "Protocol error: too big inline request");
}

TEST(ParserLimitsTest, AuthInAPipelineLiftsTheLimitsForLaterCommands) {
  Command big(20, "x");
  const std::string input = Multibulk({"AUTH", "pw"}) + Multibulk(big);
  Parser parser(ParserLimits::Unauthenticated());
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse(input, &consumed, &args), ParseStatus::kCommand);
  parser.set_limits(ParserLimits{});
  std::string_view rest = std::string_view(input).substr(consumed);
  ASSERT_EQ(parser.Parse(rest, &consumed, &args), ParseStatus::kCommand) << parser.error();
  EXPECT_EQ(args.size(), 20u);
}

TEST(ParserLimitsTest, ManyArguments) {
  Command args(100000, "v");
  args[0] = "MSET";
  const Outcome out = ParseWhole(Multibulk(args));
  ASSERT_EQ(out.commands.size(), 1u);
  EXPECT_EQ(out.commands[0], args);
}

TEST(ParserInline, NulIsAnOrdinaryByte) {
  EXPECT_EQ(ParseOne(std::string("EC\0HO a\r\n", 9)), (Command{std::string("EC\0HO", 5), "a"}));
  EXPECT_EQ(ParseOne(std::string("ECHO \"\0\"\r\n", 10)), (Command{"ECHO", std::string("\0", 1)}));
}

TEST(ParserRobustness, ShrunkBufferStartsOver) {
  // Handing back fewer bytes than before breaks the contract; the parser must not read past
  // the end, and starts the command over.
  Parser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse("*2\r\n$3\r\nGET\r\n$5\r\nab", &consumed, &args),
            ParseStatus::kIncomplete);
  ASSERT_EQ(parser.Parse("PING\r\n", &consumed, &args), ParseStatus::kCommand);
  EXPECT_EQ(args, (std::vector<std::string_view>{"PING"}));
}

TEST(ParserRobustness, LimitsLoweredWhileALineIsPending) {
  Parser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  const std::string line(100, 'a');
  ASSERT_EQ(parser.Parse(line, &consumed, &args), ParseStatus::kIncomplete);
  ParserLimits small;
  small.max_inline = 10;
  parser.set_limits(small);
  EXPECT_EQ(parser.Parse(line + "\r\n", &consumed, &args), ParseStatus::kError);
  EXPECT_EQ(parser.error(), "Protocol error: too big inline request");
}

}  // namespace
}  // namespace resp

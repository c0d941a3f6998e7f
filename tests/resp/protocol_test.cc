// Redis's tests/unit/protocol.tcl (and the unauthenticated-limit test from auth.tcl), redone
// against the parser and writer directly: the same bytes in, the same outcome or error text out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parse_util.h"
#include "resp/parser.h"
#include "resp/writer.h"

namespace resp {
namespace {

using testing::Command;
using testing::Multibulk;
using testing::Outcome;
using testing::ParseInPieces;
using testing::ParseWhole;

const std::string kPing = Multibulk({"PING"});

TEST(RedisProtocol, HandleAnEmptyQuery) {
  const Outcome out = ParseWhole("\r\n" + kPing);
  EXPECT_FALSE(out.failed);
  EXPECT_EQ(out.commands, (std::vector<Command>{{}, {"PING"}}));
}

TEST(RedisProtocol, NegativeMultibulkLength) {
  const Outcome out = ParseWhole("*-10\r\n" + kPing);
  EXPECT_FALSE(out.failed);
  EXPECT_EQ(out.commands, (std::vector<Command>{{}, {"PING"}}));
}

TEST(RedisProtocol, OutOfRangeMultibulkLength) {
  EXPECT_EQ(ParseWhole("*3000000000\r\n").error, "Protocol error: invalid multibulk length");
  EXPECT_EQ(ParseWhole("*20000000\r\n").error, "Protocol error: invalid multibulk length");
}

TEST(RedisProtocol, WrongMultibulkPayloadHeader) {
  EXPECT_EQ(ParseWhole("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n").error,
            "Protocol error: expected '$', got 'f'");
}

TEST(RedisProtocol, NegativeMultibulkPayloadLength) {
  EXPECT_EQ(ParseWhole("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n").error,
            "Protocol error: invalid bulk length");
}

TEST(RedisProtocol, OutOfRangeMultibulkPayloadLength) {
  EXPECT_EQ(ParseWhole("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n").error,
            "Protocol error: invalid bulk length");
}

TEST(RedisProtocol, NonNumberMultibulkPayloadLength) {
  EXPECT_EQ(ParseWhole("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n").error,
            "Protocol error: invalid bulk length");
}

TEST(RedisProtocol, MultiBulkRequestNotFollowedByBulkArguments) {
  EXPECT_EQ(ParseWhole("*1\r\nfoo\r\n").error, "Protocol error: expected '$', got 'f'");
}

TEST(RedisProtocol, UnbalancedNumberOfQuotes) {
  const Outcome out = ParseWhole("set \"\"\"test-key\"\"\" test-value\r\nping\r\n");
  EXPECT_TRUE(out.commands.empty());
  EXPECT_EQ(out.error, "Protocol error: unbalanced quotes in request");
}

// The desync tests write a prefix and then the word "payload" over and over in 1 KiB writes,
// never a line end; the server must give up with a protocol error instead of buffering forever.
TEST(RedisProtocol, ProtocolDesyncRegression) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string("\0", 1), "Protocol error: too big inline request"},
      {std::string("*\0", 2), "Protocol error: too big mbulk count string"},
      {std::string("$\0", 2), "Protocol error: too big inline request"},
  };
  for (const auto& [prefix, expected] : cases) {
    std::string input = prefix;
    while (input.size() < 200 * 1024) input += "payload";
    std::vector<size_t> cuts;
    for (size_t pos = prefix.size(); pos < input.size(); pos += 1024) cuts.push_back(pos);
    const Outcome out = ParseInPieces(input, cuts);
    EXPECT_TRUE(out.failed);
    EXPECT_EQ(out.error, expected);
  }
}

TEST(RedisProtocol, PipelinedBlockingCommands) {
  const std::string proto = "*3\r\n$5\r\nBLPOP\r\n$6\r\nnolist\r\n$1\r\n0\r\n";
  const Outcome out = ParseWhole(proto + proto);
  EXPECT_EQ(out.commands, (std::vector<Command>(2, Command{"BLPOP", "nolist", "0"})));
  EXPECT_EQ(out.leftover, "");
}

TEST(RedisProtocol, LargeNumberOfArgs) {
  Command args = {"mset"};
  for (int i = 0; i < 10000; ++i) {
    args.push_back("k");
    args.push_back("v");
  }
  args.push_back("{k}2");
  args.push_back("v2");
  const Outcome out = ParseWhole(Multibulk(args));
  ASSERT_EQ(out.commands.size(), 1u);
  EXPECT_EQ(out.commands[0], args);
}

TEST(RedisAuth, UnauthenticatedClientsHaveLimitedMultibulkAndBulkLength) {
  const ParserLimits unauth = ParserLimits::Unauthenticated();
  EXPECT_EQ(ParseWhole("*100\r\n", unauth).error,
            "Protocol error: unauthenticated multibulk length");
  EXPECT_EQ(ParseWhole("*1\r\n$100000000\r\n", unauth).error,
            "Protocol error: unauthenticated bulk length");
}

// The reply side of protocol.tcl: what DEBUG PROTOCOL and a missing key send in each protocol.
TEST(RedisProtocolReplies, RawNullArray) {
  std::string out2, out3;
  Writer(&out2, 2).NullArray();
  Writer(&out3, 3).NullArray();
  EXPECT_EQ(out2, "*-1\r\n");
  EXPECT_EQ(out3, "_\r\n");
}

TEST(RedisProtocolReplies, BigNumber) {
  std::string out2, out3;
  Writer(&out2, 2).BigNumber("1234567999999999999999999999999999999");
  Writer(&out3, 3).BigNumber("1234567999999999999999999999999999999");
  EXPECT_EQ(out3, "(1234567999999999999999999999999999999\r\n");
  EXPECT_EQ(out2, "$37\r\n1234567999999999999999999999999999999\r\n");
}

TEST(RedisProtocolReplies, Booleans) {
  std::string out2, out3;
  Writer w2(&out2, 2), w3(&out3, 3);
  w2.Boolean(true);
  w2.Boolean(false);
  w3.Boolean(true);
  w3.Boolean(false);
  EXPECT_EQ(out2, ":1\r\n:0\r\n");
  EXPECT_EQ(out3, "#t\r\n#f\r\n");
}

TEST(RedisProtocolReplies, Verbatim) {
  std::string out2, out3;
  Writer(&out2, 2).Verbatim("txt", "This is a verbatim\nstring");
  Writer(&out3, 3).Verbatim("txt", "This is a verbatim\nstring");
  EXPECT_EQ(out3, "=29\r\ntxt:This is a verbatim\nstring\r\n");
  EXPECT_EQ(out2, "$25\r\nThis is a verbatim\nstring\r\n");
}

}  // namespace
}  // namespace resp

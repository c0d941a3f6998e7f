// RESP reply reader: every reply type, replies split at every byte (the reader must say
// "incomplete" and never misread a prefix), pipelined replies back to back, and bounded input.
#include "reply_reader.h"

#include <string>

#include "gtest/gtest.h"

namespace rl::client_internal {
namespace {

TEST(ReplyReaderTest, ReadsCheckReplySplitAtEveryByte) {
  const std::string reply = "*5\r\n:1\r\n:5\r\n:4\r\n:0\r\n:12000\r\n";
  for (size_t cut = 0; cut < reply.size(); ++cut) {
    ReplyReader reader;
    RespValue value;
    size_t consumed = 99;
    EXPECT_EQ(reader.Read(std::string_view(reply).substr(0, cut), &consumed, &value),
              ReadStatus::kIncomplete)
        << "cut at " << cut;
    EXPECT_EQ(consumed, 0u);
  }
  ReplyReader reader;
  RespValue value;
  size_t consumed = 0;
  ASSERT_EQ(reader.Read(reply, &consumed, &value), ReadStatus::kValue);
  EXPECT_EQ(consumed, reply.size());
  ASSERT_EQ(value.type, RespValue::Type::kArray);
  ASSERT_EQ(value.elements.size(), 5u);
  EXPECT_EQ(value.elements[4].integer, 12000);
}

TEST(ReplyReaderTest, ReadsEveryType) {
  const std::string replies =
      "+PONG\r\n-ERR unknown policy\r\n:-1\r\n$5\r\nhe\r\nl\r\n$-1\r\n*-1\r\n_\r\n#t\r\n"
      ",1.5\r\n%1\r\n$1\r\nk\r\n:2\r\n*2\r\n*1\r\n:1\r\n$0\r\n\r\n";
  ReplyReader reader;
  std::string_view rest = replies;
  std::vector<RespValue> values;
  while (!rest.empty()) {
    RespValue value;
    size_t consumed = 0;
    ASSERT_EQ(reader.Read(rest, &consumed, &value), ReadStatus::kValue) << reader.error();
    values.push_back(value);
    rest.remove_prefix(consumed);
  }
  ASSERT_EQ(values.size(), 11u);
  EXPECT_EQ(values[0].text, "PONG");
  EXPECT_EQ(values[1].type, RespValue::Type::kError);
  EXPECT_EQ(values[1].text, "ERR unknown policy");
  EXPECT_EQ(values[2].integer, -1);
  EXPECT_EQ(values[3].text, "he\r\nl");  // bulk strings are binary-safe
  EXPECT_EQ(values[4].type, RespValue::Type::kNull);
  EXPECT_EQ(values[5].type, RespValue::Type::kNull);
  EXPECT_EQ(values[6].type, RespValue::Type::kNull);
  EXPECT_EQ(values[7].integer, 1);
  EXPECT_EQ(values[8].text, "1.5");
  ASSERT_EQ(values[9].elements.size(), 2u);  // a RESP3 map reads as its flat pairs
  EXPECT_EQ(values[9].elements[1].integer, 2);
  ASSERT_EQ(values[10].elements.size(), 2u);
  EXPECT_EQ(values[10].elements[1].text, "");
}

TEST(ReplyReaderTest, RejectsMalformedAndOversizedReplies) {
  const char* bad[] = {"?x\r\n",         ":12a\r\n", ":\r\n",  "$-2\r\n",
                       "$3\r\nabcd\r\n", "*-5\r\n",  "#x\r\n", "$99999999999\r\n"};
  for (const char* input : bad) {
    ReplyReader reader;
    RespValue value;
    size_t consumed = 0;
    EXPECT_EQ(reader.Read(input, &consumed, &value), ReadStatus::kError) << input;
    EXPECT_FALSE(reader.error().empty());
  }
  ReplyReader reader(ReplyLimits{16, 4, 2, 64});
  RespValue value;
  size_t consumed = 0;
  EXPECT_EQ(reader.Read("*5\r\n", &consumed, &value), ReadStatus::kError);  // elements
  EXPECT_EQ(reader.Read("*1\r\n*1\r\n*1\r\n:1\r\n", &consumed, &value),     // depth
            ReadStatus::kError);
  const std::string long_line = std::string(1, '+').append(100, 'a');
  EXPECT_EQ(reader.Read(long_line, &consumed, &value), ReadStatus::kError);  // line
}

}  // namespace
}  // namespace rl::client_internal

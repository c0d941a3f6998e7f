// resp::ReplyParser: every RESP2/RESP3 reply type, replies split at every byte (the parser must say
// "incomplete", consume nothing, and resume to the same value), pipelined replies back to back,
// bounded input, and random and mutated streams that must never crash and must parse the same
// however they are split.
#include "resp/reply_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "resp/writer.h"

namespace resp {
namespace {

// A value as one line of text, so whole trees compare with ==.
std::string Dump(const Value& v) {
  std::string out = std::to_string(static_cast<int>(v.type)) + "(";
  out += std::to_string(v.integer) + "," + v.text;
  for (const Value& e : v.elements) out += Dump(e);
  return out + ")";
}

struct Outcome {
  std::vector<std::string> values;  // Dump of each reply, in order
  bool failed = false;
  std::string leftover;
  bool operator==(const Outcome&) const = default;
};

// Feeds `input` in the pieces delimited by the ascending `cuts`, as a connection does: append what
// arrived, parse until incomplete, drop what was consumed.
Outcome ParseInPieces(std::string_view input, const std::vector<size_t>& cuts,
                      ReplyLimits limits = {}) {
  ReplyParser parser(limits);
  Outcome out;
  std::string conn;
  size_t from = 0;
  for (size_t i = 0; i <= cuts.size() && !out.failed; ++i) {
    const size_t to = i < cuts.size() ? std::min(cuts[i], input.size()) : input.size();
    conn.append(input.substr(from, to - from));
    from = to;
    while (true) {
      Value value;
      size_t consumed = 99;
      const ReplyStatus status = parser.Parse(conn, &consumed, &value);
      if (status == ReplyStatus::kIncomplete) {
        EXPECT_EQ(consumed, 0u);
        break;
      }
      if (status == ReplyStatus::kError) {
        EXPECT_EQ(consumed, 0u);
        EXPECT_FALSE(parser.error().empty());
        out.failed = true;
        break;
      }
      EXPECT_GT(consumed, 0u);
      EXPECT_LE(consumed, conn.size());
      out.values.push_back(Dump(value));
      conn.erase(0, consumed);
    }
  }
  out.leftover = conn + std::string(input.substr(from));
  return out;
}

Outcome ParseWhole(std::string_view input, ReplyLimits limits = {}) {
  return ParseInPieces(input, {}, limits);
}

Outcome ParseBytewise(std::string_view input, ReplyLimits limits = {}) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < input.size(); ++i) cuts.push_back(i);
  return ParseInPieces(input, cuts, limits);
}

std::vector<Value> ParseAll(std::string_view input) {
  ReplyParser parser;
  std::vector<Value> values;
  while (!input.empty()) {
    Value value;
    size_t consumed = 0;
    if (parser.Parse(input, &consumed, &value) != ReplyStatus::kValue) {
      ADD_FAILURE() << parser.error() << " at " << input;
      break;
    }
    values.push_back(std::move(value));
    input.remove_prefix(consumed);
  }
  return values;
}

TEST(ReplyParserTest, CheckReplySplitAtEveryByte) {
  const std::string reply = "*5\r\n:1\r\n:5\r\n:4\r\n:0\r\n:12000\r\n";
  for (size_t cut = 0; cut < reply.size(); ++cut) {
    ReplyParser fresh;
    Value value;
    size_t consumed = 99;
    EXPECT_EQ(fresh.Parse(std::string_view(reply).substr(0, cut), &consumed, &value),
              ReplyStatus::kIncomplete)
        << "cut at " << cut;
    EXPECT_EQ(consumed, 0u);
  }
  const std::vector<Value> values = ParseAll(reply);
  ASSERT_EQ(values.size(), 1u);
  ASSERT_EQ(values[0].type, Value::Type::kArray);
  ASSERT_EQ(values[0].elements.size(), 5u);
  EXPECT_EQ(values[0].elements[4].integer, 12000);
  EXPECT_EQ(ParseBytewise(reply), ParseWhole(reply));
}

TEST(ReplyParserTest, Resp3CheckReplyIsAMapWithNamedFields) {
  const std::string reply =
      "%6\r\n$7\r\nallowed\r\n:1\r\n$5\r\nlimit\r\n:2\r\n$9\r\nremaining\r\n:0\r\n"
      "$14\r\nretry_after_ms\r\n:0\r\n$14\r\nreset_after_ms\r\n:60000\r\n"
      "$13\r\nshadow_denied\r\n:1\r\n";
  const std::vector<Value> values = ParseAll(reply);
  ASSERT_EQ(values.size(), 1u);
  const Value& map = values[0];
  EXPECT_EQ(map.type, Value::Type::kMap);
  ASSERT_EQ(map.elements.size(), 12u);
  ASSERT_NE(map.Find("shadow_denied"), nullptr);
  EXPECT_EQ(map.Find("shadow_denied")->integer, 1);
  EXPECT_EQ(map.Find("reset_after_ms")->integer, 60000);
  EXPECT_EQ(map.Find("headers"), nullptr);
  EXPECT_EQ(map.elements[1].Find("x"), nullptr);  // not a map
  EXPECT_EQ(ParseBytewise(reply), ParseWhole(reply));
}

TEST(ReplyParserTest, ReadsEveryType) {
  const std::string replies =
      "+PONG\r\n-ERR unknown policy\r\n:-1\r\n$5\r\nhe\r\nl\r\n$-1\r\n*-1\r\n_\r\n#t\r\n"
      ",1.5\r\n%1\r\n$1\r\nk\r\n:2\r\n*2\r\n*1\r\n:1\r\n$0\r\n\r\n"
      "!9\r\nERR x\r\nyz\r\n=8\r\ntxt:abcd\r\n(-12345678901234567890\r\n~2\r\n+a\r\n#f\r\n"
      ">2\r\n+message\r\n:7\r\n|1\r\n+ttl\r\n:3\r\n:42\r\n*2\r\n|0\r\n:1\r\n|1\r\n:0\r\n:0\r\n:"
      "2\r\n"
      "*0\r\n%0\r\n";
  const std::vector<Value> v = ParseAll(replies);
  ASSERT_EQ(v.size(), 20u);
  EXPECT_EQ(v[0].type, Value::Type::kSimpleString);
  EXPECT_EQ(v[0].text, "PONG");
  EXPECT_EQ(v[1].type, Value::Type::kError);
  EXPECT_EQ(v[1].text, "ERR unknown policy");
  EXPECT_EQ(v[2].integer, -1);
  EXPECT_EQ(v[3].text, "he\r\nl");  // bulk strings are binary-safe
  EXPECT_EQ(v[4].type, Value::Type::kNull);
  EXPECT_EQ(v[5].type, Value::Type::kNull);
  EXPECT_EQ(v[6].type, Value::Type::kNull);
  EXPECT_EQ(v[7].type, Value::Type::kBoolean);
  EXPECT_EQ(v[7].integer, 1);
  EXPECT_EQ(v[8].type, Value::Type::kDouble);
  EXPECT_EQ(v[8].text, "1.5");
  EXPECT_EQ(v[9].type, Value::Type::kMap);
  ASSERT_EQ(v[9].elements.size(), 2u);
  EXPECT_EQ(v[9].Find("k")->integer, 2);
  ASSERT_EQ(v[10].elements.size(), 2u);
  EXPECT_EQ(v[10].elements[0].elements[0].integer, 1);
  EXPECT_EQ(v[10].elements[1].text, "");
  EXPECT_EQ(v[11].type, Value::Type::kError);  // blob error
  EXPECT_EQ(v[11].text, "ERR x\r\nyz");
  EXPECT_EQ(v[12].type, Value::Type::kVerbatim);
  EXPECT_EQ(v[12].text, "abcd");
  EXPECT_EQ(v[13].type, Value::Type::kBigNumber);
  EXPECT_EQ(v[13].text, "-12345678901234567890");
  EXPECT_EQ(v[14].type, Value::Type::kSet);
  EXPECT_EQ(v[14].elements[1].integer, 0);
  EXPECT_EQ(v[15].type, Value::Type::kPush);
  EXPECT_EQ(v[15].elements[0].text, "message");
  // An attribute is read and dropped: the reply is the value after it, at any level.
  EXPECT_EQ(v[16].type, Value::Type::kInteger);
  EXPECT_EQ(v[16].integer, 42);
  ASSERT_EQ(v[17].elements.size(), 2u);
  EXPECT_EQ(v[17].elements[0].integer, 1);
  EXPECT_EQ(v[17].elements[1].integer, 2);
  EXPECT_EQ(v[18].type, Value::Type::kArray);
  EXPECT_TRUE(v[18].elements.empty());
  EXPECT_EQ(v[19].type, Value::Type::kMap);
  EXPECT_EQ(ParseBytewise(replies), ParseWhole(replies));
}

TEST(ReplyParserTest, ResumesWithoutReparsingAndLeavesTheNextReplyAlone) {
  // A pipelined pair arriving in three reads: the first reply's elements are kept between reads.
  ReplyParser parser;
  std::string conn = "*3\r\n:1\r\n";
  Value value;
  size_t consumed = 0;
  EXPECT_EQ(parser.Parse(conn, &consumed, &value), ReplyStatus::kIncomplete);
  conn += ":2\r\n$3\r\nab";
  EXPECT_EQ(parser.Parse(conn, &consumed, &value), ReplyStatus::kIncomplete);
  conn += "c\r\n+OK\r\n";
  ASSERT_EQ(parser.Parse(conn, &consumed, &value), ReplyStatus::kValue);
  EXPECT_EQ(consumed, conn.size() - 5);
  ASSERT_EQ(value.elements.size(), 3u);
  EXPECT_EQ(value.elements[2].text, "abc");
  conn.erase(0, consumed);
  ASSERT_EQ(parser.Parse(conn, &consumed, &value), ReplyStatus::kValue);
  EXPECT_EQ(value.text, "OK");
  EXPECT_EQ(consumed, 5u);
}

TEST(ReplyParserTest, RejectsMalformedReplies) {
  const char* bad[] = {"?x\r\n",        ":12a\r\n",        ":\r\n",       ":+5\r\n",
                       "$-2\r\n",       "$3\r\nabcd\r\n",  "*-5\r\n",     "#x\r\n",
                       "_x\r\n",        ",\r\n",           "(12a\r\n",    "!-1\r\n",
                       "=3\r\ntxt\r\n", "=5\r\ntxt-a\r\n", "$?\r\n",      "*?\r\n",
                       ">-1\r\n",       "|-1\r\n",         "*1\r\n?\r\n", "%1\r\n:1\r\n:x\r\n"};
  for (const char* input : bad) {
    ReplyParser parser;
    Value value;
    size_t consumed = 0;
    EXPECT_EQ(parser.Parse(input, &consumed, &value), ReplyStatus::kError) << input;
    EXPECT_FALSE(parser.error().empty());
    // Sticky until Reset.
    EXPECT_EQ(parser.Parse("+OK\r\n", &consumed, &value), ReplyStatus::kError);
    parser.Reset();
    EXPECT_EQ(parser.Parse("+OK\r\n", &consumed, &value), ReplyStatus::kValue);
  }
}

TEST(ReplyParserTest, EnforcesItsLimitsBeforeTheBytesArrive) {
  const ReplyLimits small{
      .max_line = 64, .max_bulk = 16, .max_elements = 4, .max_depth = 2, .max_reply = 256};
  auto status = [&](std::string_view input) {
    ReplyParser parser(small);
    Value value;
    size_t consumed = 0;
    return parser.Parse(input, &consumed, &value);
  };
  EXPECT_EQ(status("*5\r\n"), ReplyStatus::kError);  // elements
  EXPECT_EQ(status("%3\r\n"), ReplyStatus::kError);  // a map's pairs count twice
  EXPECT_EQ(status("*4\r\n"), ReplyStatus::kIncomplete);
  EXPECT_EQ(status("*1\r\n*1\r\n*1\r\n:1\r\n"), ReplyStatus::kError);  // depth
  EXPECT_EQ(status("*1\r\n*1\r\n:1\r\n"), ReplyStatus::kValue);
  EXPECT_EQ(status("$17\r\n"), ReplyStatus::kError);  // bulk, announced only
  EXPECT_EQ(status("$16\r\n"), ReplyStatus::kIncomplete);
  EXPECT_EQ(status("$99999999999999999999\r\n"), ReplyStatus::kError);
  const std::string line64 = std::string(1, '+').append(64, 'a');
  EXPECT_EQ(status(line64 + "a"), ReplyStatus::kError);  // line, no CRLF yet
  EXPECT_EQ(status(line64 + "\r"), ReplyStatus::kIncomplete);
  EXPECT_EQ(status(line64 + "\r\n"), ReplyStatus::kValue);
  // A reply spread over more bytes than max_reply, even in small pieces.
  std::string wide = "*4\r\n";
  for (int i = 0; i < 4; ++i) {
    wide += "*4\r\n";
    for (int j = 0; j < 4; ++j) wide.append("$16\r\n").append(16, 'x').append("\r\n");
  }
  EXPECT_EQ(status(wide), ReplyStatus::kError);
  EXPECT_TRUE(ParseBytewise(wide, small).failed);
}

// Deterministic random replies: written with resp::Writer (both protocols), then parsed whole,
// byte by byte and at random cuts, which must all agree and reproduce what was written.
void WriteRandom(std::mt19937& rng, Writer& w, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 3 ? 9 : 13));
  switch (kind) {
    case 0:
      w.SimpleString(std::string("s").append(std::to_string(rng() % 1000)));
      break;
    case 1:
      w.Error(std::string("ERR e").append(std::to_string(rng() % 1000)));
      break;
    case 2:
      w.Integer(static_cast<int64_t>(rng()) - (1LL << 31));
      break;
    case 3: {
      std::string bulk(rng() % 40, '\0');
      for (char& c : bulk) c = static_cast<char>(rng());
      w.Bulk(bulk);
      break;
    }
    case 4:
      w.Null();
      break;
    case 5:
      w.Boolean(rng() % 2 == 0);
      break;
    case 6:
      w.Double(static_cast<double>(rng() % 10000) / 8);
      break;
    case 7:
      w.BigNumber("123456789012345678901234567890");
      break;
    case 8:
      w.Verbatim("txt", "some text");
      break;
    default: {
      const size_t n = rng() % 4;
      if (kind == 9) w.ArrayHeader(n);
      if (kind == 10) w.MapHeader(n);
      if (kind == 11) w.SetHeader(n);
      if (kind == 12) w.PushHeader(n);
      for (size_t i = 0; i < (kind == 10 ? 2 * n : n); ++i) WriteRandom(rng, w, depth + 1);
    }
  }
}

TEST(ReplyParserTest, RandomRepliesParseTheSameHoweverSplit) {
  std::mt19937 rng(20261201);
  for (int round = 0; round < 300; ++round) {
    std::string stream;
    Writer w(&stream, round % 2 == 0 ? 3 : 2);
    const int replies = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < replies; ++i) WriteRandom(rng, w, 0);
    const Outcome whole = ParseWhole(stream);
    ASSERT_FALSE(whole.failed) << stream;
    ASSERT_EQ(whole.values.size(), static_cast<size_t>(replies));
    EXPECT_TRUE(whole.leftover.empty());
    ASSERT_EQ(ParseBytewise(stream), whole) << stream;
    std::vector<size_t> cuts;
    for (size_t at = 0; at < stream.size(); at += 1 + rng() % 7) cuts.push_back(at);
    ASSERT_EQ(ParseInPieces(stream, cuts), whole) << stream;
  }
}

TEST(ReplyParserTest, MutatedAndRandomBytesNeverCrash) {
  std::mt19937 rng(7);
  const ReplyLimits tight{
      .max_line = 32, .max_bulk = 32, .max_elements = 8, .max_depth = 3, .max_reply = 512};
  for (int round = 0; round < 2000; ++round) {
    std::string stream;
    Writer w(&stream, 3);
    for (int i = 0; i < 3; ++i) WriteRandom(rng, w, 0);
    // Flip, insert or drop a few bytes; every fourth round is pure noise from the type alphabet.
    if (round % 4 == 3) {
      const char alphabet[] = "+-:$*%~>|_#,(!=?0123456789-\r\nabc";
      stream.assign(rng() % 64, ' ');
      for (char& c : stream) c = alphabet[rng() % (sizeof(alphabet) - 1)];
    } else {
      for (int m = 0; m < 3 && !stream.empty(); ++m) {
        const size_t at = rng() % stream.size();
        switch (rng() % 3) {
          case 0:
            stream[at] = static_cast<char>(rng());
            break;
          case 1:
            stream.insert(at, 1, "\r\n$*%:-1?"[rng() % 9]);
            break;
          default:
            stream.erase(at, 1);
        }
      }
    }
    for (const ReplyLimits& limits : {ReplyLimits{}, tight}) {
      const Outcome whole = ParseWhole(stream, limits);
      ASSERT_EQ(ParseBytewise(stream, limits), whole) << stream;
    }
  }
}

}  // namespace
}  // namespace resp

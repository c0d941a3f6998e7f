// Unit tests for resp::Writer: the exact bytes of every RESP2 and RESP3 type, and the RESP2
// downgrades Redis applies to RESP3-only types.
#include "resp/writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace resp {
namespace {

class WriterTest : public ::testing::TestWithParam<int> {
 protected:
  std::string Write(void (*fn)(Writer&)) {
    std::string out;
    Writer w(&out, GetParam());
    fn(w);
    return out;
  }
  bool resp3() const { return GetParam() == 3; }
};

INSTANTIATE_TEST_SUITE_P(Protocols, WriterTest, ::testing::Values(2, 3),
                         [](const auto& info) { return "RESP" + std::to_string(info.param); });

TEST_P(WriterTest, SimpleString) {
  EXPECT_EQ(Write([](Writer& w) { w.SimpleString("OK"); }), "+OK\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.SimpleString("a\r\nb"); }), "+a  b\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.SimpleString(""); }), "+\r\n");
}

TEST_P(WriterTest, Error) {
  EXPECT_EQ(Write([](Writer& w) { w.Error("ERR Protocol error: invalid bulk length"); }),
            "-ERR Protocol error: invalid bulk length\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Error("NOAUTH x\ny"); }), "-NOAUTH x y\r\n");
}

TEST_P(WriterTest, Integer) {
  EXPECT_EQ(Write([](Writer& w) { w.Integer(0); }), ":0\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Integer(-1); }), ":-1\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Integer(std::numeric_limits<int64_t>::max()); }),
            ":9223372036854775807\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Integer(std::numeric_limits<int64_t>::min()); }),
            ":-9223372036854775808\r\n");
}

// Every length of decimal, around each power of ten and both signs: small values take a
// table path, larger ones std::to_chars; both must give the same text as std::to_string.
TEST_P(WriterTest, IntegerAtEveryDigitCount) {
  std::vector<int64_t> values = {0, std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::min()};
  for (int64_t p = 1; p <= std::numeric_limits<int64_t>::max() / 10; p *= 10) {
    for (int64_t v : {p - 1, p, p + 1, 10 * p - 1}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  for (int64_t v : values) {
    std::string out;
    Writer w(&out, GetParam());
    w.Integer(v);
    EXPECT_EQ(out, ":" + std::to_string(v) + "\r\n");
    out.clear();
    const int64_t five[] = {v, -v, v / 7, 1, v};
    w.IntegerArray(five);
    std::string expected = "*5\r\n";
    for (int64_t x : five) expected += ":" + std::to_string(x) + "\r\n";
    EXPECT_EQ(out, expected);
  }
}

TEST_P(WriterTest, IntegerArrayIsArrayHeaderAndIntegers) {
  EXPECT_EQ(Write([](Writer& w) {
              const int64_t v[] = {1, 100, 99, 0, 600};
              w.IntegerArray(v);
            }),
            "*5\r\n:1\r\n:100\r\n:99\r\n:0\r\n:600\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.IntegerArray({}); }), "*0\r\n");
  // Extremes, and more values than fit the stack buffer at once.
  auto both = [](Writer& w, std::span<const int64_t> v) {
    w.IntegerArray(v);
    w.ArrayHeader(v.size());
    for (int64_t x : v) w.Integer(x);
  };
  std::string out;
  Writer w(&out, GetParam());
  const int64_t extremes[] = {std::numeric_limits<int64_t>::min(), -1,
                              std::numeric_limits<int64_t>::max()};
  both(w, extremes);
  EXPECT_EQ(out.substr(0, out.size() / 2), out.substr(out.size() / 2));
  out.clear();
  const int64_t many[] = {std::numeric_limits<int64_t>::min(), 1, 2, 3, 4, 5, 6, 7, 8, 9,
                          std::numeric_limits<int64_t>::max()};
  both(w, many);
  EXPECT_EQ(out.substr(0, out.size() / 2), out.substr(out.size() / 2));
  out.clear();
  const int64_t eight[] = {
      std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min(),
      std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min(),
      std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min(),
      std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min()};
  both(w, eight);
  EXPECT_EQ(out.substr(0, out.size() / 2), out.substr(out.size() / 2));
}

TEST_P(WriterTest, Bulk) {
  EXPECT_EQ(Write([](Writer& w) { w.Bulk("hello"); }), "$5\r\nhello\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Bulk(""); }), "$0\r\n\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Bulk(std::string_view("a\r\n\0", 4)); }),
            std::string("$4\r\na\r\n\0\r\n", 10));
}

TEST_P(WriterTest, Null) {
  EXPECT_EQ(Write([](Writer& w) { w.Null(); }), resp3() ? "_\r\n" : "$-1\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.NullArray(); }), resp3() ? "_\r\n" : "*-1\r\n");
}

TEST_P(WriterTest, Aggregates) {
  EXPECT_EQ(Write([](Writer& w) { w.ArrayHeader(3); }), "*3\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.ArrayHeader(0); }), "*0\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.MapHeader(2); }), resp3() ? "%2\r\n" : "*4\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.SetHeader(2); }), resp3() ? "~2\r\n" : "*2\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.PushHeader(3); }), resp3() ? ">3\r\n" : "*3\r\n");
}

TEST_P(WriterTest, Double) {
  EXPECT_EQ(Write([](Writer& w) { w.Double(3.141); }), resp3() ? ",3.141\r\n" : "$5\r\n3.141\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Double(1.0); }), resp3() ? ",1\r\n" : "$1\r\n1\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Double(-0.5); }), resp3() ? ",-0.5\r\n" : "$4\r\n-0.5\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Double(0.1); }), resp3() ? ",0.1\r\n" : "$3\r\n0.1\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Double(std::numeric_limits<double>::infinity()); }),
            resp3() ? ",inf\r\n" : "$3\r\ninf\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Double(-std::numeric_limits<double>::infinity()); }),
            resp3() ? ",-inf\r\n" : "$4\r\n-inf\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Double(std::numeric_limits<double>::quiet_NaN()); }),
            resp3() ? ",nan\r\n" : "$3\r\nnan\r\n");
  // The longest shortest-form double still fits.
  EXPECT_EQ(Write([](Writer& w) { w.Double(-2.2250738585072014e-308); }),
            resp3() ? ",-2.2250738585072014e-308\r\n" : "$24\r\n-2.2250738585072014e-308\r\n");
}

TEST_P(WriterTest, Boolean) {
  EXPECT_EQ(Write([](Writer& w) { w.Boolean(true); }), resp3() ? "#t\r\n" : ":1\r\n");
  EXPECT_EQ(Write([](Writer& w) { w.Boolean(false); }), resp3() ? "#f\r\n" : ":0\r\n");
}

TEST_P(WriterTest, BigNumber) {
  EXPECT_EQ(Write([](Writer& w) { w.BigNumber("-123"); }),
            resp3() ? "(-123\r\n" : "$4\r\n-123\r\n");
}

TEST_P(WriterTest, Verbatim) {
  EXPECT_EQ(Write([](Writer& w) { w.Verbatim("mkd", "# hi"); }),
            resp3() ? "=8\r\nmkd:# hi\r\n" : "$4\r\n# hi\r\n");
  // A malformed format cannot corrupt the frame.
  EXPECT_EQ(Write([](Writer& w) { w.Verbatim("markdown", "x"); }),
            resp3() ? "=5\r\ntxt:x\r\n" : "$1\r\nx\r\n");
}

TEST_P(WriterTest, RateLimitReply) {
  // RL.CHECK's reply: five integers (RESP2) or a map of them (RESP3).
  std::string out;
  Writer w(&out, GetParam());
  w.MapHeader(2);
  w.Bulk("allowed");
  w.Integer(1);
  w.Bulk("remaining");
  w.Integer(41);
  EXPECT_EQ(out, std::string(resp3() ? "%2\r\n" : "*4\r\n") +
                     "$7\r\nallowed\r\n:1\r\n$9\r\nremaining\r\n:41\r\n");
}

TEST(Writer, AppendsToTheCallersBuffer) {
  std::string out = "+PONG\r\n";
  Writer w(&out);
  EXPECT_EQ(w.protocol(), 2);
  EXPECT_EQ(w.buffer(), &out);
  w.Integer(7);
  w.set_protocol(3);
  w.Null();
  EXPECT_EQ(out, "+PONG\r\n:7\r\n_\r\n");
}

}  // namespace
}  // namespace resp

// Redis Cluster's side of the client protocol without a server: CRC16 and the {hash tag} rule
// (the real server's CLUSTER KEYSLOT is compared in cluster_test.cc), node addresses, CLUSTER
// SLOTS replies in every shape Redis sends (RESP2, RESP3 metadata maps, NULL / empty / "?"
// endpoints) and malformed ones, and MOVED / ASK / unavailability errors.
#include "cluster_protocol.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "resp/reply_parser.h"

namespace rl::client_internal {
namespace {

resp::Value Parse(std::string_view bytes) {
  resp::ReplyParser parser;
  resp::Value value;
  size_t consumed = 0;
  EXPECT_EQ(parser.Parse(bytes, &consumed, &value), resp::ReplyStatus::kValue) << parser.error();
  return value;
}

resp::Value Error(std::string text) {
  resp::Value v;
  v.type = resp::Value::Type::kError;
  v.text = std::move(text);
  return v;
}

TEST(ClusterProtocolTest, Crc16IsXmodem) {
  // The check value of CRC-16/XMODEM, and the example of the Redis Cluster specification.
  EXPECT_EQ(Crc16("123456789"), 0x31C3);
  EXPECT_EQ(Crc16(""), 0);
}

TEST(ClusterProtocolTest, KeySlotFollowsTheHashTagRule) {
  // Values as Redis 7's CLUSTER KEYSLOT gives them.
  EXPECT_EQ(KeySlot("a"), 15495);
  EXPECT_EQ(KeySlot("b"), 3300);
  EXPECT_EQ(KeySlot("c"), 7365);
  EXPECT_EQ(KeySlot("123456789"), 0x31C3 % 16384);
  // The tag alone is hashed...
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("user1000"));
  EXPECT_EQ(KeySlot("{user1000}.followers"), KeySlot("user1000"));
  EXPECT_EQ(KeySlot("x{user1000}y"), KeySlot("user1000"));
  // ...from the first '{' to the first '}' after it...
  EXPECT_EQ(KeySlot("foo{bar}{zap}"), KeySlot("bar"));
  EXPECT_EQ(KeySlot("foo{{bar}}zap"), KeySlot("{bar"));
  EXPECT_EQ(KeySlot("}{a}"), KeySlot("a"));
  // ...unless it is empty or unclosed: then the whole key.
  EXPECT_EQ(KeySlot("foo{}{bar}"), Crc16("foo{}{bar}") % 16384);
  EXPECT_EQ(KeySlot("{}"), Crc16("{}") % 16384);
  EXPECT_EQ(KeySlot("foo{bar"), Crc16("foo{bar") % 16384);
  EXPECT_EQ(KeySlot(""), 0);
  // Binary keys are hashed byte for byte.
  EXPECT_EQ(KeySlot(std::string("\0\xff{\x80}", 5)), KeySlot("\x80"));
}

TEST(ClusterProtocolTest, NodeAddresses) {
  absl::StatusOr<NodeAddress> a = ParseNodeAddress("10.0.0.7:7001");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "10.0.0.7");
  EXPECT_EQ(a->port, 7001);
  EXPECT_EQ(a->ToString(), "10.0.0.7:7001");
  a = ParseNodeAddress("[::1]:7000");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->ToString(), "[::1]:7000");
  a = ParseNodeAddress("redis-0.redis.svc:6379");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "redis-0.redis.svc");
  for (const char* bad :
       {"", "host", "host:", ":7000", "host:0", "host:65536", "host:7x", "host:-1", "[]:7000"}) {
    EXPECT_FALSE(ParseNodeAddress(bad).ok()) << bad;
  }
}

TEST(ClusterProtocolTest, ClusterSlotsResp2) {
  // Redis 7, RESP2: [first, last, [host, port, id, [metadata...]], replicas...]; two ranges
  // served by one master.
  const resp::Value reply = Parse(
      "*2\r\n"
      "*4\r\n:0\r\n:5460\r\n"
      "*4\r\n$9\r\n127.0.0.1\r\n:30001\r\n$2\r\nid\r\n*0\r\n"
      "*4\r\n$9\r\n127.0.0.1\r\n:30004\r\n$3\r\nid2\r\n*0\r\n"
      "*3\r\n:5461\r\n:5461\r\n"
      "*2\r\n$9\r\n127.0.0.1\r\n:30001\r\n");
  absl::StatusOr<std::vector<SlotRange>> ranges = ParseClusterSlots(reply, "seed");
  ASSERT_TRUE(ranges.ok()) << ranges.status();
  ASSERT_EQ(ranges->size(), 2u);
  EXPECT_EQ((*ranges)[0].first, 0);
  EXPECT_EQ((*ranges)[0].last, 5460);
  EXPECT_EQ((*ranges)[0].master, (NodeAddress{"127.0.0.1", 30001}));
  EXPECT_EQ((*ranges)[1].first, 5461);
  EXPECT_EQ((*ranges)[1].last, 5461);
}

TEST(ClusterProtocolTest, ClusterSlotsResp3AndUnknownEndpoints) {
  // RESP3 metadata is a map; a NULL, empty or "?" endpoint means the node we asked.
  const resp::Value reply = Parse(
      "*3\r\n"
      "*3\r\n:0\r\n:99\r\n*4\r\n_\r\n:7000\r\n$2\r\nid\r\n%1\r\n$2\r\nip\r\n$8\r\n10.0.0.1\r\n"
      "*3\r\n:100\r\n:199\r\n*3\r\n$0\r\n\r\n:7001\r\n$2\r\nid\r\n"
      "*3\r\n:200\r\n:16383\r\n*2\r\n+?\r\n:7002\r\n");
  absl::StatusOr<std::vector<SlotRange>> ranges = ParseClusterSlots(reply, "seed.example");
  ASSERT_TRUE(ranges.ok()) << ranges.status();
  ASSERT_EQ(ranges->size(), 3u);
  EXPECT_EQ((*ranges)[0].master, (NodeAddress{"seed.example", 7000}));
  EXPECT_EQ((*ranges)[1].master, (NodeAddress{"seed.example", 7001}));
  EXPECT_EQ((*ranges)[2].master, (NodeAddress{"seed.example", 7002}));
  // A node outside any cluster answers an empty array: no ranges, not an error.
  ranges = ParseClusterSlots(Parse("*0\r\n"), "seed");
  ASSERT_TRUE(ranges.ok());
  EXPECT_TRUE(ranges->empty());
}

TEST(ClusterProtocolTest, MalformedClusterSlotsAreErrorsNotCrashes) {
  for (const char* bytes : {
           ":1\r\n",                                                // not an array
           "*1\r\n:1\r\n",                                          // a range that is no array
           "*1\r\n*2\r\n:0\r\n:1\r\n",                              // no master
           "*1\r\n*3\r\n:5\r\n:4\r\n*2\r\n$1\r\nh\r\n:1\r\n",       // last < first
           "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n",   // past the last slot
           "*1\r\n*3\r\n:-1\r\n:0\r\n*2\r\n$1\r\nh\r\n:1\r\n",      // negative
           "*1\r\n*3\r\n$1\r\n0\r\n:0\r\n*2\r\n$1\r\nh\r\n:1\r\n",  // slot as a string
           "*1\r\n*3\r\n:0\r\n:0\r\n*1\r\n$1\r\nh\r\n",             // node without a port
           "*1\r\n*3\r\n:0\r\n:0\r\n*2\r\n$1\r\nh\r\n:0\r\n",       // port 0
           "*1\r\n*3\r\n:0\r\n:0\r\n*2\r\n$1\r\nh\r\n:70000\r\n",   // port too large
           "*1\r\n*3\r\n:0\r\n:0\r\n*2\r\n:1\r\n:1\r\n",            // host as an integer
           "*1\r\n*3\r\n:0\r\n:0\r\n$1\r\nh\r\n",                   // node as a string
       }) {
    EXPECT_FALSE(ParseClusterSlots(Parse(bytes), "seed").ok()) << bytes;
  }
  absl::StatusOr<std::vector<SlotRange>> error =
      ParseClusterSlots(Error("ERR This instance has cluster support disabled"), "seed");
  EXPECT_TRUE(absl::IsUnavailable(error.status())) << error.status();
}

TEST(ClusterProtocolTest, Redirections) {
  std::optional<Redirect> r = ParseRedirect(Error("MOVED 3999 127.0.0.1:6381"), "x");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->kind, Redirect::Kind::kMoved);
  EXPECT_EQ(r->slot, 3999);
  EXPECT_EQ(r->to, (NodeAddress{"127.0.0.1", 6381}));
  r = ParseRedirect(Error("ASK 0 10.1.2.3:7000"), "x");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->kind, Redirect::Kind::kAsk);
  EXPECT_EQ(r->slot, 0);
  EXPECT_EQ(r->to, (NodeAddress{"10.1.2.3", 7000}));
  // Unknown endpoint: the node that redirected, on the port given.
  r = ParseRedirect(Error("MOVED 16383 :7005"), "node-a");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->to, (NodeAddress{"node-a", 7005}));
  // IPv6 as Redis prints it (no brackets) and with brackets.
  r = ParseRedirect(Error("MOVED 1 ::1:7000"), "x");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->to, (NodeAddress{"::1", 7000}));
  r = ParseRedirect(Error("MOVED 1 [fe80::1]:7000"), "x");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->to.host, "fe80::1");

  for (const char* bad : {"MOVED", "MOVED 1", "MOVED 16384 h:1", "MOVED -1 h:1", "MOVED x h:1",
                          "MOVED 1 h", "MOVED 1 h:0", "ASK 1 h:99999", "MOVEDX 1 h:1",
                          "ERR MOVED 1 h:1", "CLUSTERDOWN The cluster is down"}) {
    EXPECT_FALSE(ParseRedirect(Error(bad), "x").has_value()) << bad;
  }
  resp::Value not_error;
  not_error.type = resp::Value::Type::kSimpleString;
  not_error.text = "MOVED 1 h:1";
  EXPECT_FALSE(ParseRedirect(not_error, "x").has_value());
}

TEST(ClusterProtocolTest, NodeUnavailableErrors) {
  for (const char* text :
       {"CLUSTERDOWN The cluster is down", "CLUSTERDOWN Hash slot not served",
        "TRYAGAIN Multiple keys request during rehashing of slot",
        "LOADING Redis is loading the dataset in memory",
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
        "READONLY You can't write against a read only replica.",
        "BUSY Redis is busy running a script.",
        // min-replicas-to-write: the master is cut off from its replicas (a partition).
        "NOREPLICAS Not enough good replicas to write."}) {
    EXPECT_TRUE(IsNodeUnavailableError(Error(text))) << text;
  }
  for (const char* text : {"ERR invalid limit", "WRONGTYPE Operation against a key",
                           "BUSYKEY Target key name already exists.", "MOVED 1 h:1"}) {
    EXPECT_FALSE(IsNodeUnavailableError(Error(text))) << text;
  }
}

}  // namespace
}  // namespace rl::client_internal

// MULTI/EXEC/DISCARD/WATCH/UNWATCH against the real server, with Redis 7.0's texts and shapes:
// QUEUED, EXECABORT after a refused command, nested MULTI, EXEC and DISCARD without MULTI, the
// queue's bounds, WATCH races between two clients (a denial is no change; an expiry is), and a
// transaction's commands running with no other client's command in between.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "resp_client.h"
#include "server_process.h"

namespace rl::test {
namespace {

class TransactionTest : public SharedServerTest<TransactionTest> {};

const std::vector<std::string> kCheckOne(const std::string& key) {
  return {"RL.CHECK", key, "TOKEN_BUCKET", "1", "1h"};
}

TEST_F(TransactionTest, QueuedRepliesAndRedisErrors) {
  RespClient c(port());
  EXPECT_EQ(c.Call({"EXEC"}).str, "ERR EXEC without MULTI");
  EXPECT_EQ(c.Call({"DISCARD"}).str, "ERR DISCARD without MULTI");
  EXPECT_EQ(c.Call({"UNWATCH"}).str, "OK");
  EXPECT_EQ(c.Call({"MULTI"}).str, "OK");
  EXPECT_EQ(c.Call({"MULTI"}).str, "ERR MULTI calls can not be nested");
  EXPECT_EQ(c.Call({"WATCH", "x"}).str, "ERR WATCH inside MULTI is not allowed");
  Reply q = c.Call({"RL.CHECK", "txn:a", "TOKEN_BUCKET", "10", "1m"});
  EXPECT_EQ(q.type, '+');
  EXPECT_EQ(q.str, "QUEUED");
  EXPECT_EQ(c.Call({"PING"}).str, "QUEUED");
  // Arguments are checked when the command runs, as Redis does: an error in the array.
  EXPECT_EQ(c.Call({"RL.CHECK", "txn:a", "TOKEN_BUCKET", "10", "1m", "COST", "-1"}).str, "QUEUED");
  Reply r = c.Call({"EXEC"});  // neither the nested MULTI nor WATCH failed the transaction
  ASSERT_EQ(r.type, '*');
  ASSERT_EQ(r.elements.size(), 3u);
  EXPECT_EQ(r.elements[0].Ints(), (std::vector<int64_t>{1, 10, 9, 0, 6000}));
  EXPECT_EQ(r.elements[1].str, "PONG");
  EXPECT_TRUE(r.elements[2].is_error());
  EXPECT_EQ(c.Call({"EXEC"}).str, "ERR EXEC without MULTI");
  EXPECT_EQ(c.Call({"MULTI"}).str, "OK");
  r = c.Call({"EXEC"});
  EXPECT_EQ(r.type, '*');
  EXPECT_TRUE(r.elements.empty());
}

// CLIENT LIST shows a client inside MULTI as Redis does: flags=x, multi=<queued>, multi-mem.
TEST_F(TransactionTest, ClientListShowsTheQueue) {
  RespClient a(port()), b(port());
  ASSERT_EQ(a.Call({"CLIENT", "SETNAME", "txn-a"}).str, "OK");
  ASSERT_EQ(a.Call({"MULTI"}).str, "OK");
  ASSERT_EQ(a.Call(kCheckOne("txn:list")).str, "QUEUED");
  ASSERT_EQ(a.Call({"PING"}).str, "QUEUED");
  std::string list = b.Call({"CLIENT", "LIST"}).str;
  const size_t at = list.find("name=txn-a ");
  ASSERT_NE(at, std::string::npos) << list;
  const std::string line = list.substr(at, list.find('\n', at) - at);
  EXPECT_NE(line.find(" flags=x "), std::string::npos) << line;
  EXPECT_NE(line.find(" multi=2 "), std::string::npos) << line;
  EXPECT_EQ(line.find(" multi-mem=0 "), std::string::npos) << line;
  EXPECT_NE(line.find(" cmd=ping "), std::string::npos) << line;
  ASSERT_EQ(a.Call({"DISCARD"}).str, "OK");
  list = b.Call({"CLIENT", "LIST"}).str;
  EXPECT_NE(list.find("flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 "), std::string::npos) << list;
}

// The rows in COMMAND INFO / COMMAND DOCS, as Redis 7 lists them.
TEST_F(TransactionTest, CommandRows) {
  RespClient c(port());
  Reply info = c.Call({"COMMAND", "INFO", "multi", "exec", "discard", "watch", "unwatch"});
  ASSERT_EQ(info.elements.size(), 5u);
  const std::vector<int64_t> arity = {1, 1, 1, -2, 1};
  for (size_t i = 0; i < 5; ++i) {
    ASSERT_EQ(info.elements[i].elements.size(), 10u) << i;
    EXPECT_EQ(info.elements[i].elements[1].integer, arity[i]) << info.elements[i].elements[0].str;
  }
  const Reply& watch = info.elements[3];
  EXPECT_EQ(watch.elements[3].integer, 1);   // first key
  EXPECT_EQ(watch.elements[4].integer, -1);  // last key: all of them
  EXPECT_EQ(watch.elements[5].integer, 1);
  Reply docs = c.Call({"COMMAND", "DOCS", "exec"});
  ASSERT_EQ(docs.elements.size(), 2u);
  const Reply* group = docs.elements[1].Get("group");
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->str, "transactions");
}

TEST_F(TransactionTest, ARefusedCommandAbortsExecAndRunsNothing) {
  RespClient c(port());
  const std::vector<std::vector<std::string>> refused = {
      {"FOO", "bar"}, {"RL.CHECK", "k"}, {"CLIENT", "BOGUS"}, {"MULTI", "x"}};
  for (const auto& bad : refused) {
    ASSERT_EQ(c.Call({"MULTI"}).str, "OK");
    ASSERT_EQ(c.Call(kCheckOne("txn:refused")).str, "QUEUED");
    EXPECT_TRUE(c.Call(bad).is_error()) << bad[0];
    EXPECT_EQ(c.Call(kCheckOne("txn:refused")).str, "QUEUED");
    EXPECT_EQ(c.Call({"EXEC"}).str, "EXECABORT Transaction discarded because of previous errors.")
        << bad[0];
  }
  // EXEC with arguments discards the transaction at once.
  ASSERT_EQ(c.Call({"MULTI"}).str, "OK");
  ASSERT_EQ(c.Call(kCheckOne("txn:refused")).str, "QUEUED");
  EXPECT_EQ(c.Call({"EXEC", "x"}).str,
            "EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' "
            "command");
  EXPECT_EQ(c.Call({"EXEC"}).str, "ERR EXEC without MULTI");
  // Nothing ran: the key's single token is still there.
  EXPECT_EQ(c.Call(kCheckOne("txn:refused")).elements[0].integer, 1);
}

TEST_F(TransactionTest, DiscardResetAndQuitEndTheTransaction) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"MULTI"}).str, "OK");
  ASSERT_EQ(c.Call(kCheckOne("txn:discard")).str, "QUEUED");
  EXPECT_EQ(c.Call({"DISCARD"}).str, "OK");
  EXPECT_EQ(c.Call({"EXEC"}).str, "ERR EXEC without MULTI");
  ASSERT_EQ(c.Call({"MULTI"}).str, "OK");
  ASSERT_EQ(c.Call(kCheckOne("txn:discard")).str, "QUEUED");
  EXPECT_EQ(c.Call({"RESET"}).str, "RESET");
  EXPECT_EQ(c.Call({"EXEC"}).str, "ERR EXEC without MULTI");
  EXPECT_EQ(c.Call(kCheckOne("txn:discard")).elements[0].integer, 1) << "nothing ran";
  ASSERT_EQ(c.Call({"MULTI"}).str, "OK");
  EXPECT_EQ(c.Call({"QUIT"}).str, "OK");
  EXPECT_TRUE(c.WaitClosed());
}

TEST_F(TransactionTest, TheQueueIsBoundedInCommands) {
  RespClient c(port());
  ASSERT_EQ(c.Call({"MULTI"}).str, "OK");
  constexpr int kMax = 10000;
  std::string batch;
  for (int i = 0; i <= kMax; ++i) batch += RespClient::Encode({"PING"});
  ASSERT_TRUE(c.SendRaw(batch));
  for (int i = 0; i < kMax; ++i) ASSERT_EQ(c.Read().str, "QUEUED") << i;
  Reply full = c.Read();
  EXPECT_TRUE(full.is_error());
  EXPECT_NE(full.str.find("MULTI queue full"), std::string::npos) << full.str;
  EXPECT_EQ(c.Call({"EXEC"}).str, "EXECABORT Transaction discarded because of previous errors.");
  EXPECT_EQ(c.Call({"PING"}).str, "PONG");
}

TEST(TransactionBoundsTest, TheQueueIsBoundedInBytes) {
  ServerProcess server({"--proto-max-bulk-len", "64kb", "--client-query-buffer-limit", "256kb"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  ASSERT_EQ(c.Call({"MULTI"}).str, "OK");
  const std::string big(60 * 1024, 'x');
  for (int i = 0; i < 4; ++i) ASSERT_EQ(c.Call({"ECHO", big}).str, "QUEUED") << i;
  Reply full = c.Call({"ECHO", big});  // past 256 KB of queued arguments
  EXPECT_NE(full.str.find("MULTI queue full"), std::string::npos) << full.str;
  EXPECT_EQ(c.Call({"EXEC"}).str, "EXECABORT Transaction discarded because of previous errors.");
  // The queue's bytes were given back: a new transaction of the same size fits.
  ASSERT_EQ(c.Call({"MULTI"}).str, "OK");
  for (int i = 0; i < 4; ++i) ASSERT_EQ(c.Call({"ECHO", big}).str, "QUEUED") << i;
  EXPECT_EQ(c.Call({"EXEC"}).elements.size(), 4u);
}

// Two clients: a WATCHed key changed by the other one (or by the watcher itself) makes EXEC
// answer nil and run nothing; a denial, a peek or another key's change does not.
TEST_F(TransactionTest, WatchRaceBetweenTwoClients) {
  RespClient a(port()), b(port());
  auto exec_check = [&](const std::string& key) {
    EXPECT_EQ(a.Call({"MULTI"}).str, "OK");
    EXPECT_EQ(a.Call({"RL.PEEK", key, "TOKEN_BUCKET", "2", "1h"}).str, "QUEUED");
    return a.Call({"EXEC"});
  };
  ASSERT_EQ(a.Call({"WATCH", "race", "other"}).str, "OK");
  ASSERT_EQ(b.Call({"RL.CHECK", "race", "TOKEN_BUCKET", "2", "1h"}).elements[0].integer, 1);
  Reply r = exec_check("race");
  EXPECT_TRUE(r.is_null()) << r.type;
  EXPECT_EQ(r.type, '*');  // RESP2's null array, *-1

  ASSERT_EQ(a.Call({"WATCH", "race"}).str, "OK");
  ASSERT_EQ(b.Call({"RL.PEEK", "race", "TOKEN_BUCKET", "2", "1h"}).elements[0].integer, 1);
  ASSERT_EQ(b.Call({"RL.CHECK", "race:x", "TOKEN_BUCKET", "2", "1h"}).elements[0].integer, 1);
  r = exec_check("race");
  ASSERT_EQ(r.elements.size(), 1u) << "a peek and another key are no change";

  // The key's last token goes; then a denial changes nothing.
  ASSERT_EQ(b.Call({"RL.CHECK", "race", "TOKEN_BUCKET", "2", "1h"}).elements[0].integer, 1);
  ASSERT_EQ(b.Call({"CL.THROTTLE", "race", "0", "1", "3600"}).elements[0].integer, 0);  // allowed
  ASSERT_EQ(a.Call({"WATCH", "race"}).str, "OK");
  ASSERT_EQ(b.Call({"RL.CHECK", "race", "TOKEN_BUCKET", "2", "1h"}).elements[0].integer, 0);
  ASSERT_EQ(b.Call({"CL.THROTTLE", "race", "0", "1", "3600"}).elements[0].integer, 1);  // limited
  r = exec_check("race");
  ASSERT_EQ(r.elements.size(), 1u) << "a denial is no change";

  // The watcher's own change counts, as in Redis; and an RL.RESET by the other client.
  ASSERT_EQ(a.Call({"WATCH", "race"}).str, "OK");
  ASSERT_EQ(a.Call({"RL.CHECK", "race", "TOKEN_BUCKET", "5", "2h"}).elements[0].integer, 1);
  EXPECT_TRUE(exec_check("race").is_null());
  ASSERT_EQ(a.Call({"WATCH", "race"}).str, "OK");
  ASSERT_EQ(b.Call({"RL.RESET", "race", "TOKEN_BUCKET", "2", "1h"}).integer, 1);
  EXPECT_TRUE(exec_check("race").is_null());
  // UNWATCH and DISCARD forget the keys.
  ASSERT_EQ(a.Call({"WATCH", "race"}).str, "OK");
  ASSERT_EQ(a.Call({"UNWATCH"}).str, "OK");
  ASSERT_EQ(b.Call({"RL.CHECK", "race", "TOKEN_BUCKET", "2", "1h"}).elements[0].integer, 1);
  EXPECT_EQ(exec_check("race").elements.size(), 1u);
  ASSERT_EQ(a.Call({"WATCH", "race"}).str, "OK");
  ASSERT_EQ(a.Call({"MULTI"}).str, "OK");
  ASSERT_EQ(a.Call({"DISCARD"}).str, "OK");
  ASSERT_EQ(b.Call({"RL.CHECK", "race", "TOKEN_BUCKET", "2", "1h"}).elements[0].integer, 1);
  EXPECT_EQ(exec_check("race").elements.size(), 1u);
}

// A denial that starts a penalty block changes the key's state.
TEST_F(TransactionTest, ADenialThatStartsABlockIsAChange) {
  RespClient a(port()), b(port());
  const std::vector<std::string> check = {"RL.CHECK", "blocked", "FIXED_WINDOW", "1", "1h",
                                          "BLOCK",    "1h"};
  ASSERT_EQ(b.Call(check).elements[0].integer, 1);
  ASSERT_EQ(a.Call({"WATCH", "blocked"}).str, "OK");
  Reply denied = b.Call(check);
  ASSERT_EQ(denied.elements[0].integer, 0);
  ASSERT_EQ(denied.elements[3].integer, 3600000) << "the block started";
  ASSERT_EQ(a.Call({"MULTI"}).str, "OK");
  ASSERT_EQ(a.Call({"PING"}).str, "QUEUED");
  EXPECT_TRUE(a.Call({"EXEC"}).is_null());
}

// RESP3: a failed WATCH answers the null type.
TEST_F(TransactionTest, WatchNullIsRespThreeNull) {
  RespClient a(port()), b(port());
  ASSERT_EQ(a.Call({"HELLO", "3"}).type, '%');
  ASSERT_EQ(a.Call({"WATCH", "resp3"}).str, "OK");
  ASSERT_EQ(b.Call(kCheckOne("resp3")).elements[0].integer, 1);
  ASSERT_EQ(a.Call({"MULTI"}).str, "OK");
  ASSERT_EQ(a.Call({"PING"}).str, "QUEUED");
  EXPECT_EQ(a.Call({"EXEC"}).type, '_');
}

// A watched key whose state the client read after WATCH and that becomes fresh (expires) before
// EXEC fails the EXEC, as a Redis key read with a TTL would; a state fresh when read does not.
TEST(TransactionExpiryTest, AWatchedStateThatExpiresFailsExec) {
  ServerProcess server({"--enable-debug-command", "yes"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  // 5 per minute, one used: full again (fresh) 12 s later.
  ASSERT_EQ(c.Call({"RL.CHECK", "exp", "TOKEN_BUCKET", "5", "1m"}).elements[4].integer, 12000);
  auto watched_exec = [&](int64_t advance_ms) {
    EXPECT_EQ(c.Call({"WATCH", "exp"}).str, "OK");
    Reply peek = c.Call({"RL.PEEK", "exp", "TOKEN_BUCKET", "5", "1m"});
    EXPECT_EQ(peek.elements[0].integer, 1);
    EXPECT_EQ(c.Call({"DEBUG", "CLOCK-ADVANCE", std::to_string(advance_ms)}).str, "OK");
    EXPECT_EQ(c.Call({"MULTI"}).str, "OK");
    EXPECT_EQ(c.Call({"RL.CHECK", "exp", "TOKEN_BUCKET", "5", "1m"}).str, "QUEUED");
    return c.Call({"EXEC"});
  };
  EXPECT_EQ(watched_exec(11000).elements.size(), 1u) << "not fresh yet";
  // That check used a token again (1 1/12 in use): fresh 13 s after it.
  EXPECT_TRUE(watched_exec(13000).is_null()) << "fresh at 13 s";
  EXPECT_EQ(watched_exec(1000).elements.size(), 1u) << "fresh already when read";
}

// The commands of a transaction run with no other client's command in between: while another
// client checks the same key as fast as it can, every peek inside one EXEC sees the same count.
TEST_F(TransactionTest, QueuedCommandsRunTogether) {
  const std::vector<std::string> peek = {"RL.PEEK", "together", "FIXED_WINDOW", "100000000", "1h"};
  std::atomic<bool> stop{false};
  std::atomic<int> other_checks{0};
  std::thread other([&] {
    RespClient b(port());
    std::string batch;
    for (int i = 0; i < 32; ++i)
      batch += RespClient::Encode({"RL.CHECK", "together", "FIXED_WINDOW", "100000000", "1h"});
    while (!stop.load()) {
      if (!b.SendRaw(batch)) return;
      for (int i = 0; i < 32; ++i) b.Read();
      other_checks.fetch_add(32);
    }
  });
  // Stops and joins the other client however this test ends (an ASSERT returns early).
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop = true;
      thread.join();
    }
  } joiner{stop, other};
  RespClient a(port());
  int interleaved = 0;
  int before = 0;
  for (int t = 0; t < 1000; ++t) {
    std::string batch = RespClient::Encode({"MULTI"});
    for (int i = 0; i < 20; ++i) batch += RespClient::Encode(peek);
    batch += RespClient::Encode({"EXEC"});
    ASSERT_TRUE(a.SendRaw(batch));
    ASSERT_EQ(a.Read().str, "OK");
    for (int i = 0; i < 20; ++i) ASSERT_EQ(a.Read().str, "QUEUED");
    Reply r = a.Read();
    ASSERT_EQ(r.elements.size(), 20u);
    for (const Reply& p : r.elements)
      interleaved += p.elements[2].integer != r.elements[0].elements[2].integer;
    if (t == 0) before = other_checks.load();
  }
  const int during = other_checks.load() - before;
  EXPECT_EQ(interleaved, 0);
  EXPECT_GT(during, 0) << "the other client ran meanwhile";
}

}  // namespace
}  // namespace rl::test

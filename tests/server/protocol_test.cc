// The Redis-facing surface of the real server: protocol errors close only the offending
// connection, Redis's error texts, HELLO/AUTH, the admin commands, COMMAND DOCS's shape, and the
// bounds (maxclients, output buffer cap, idle timeout, HTTP requests).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <thread>

#include "resp_client.h"
#include "server_process.h"

namespace rl::test {
namespace {

class ProtocolTest : public SharedServerTest<ProtocolTest> {};

struct BadInput {
  std::string bytes;
  std::string error;
};

TEST_F(ProtocolTest, EachProtocolErrorClosesOnlyThatConnection) {
  const std::vector<BadInput> cases = {
      {"*abc\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*-5x\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*2000000000\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*1\r\nfoo\r\n", "ERR Protocol error: expected '$', got 'f'"},
      {"*1\r\n$abc\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$600000000\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$3\r\nfooXY\r\n", "ERR Protocol error: invalid bulk length"},
      {"\"unbalanced\r\n", "ERR Protocol error: unbalanced quotes in request"},
      {std::string(70000, 'a'), "ERR Protocol error: too big inline request"},
      {"*" + std::string(70000, '1'), "ERR Protocol error: too big mbulk count string"},
  };
  RespClient bystander(port());
  ASSERT_EQ(bystander.Call({"PING"}).str, "PONG");
  // A good command first, inline or multibulk (the server parses the command after a multibulk
  // one before running it): its reply still arrives, in order, before the error.
  for (const std::string& good : {std::string("PING\r\n"), RespClient::Encode({"PING"})}) {
    for (const BadInput& bad : cases) {
      RespClient c(port());
      ASSERT_TRUE(c.connected());
      c.SendRaw(good + bad.bytes);
      EXPECT_EQ(c.Read().str, "PONG");
      Reply r = c.Read();
      EXPECT_EQ(r.type, '-') << bad.error;
      EXPECT_EQ(r.str, bad.error);
      EXPECT_TRUE(c.WaitClosed()) << bad.error;
      EXPECT_EQ(bystander.Call({"PING"}).str, "PONG") << "others carry on after: " << bad.error;
    }
  }
  Reply info = bystander.Call({"INFO", "stats"});
  EXPECT_NE(info.str.find("protocol_errors:" + std::to_string(2 * cases.size())),
            std::string::npos);
}

// A command cut anywhere after a whole one in the same read: the whole one is answered at once,
// and the cut one when its rest arrives (the server's parse ahead of it resumes, not restarts).
TEST_F(ProtocolTest, CommandCutAfterAWholeOneCompletesLater) {
  const std::string second = RespClient::Encode({"ECHO", "hello"});
  for (size_t cut = 1; cut < second.size(); ++cut) {
    RespClient c(port());
    ASSERT_TRUE(c.SendRaw(RespClient::Encode({"PING"}) + second.substr(0, cut)));
    EXPECT_EQ(c.Read().str, "PONG") << cut;
    ASSERT_TRUE(c.SendRaw(second.substr(cut)));
    EXPECT_EQ(c.Read().str, "hello") << cut;
  }
}

TEST_F(ProtocolTest, RedisErrorTexts) {
  RespClient c(port());
  EXPECT_EQ(c.Call({"FOO", "a", "b"}).str,
            "ERR unknown command 'FOO', with args beginning with: 'a' 'b' ");
  EXPECT_EQ(c.Call({"foo"}).str, "ERR unknown command 'foo', with args beginning with: ");
  EXPECT_EQ(c.Call({"rl.check", "k"}).str, "ERR wrong number of arguments for 'rl.check' command");
  EXPECT_EQ(c.Call({"ECHO"}).str, "ERR wrong number of arguments for 'echo' command");
  EXPECT_EQ(c.Call({"CLIENT", "SETNAME"}).str,
            "ERR wrong number of arguments for 'client|setname' command");
  EXPECT_EQ(c.Call({"CLIENT", "BOGUS"}).str, "ERR unknown subcommand 'BOGUS'. Try CLIENT HELP.");
  EXPECT_EQ(c.Call({"SELECT", "1"}).str, "ERR DB index is out of range");
  EXPECT_EQ(c.Call({"HELLO", "4"}).str, "NOPROTO unsupported protocol version");
  EXPECT_EQ(c.Call({"HELLO", "x"}).str, "ERR Protocol version is not an integer or out of range");
  EXPECT_EQ(c.Call({"PiNg"}).str, "PONG");
}

// Each connection remembers its last command's row by the name's bytes: commands that follow one
// another with names alike in length or case, unknown ones among them, each still get their own.
TEST_F(ProtocolTest, EveryCommandOfAPipelineFindsItsOwnRow) {
  RespClient c(port());
  const std::vector<std::vector<std::string>> commands = {
      {"PING"},      {"PING"},      {"ping"}, {"PINGX"},     {"PING"}, {"ECHO", "a"},
      {"ECHO", "b"}, {"echo", "c"}, {"PONG"}, {"ECHO", "d"}, {"ECHO"}, {"PING"}};
  std::string batch;
  for (const auto& cmd : commands) batch += RespClient::Encode(cmd);
  ASSERT_TRUE(c.SendRaw(batch));
  const std::vector<std::string> expected = {
      "PONG",
      "PONG",
      "PONG",
      "ERR unknown command 'PINGX', with args beginning with: ",
      "PONG",
      "a",
      "b",
      "c",
      "ERR unknown command 'PONG', with args beginning with: ",
      "d",
      "ERR wrong number of arguments for 'echo' command",
      "PONG"};
  for (const std::string& want : expected) EXPECT_EQ(c.Read().str, want);
}

TEST_F(ProtocolTest, HelloAndAdminCommands) {
  RespClient c(port());
  Reply h = c.Call({"HELLO", "3", "SETNAME", "tester"});
  ASSERT_EQ(h.type, '%');
  ASSERT_EQ(h.elements.size(), 14u);
  const char* keys[] = {"server", "version", "proto", "id", "mode", "role", "modules"};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(h.elements[2 * i].type, '$');
    EXPECT_EQ(h.elements[2 * i].str, keys[i]);
  }
  EXPECT_EQ(h.Get("proto")->integer, 3);
  EXPECT_EQ(c.Call({"CLIENT", "GETNAME"}).str, "tester");
  EXPECT_EQ(c.Call({"CLIENT", "ID"}).integer, h.Get("id")->integer);
  EXPECT_EQ(c.Call({"CLIENT", "SETINFO", "LIB-NAME", "rl-test"}).str, "OK");
  EXPECT_NE(c.Call({"CLIENT", "INFO"}).str.find("lib-name=rl-test"), std::string::npos);
  Reply h2 = c.Call({"HELLO", "2"});
  ASSERT_EQ(h2.type, '*');
  EXPECT_EQ(h2.elements.size(), 14u);
  EXPECT_EQ(c.Call({"ECHO", "hi"}).str, "hi");
  EXPECT_EQ(c.Call({"PING", "x"}).str, "x");
  EXPECT_EQ(c.Call({"SELECT", "0"}).str, "OK");
  Reply t = c.Call({"TIME"});
  ASSERT_EQ(t.elements.size(), 2u);
  EXPECT_GT(std::stoll(t.elements[0].str), 1700000000);
  Reply save = c.Call({"CONFIG", "GET", "save"});
  ASSERT_EQ(save.elements.size(), 2u);
  EXPECT_EQ(save.elements[0].str, "save");
  Reply ao = c.Call({"CONFIG", "GET", "appendonly"});
  ASSERT_EQ(ao.elements.size(), 2u);
  EXPECT_EQ(ao.elements[1].str, "no");
  EXPECT_TRUE(c.Call({"CONFIG", "SET", "save", ""}).is_error());
  c.Call({"RL.CHECK", "dbsize-key", "GCRA", "5", "1m"});
  int64_t keys_now = c.Call({"DBSIZE"}).integer;
  EXPECT_GE(keys_now, 1);
  Reply info = c.Call({"INFO"});
  for (const char* section : {"# Server", "# Clients", "# Memory", "# Stats", "# Keyspace",
                              "db0:keys=", "connected_clients:", "rl_checks:"}) {
    EXPECT_NE(info.str.find(section), std::string::npos) << section;
  }
  EXPECT_EQ(c.Call({"RESET"}).str, "RESET");
  EXPECT_EQ(c.Call({"CLIENT", "GETNAME"}).type, '$') << "RESET went back to RESP2";
  EXPECT_EQ(c.Call({"QUIT"}).str, "OK");
  EXPECT_TRUE(c.WaitClosed());
}

// redis-cli builds its hints from COMMAND DOCS and asserts on its shape: a map of name -> map
// with string keys; arguments are maps with name and type; flags are simple strings.
void CheckArgs(const Reply& args) {
  ASSERT_EQ(args.type, '*');
  for (const Reply& arg : args.elements) {
    ASSERT_EQ(arg.type, '%');
    ASSERT_NE(arg.Get("name"), nullptr);
    ASSERT_NE(arg.Get("type"), nullptr);
    if (const Reply* flags = arg.Get("flags")) {
      for (const Reply& f : flags->elements) EXPECT_EQ(f.type, '+');
    }
    if (const Reply* nested = arg.Get("arguments")) CheckArgs(*nested);
  }
}

TEST_F(ProtocolTest, CommandDocsAreWellFormed) {
  RespClient c(port());
  c.Call({"HELLO", "3"});
  Reply docs = c.Call({"COMMAND", "DOCS"});
  ASSERT_EQ(docs.type, '%');
  int64_t count = c.Call({"COMMAND", "COUNT"}).integer;
  EXPECT_EQ(static_cast<int64_t>(docs.elements.size() / 2), count);
  for (size_t i = 0; i < docs.elements.size(); i += 2) {
    ASSERT_EQ(docs.elements[i].type, '$');
    const Reply& doc = docs.elements[i + 1];
    ASSERT_EQ(doc.type, '%') << docs.elements[i].str;
    for (size_t j = 0; j < doc.elements.size(); j += 2) EXPECT_EQ(doc.elements[j].type, '$');
    EXPECT_EQ(doc.Get("summary")->type, '$');
    if (const Reply* args = doc.Get("arguments")) CheckArgs(*args);
  }
  ASSERT_NE(docs.Get("rl.check"), nullptr);
  ASSERT_NE(docs.Get("cl.throttle"), nullptr);
  ASSERT_NE(docs.Get("rl.policy"), nullptr);
  EXPECT_NE(docs.Get("rl.policy")->Get("subcommands")->Get("rl.policy|set"), nullptr);
  Reply one = c.Call({"COMMAND", "DOCS", "RL.CHECK", "nope"});
  EXPECT_EQ(one.elements.size(), 2u);
  Reply info = c.Call({"COMMAND", "INFO", "rl.check", "nope"});
  ASSERT_EQ(info.elements.size(), 2u);
  EXPECT_EQ(info.elements[0].elements[0].str, "rl.check");
  EXPECT_EQ(info.elements[0].elements[1].integer, -4);
  EXPECT_TRUE(info.elements[1].is_null());
  Reply all = c.Call({"COMMAND"});
  EXPECT_EQ(static_cast<int64_t>(all.elements.size()), count);
}

TEST_F(ProtocolTest, HttpRequestClosesWithoutReply) {
  for (const char* request : {"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
                              "POST /api HTTP/1.1\r\nHost: x\r\n\r\n", "Host: example.com\r\n"}) {
    RespClient c(port());
    c.SendRaw(request);
    size_t bytes = 0;
    EXPECT_TRUE(c.WaitClosed(&bytes)) << request;
    EXPECT_EQ(bytes, 0u) << request;
  }
  RespClient ok(port());
  EXPECT_EQ(ok.Call({"PING"}).str, "PONG");
}

TEST_F(ProtocolTest, ClientThatNeverReadsIsDisconnected) {
  ServerProcess server({"--client-output-limit", "256kb", "--threads", "1"});
  ASSERT_GT(server.port(), 0);
  // A tiny receive window so the replies pile up on the server side.
  RespClient hog(server.port());
  int small = 4096;
  setsockopt(hog.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  RespClient other(server.port());
  std::string batch;
  for (int i = 0; i < 50; ++i) batch += "COMMAND DOCS\r\n";
  bool send_failed = false;
  for (int i = 0; i < 200 && !send_failed; ++i) send_failed = !hog.SendRaw(batch);
  EXPECT_EQ(other.Call({"PING"}).str, "PONG") << "others are unaffected";
  EXPECT_TRUE(hog.WaitClosed());
  Reply info = other.Call({"INFO", "stats"});
  EXPECT_NE(info.str.find("client_output_limit_disconnections:1"), std::string::npos) << info.str;
  EXPECT_EQ(server.Terminate(), 0);
}

TEST_F(ProtocolTest, MaxClients) {
  ServerProcess server({"--maxclients", "2"});
  ASSERT_GT(server.port(), 0);
  auto a = std::make_unique<RespClient>(server.port());
  RespClient b(server.port());
  ASSERT_EQ(a->Call({"PING"}).str, "PONG");
  ASSERT_EQ(b.Call({"PING"}).str, "PONG");
  RespClient c(server.port());
  Reply r = c.Read();
  EXPECT_EQ(r.str, "ERR max number of clients reached");
  EXPECT_TRUE(c.WaitClosed());
  a.reset();
  // The slot frees once the server has seen the close, which a busy machine can delay: a new
  // client is served within a generous bound (each refused try is closed by the server).
  bool served = false;
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       !served && std::chrono::steady_clock::now() < deadline;) {
    RespClient d(server.port());
    served = d.Call({"PING"}).str == "PONG";
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(served) << "a client that left did not free its slot";
  EXPECT_EQ(server.Terminate(), 0);
}

// The idle timeout without waiting for it: DEBUG CLOCK-ADVANCE moves the server's clock past
// --timeout (an hour: real time alone would close nothing during the test) and DEBUG SWEEP runs
// the sweep now. The client that advanced the clock is active at the new time, so only the idle
// one is closed.
TEST_F(ProtocolTest, IdleTimeout) {
  ServerProcess server({"--timeout", "3600", "--enable-debug-command", "yes"});
  ASSERT_GT(server.port(), 0);
  RespClient idle(server.port());
  RespClient busy(server.port());
  ASSERT_EQ(idle.Call({"PING"}).str, "PONG");
  ASSERT_EQ(busy.Call({"PING"}).str, "PONG");
  ASSERT_EQ(busy.Call({"DEBUG", "CLOCK-ADVANCE", "3600001"}).str, "OK");
  ASSERT_EQ(busy.Call({"DEBUG", "SWEEP"}).str, "OK");
  EXPECT_TRUE(idle.WaitClosed());
  EXPECT_EQ(busy.Call({"PING"}).str, "PONG");
  EXPECT_NE(busy.Call({"INFO", "stats"}).str.find("idle_timeout_disconnections:1\r\n"),
            std::string::npos);
  EXPECT_EQ(server.Terminate(), 0);
}

// The sweep also runs by itself, from each I/O thread's one-second timer: with the clock moved
// past --timeout, the idle client is closed within a tick (at most ~1 s of real time).
TEST_F(ProtocolTest, IdleSweepRunsOnItsOwnTimer) {
  ServerProcess server({"--timeout", "1", "--enable-debug-command", "yes", "--threads", "1"});
  ASSERT_GT(server.port(), 0);
  RespClient idle(server.port(), /*timeout_ms=*/5000);
  RespClient busy(server.port());
  ASSERT_EQ(idle.Call({"PING"}).str, "PONG");
  ASSERT_EQ(busy.Call({"DEBUG", "CLOCK-ADVANCE", "1001"}).str, "OK");
  EXPECT_TRUE(idle.WaitClosed()) << "the timer's sweep closed the idle client";
  EXPECT_EQ(server.Terminate(), 0);
}

// DEBUG is off unless enable-debug-command allows it: Redis's refusal, and COMMAND does not list
// it. "local" allows clients on this machine (the tests' loopback).
TEST_F(ProtocolTest, DebugIsRefusedUnlessEnabled) {
  const std::string refused =
      "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
      "you can run it from a local connection, otherwise you need to set this option in the "
      "configuration file, and then restart the server.";
  RespClient c(port());
  EXPECT_EQ(c.Call({"DEBUG", "CLOCK-ADVANCE", "1000"}).str, refused);
  EXPECT_EQ(c.Call({"DEBUG", "SWEEP"}).str, refused);
  EXPECT_TRUE(c.Call({"COMMAND", "INFO", "debug"}).elements.at(0).is_null());
  ServerProcess local({"--enable-debug-command", "local"});
  ASSERT_GT(local.port(), 0);
  RespClient l(local.port());
  EXPECT_EQ(l.Call({"DEBUG", "SWEEP"}).str, "OK");
  EXPECT_EQ(l.Call({"COMMAND", "COUNT"}).integer, c.Call({"COMMAND", "COUNT"}).integer + 1);
  EXPECT_EQ(local.Terminate(), 0);
}

TEST_F(ProtocolTest, AuthRequired) {
  ServerProcess server({"--requirepass", "s3cret"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  EXPECT_EQ(c.Call({"PING"}).str, "NOAUTH Authentication required.");
  EXPECT_EQ(c.Call({"RL.CHECK", "k", "GCRA", "1", "1s"}).str, "NOAUTH Authentication required.");
  // As Redis: unknown commands and wrong arity are reported before authentication.
  EXPECT_EQ(c.Call({"NOPE"}).str, "ERR unknown command 'NOPE', with args beginning with: ");
  EXPECT_EQ(c.Call({"RL.CHECK", "k"}).str, "ERR wrong number of arguments for 'rl.check' command");
  EXPECT_EQ(c.Call({"AUTH", "wrong"}).str,
            "WRONGPASS invalid username-password pair or user is disabled.");
  EXPECT_EQ(c.Call({"HELLO", "3"}).str.rfind("NOAUTH HELLO must be called", 0), 0u);
  EXPECT_EQ(c.Call({"AUTH", "s3cret"}).str, "OK");
  EXPECT_EQ(c.Call({"PING"}).str, "PONG");
  EXPECT_EQ(c.Call({"RESET"}).str, "RESET");
  EXPECT_EQ(c.Call({"PING"}).str, "NOAUTH Authentication required.");
  EXPECT_EQ(c.Call({"AUTH", "default", "s3cret"}).str, "OK");

  RespClient h(server.port());
  EXPECT_EQ(h.Call({"HELLO", "3", "AUTH", "default", "nope"}).str,
            "WRONGPASS invalid username-password pair or user is disabled.");
  Reply ok = h.Call({"HELLO", "3", "AUTH", "default", "s3cret"});
  ASSERT_EQ(ok.type, '%');
  EXPECT_EQ(h.Call({"PING"}).str, "PONG");

  // Before AUTH the parser's limits are Redis's unauthenticated ones.
  RespClient big(server.port());
  big.SendRaw("*20\r\n");
  EXPECT_EQ(big.Read().str, "ERR Protocol error: unauthenticated multibulk length");
  EXPECT_TRUE(big.WaitClosed());

  // AUTH and RESET in a pipeline change the limits from the very next command, which the server
  // may have read ahead already: it is read again under the new limits.
  std::vector<std::string> twenty(20, "x");
  twenty[0] = "ECHO";
  RespClient piped(server.port());
  ASSERT_TRUE(piped.SendRaw(RespClient::Encode({"AUTH", "s3cret"}) + RespClient::Encode(twenty) +
                            RespClient::Encode({"PING"})));
  EXPECT_EQ(piped.Read().str, "OK");
  EXPECT_EQ(piped.Read().str, "ERR wrong number of arguments for 'echo' command");
  EXPECT_EQ(piped.Read().str, "PONG");
  ASSERT_TRUE(piped.SendRaw(RespClient::Encode({"RESET"}) + RespClient::Encode(twenty)));
  EXPECT_EQ(piped.Read().str, "RESET");
  EXPECT_EQ(piped.Read().str, "ERR Protocol error: unauthenticated multibulk length");
  EXPECT_TRUE(piped.WaitClosed());
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

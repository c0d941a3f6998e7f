// What the real server says about itself: a deleted policy's statistics go with it (on every I/O
// thread, totals kept), INFO's per-policy lines are bounded (the busiest shown, the rest
// counted), RL.POLICY HELP answers with help lines, every container's HELP lists what the
// command table dispatches, and CLIENT LIST lists every connected client
// of every I/O thread in Redis's format.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "resp_client.h"
#include "server_process.h"

namespace rl::test {
namespace {

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The value of `field:` in an INFO text, or "" when absent.
std::string Field(const std::string& info, const std::string& field) {
  size_t at = info.find("\n" + field + ":");
  if (at == std::string::npos) return "";
  at += field.size() + 2;
  return info.substr(at, info.find('\r', at) - at);
}

// Sends `commands` pipelined and reads every reply.
void Pipeline(RespClient& c, const std::vector<std::vector<std::string>>& commands) {
  std::string batch;
  for (const auto& cmd : commands) batch += RespClient::Encode(cmd);
  ASSERT_TRUE(c.SendRaw(batch));
  for (size_t i = 0; i < commands.size(); ++i) ASSERT_NE(c.Read().type, 'X') << i;
}

TEST(IntrospectionTest, DeletedPoliciesLeaveNoStatistics) {
  ServerProcess server({"--threads", "2"});
  ASSERT_GT(server.port(), 0);
  // Two clients: connections are handed out round-robin, so checks land on both I/O threads.
  RespClient a(server.port()), b(server.port());
  ASSERT_EQ(a.Call({"RL.POLICY", "SET", "keep", "GCRA", "10", "1s"}).str, "OK");
  ASSERT_EQ(a.Call({"RL.CHECK", "u", "POLICY", "keep"}).type, '*');
  const int kPolicies = 2000;
  for (int round = 0; round < kPolicies / 500; ++round) {
    std::vector<std::vector<std::string>> set, check, del;
    for (int i = round * 500; i < (round + 1) * 500; ++i) {
      std::string name = "gone" + std::to_string(i);
      set.push_back({"RL.POLICY", "SET", name, "GCRA", "10", "1s"});
      check.push_back({"RL.CHECK", "u", "POLICY", name});
      del.push_back({"RL.POLICY", "DEL", name});
    }
    Pipeline(a, set);
    Pipeline(a, check);
    Pipeline(b, check);
    Pipeline(b, del);
  }
  // Forgetting runs on each I/O thread after the DEL: poll.
  std::string stats;
  for (int i = 0; i < 100; ++i) {
    stats = a.Call({"INFO", "stats"}).str;
    if (Count(stats, "policy_gone") == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(Count(stats, "policy_gone"), 0u) << "lines of deleted policies";
  EXPECT_EQ(Field(stats, "policy_keep"),
            "checks=1,allowed=1,denied=0,shadow_denied=0,near_limit=0");
  // The server-wide totals still count every check that was made.
  EXPECT_EQ(Field(stats, "rl_checks"), std::to_string(1 + 2 * kPolicies));
  EXPECT_LT(stats.size(), 4096u);
  // A policy defined again under a deleted one's name counts afresh on both threads, although it
  // was the last policy each thread counted (the threads' memo of it went with it).
  const std::string last = "gone" + std::to_string(kPolicies - 1);
  ASSERT_EQ(a.Call({"RL.POLICY", "SET", last, "GCRA", "10", "1s"}).str, "OK");
  ASSERT_EQ(a.Call({"RL.CHECK", "u", "POLICY", last}).type, '*');
  ASSERT_EQ(b.Call({"RL.CHECK", "u", "POLICY", last}).type, '*');
  stats = a.Call({"INFO", "stats"}).str;
  EXPECT_EQ(Field(stats, "policy_" + last),
            "checks=2,allowed=2,denied=0,shadow_denied=0,near_limit=0");
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(IntrospectionTest, InfoShowsTheBusiestHundredPoliciesAndCountsTheRest) {
  ServerProcess server({"--threads", "1"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  const int kPolicies = 300;
  std::vector<std::vector<std::string>> set, check;
  for (int i = 0; i < kPolicies; ++i) {
    std::string name = "p" + std::to_string(1000 + i);
    set.push_back({"RL.POLICY", "SET", name, "GCRA", "10", "1s"});
    check.push_back({"RL.CHECK", "u", "POLICY", name});
  }
  Pipeline(c, set);
  Pipeline(c, check);
  // Five policies get a second check: they are the busiest and must be among the lines shown.
  for (int i : {7, 77, 150, 222, 299}) {
    ASSERT_EQ(c.Call({"RL.CHECK", "v", "POLICY", "p" + std::to_string(1000 + i)}).type, '*');
  }
  std::string stats = c.Call({"INFO", "stats"}).str;
  EXPECT_EQ(Count(stats, "\npolicy_p"), 100u);
  EXPECT_EQ(Field(stats, "policy_lines_omitted"), std::to_string(kPolicies - 100));
  for (int i : {7, 77, 150, 222, 299}) {
    EXPECT_EQ(Field(stats, "policy_p" + std::to_string(1000 + i)).substr(0, 9), "checks=2,") << i;
  }
  EXPECT_EQ(Field(stats, "rl_checks"), std::to_string(kPolicies + 5));
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(IntrospectionTest, RlPolicyHelpAnswersWithHelpLines) {
  ServerProcess server;
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  for (const char* spelling : {"HELP", "help"}) {
    Reply help = c.Call({"RL.POLICY", spelling});
    ASSERT_EQ(help.type, '*') << help.str;  // was "-ERR unknown subcommand 'HELP'..."
    std::vector<std::string> lines;
    for (const Reply& line : help.elements) lines.push_back(line.str);
    ASSERT_GE(lines.size(), 11u);
    EXPECT_EQ(lines[0], "RL.POLICY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    auto has = [&](const std::string& prefix) {
      for (const auto& l : lines) {
        if (l.rfind(prefix, 0) == 0) return true;
      }
      return false;
    };
    EXPECT_TRUE(has("SET <name> [CONCURRENCY <n> [LEASE <ttl>]] <limit> [<limit> ...] [SHADOW]"));
    EXPECT_TRUE(has("GET <name>"));
    EXPECT_TRUE(has("DEL <name>"));
    EXPECT_TRUE(has("LIST"));
    EXPECT_TRUE(has("HELP"));
    EXPECT_TRUE(has("    Prints this help."));
    EXPECT_TRUE(has("<limit> is: (TOKEN_BUCKET|GCRA|SLIDING_LOG|"));
  }
  EXPECT_EQ(c.Call({"RL.POLICY", "HELP", "extra"}).str,
            "ERR wrong number of arguments for 'rl.policy|help' command");
  EXPECT_EQ(c.Call({"RL.POLICY", "NOPE"}).str,
            "ERR unknown subcommand 'NOPE'. Try RL.POLICY HELP.");
  // Generated from the same rows as COMMAND DOCS, which lists it too.
  Reply docs = c.Call({"COMMAND", "DOCS", "rl.policy"});
  ASSERT_NE(docs.Get("rl.policy"), nullptr);
  EXPECT_NE(docs.Get("rl.policy")->Get("subcommands")->Get("rl.policy|help"), nullptr);
  EXPECT_EQ(server.Terminate(), 0);
}

// Every container's HELP comes from the command table (issue 13 item 5): it lists each
// subcommand COMMAND DOCS lists, in the table's order, with Redis's wording where the rows carry
// it. (Before, CLIENT, CONFIG and COMMAND HELP were hand-written lists that left out CLIENT
// NO-EVICT/NO-TOUCH and CONFIG SET/RESETSTAT/REWRITE, and COMMAND had no help row in its docs.)
TEST(IntrospectionTest, HelpListsWhatTheTableDispatches) {
  ServerProcess server;
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  for (const std::string container : {"client", "config", "command", "rl.policy"}) {
    std::string upper = container;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    Reply help = c.Call({upper, "HELP"});
    ASSERT_EQ(help.type, '*') << container << ": " << help.str;
    std::vector<std::string> lines;
    for (const Reply& line : help.elements) lines.push_back(line.str);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines[0], upper + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    Reply docs = c.Call({"COMMAND", "DOCS", container});
    const Reply* subs = docs.Get(container) ? docs.Get(container)->Get("subcommands") : nullptr;
    ASSERT_NE(subs, nullptr) << container;
    size_t at = 1;  // the subcommands appear in the table's order, each followed by its text
    for (size_t i = 0; i + 1 < subs->elements.size(); i += 2) {
      std::string name = subs->elements[i].str.substr(container.size() + 1);
      for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      while (at < lines.size() && lines[at].rfind(name, 0) != 0) ++at;
      ASSERT_LT(at + 1, lines.size()) << container << " HELP lacks " << name;
      EXPECT_EQ(lines[at + 1].rfind("    ", 0), 0u) << lines[at + 1];
    }
  }
  Reply client = c.Call({"CLIENT", "HELP"});
  ASSERT_EQ(client.elements.size(), 19u);
  EXPECT_EQ(client.elements[1].str, "SETNAME <name>");
  EXPECT_EQ(client.elements[2].str, "    Assign the name <name> to the current connection.");
  EXPECT_EQ(client.elements[13].str, "NO-EVICT (ON|OFF)");
  EXPECT_EQ(client.elements[14].str, "    Accepted for compatibility; no effect.");
  EXPECT_EQ(client.elements[18].str, "    Print this help.");
  Reply command = c.Call({"COMMAND", "HELP"});
  ASSERT_EQ(command.elements.size(), 13u);
  EXPECT_EQ(command.elements[1].str, "(no subcommand)");
  EXPECT_EQ(command.elements[2].str, "    Return details about all commands.");
  EXPECT_EQ(command.elements[5].str, "DOCS [<command-name> ...]");
  Reply config = c.Call({"CONFIG", "HELP"});
  ASSERT_EQ(config.elements.size(), 11u);
  EXPECT_EQ(config.elements[1].str, "GET <pattern>");
  EXPECT_EQ(config.elements[3].str, "SET <parameter> <value>");
  // The COMMAND subcommands dispatch through the table, arity included.
  EXPECT_EQ(c.Call({"COMMAND", "COUNT", "x"}).str,
            "ERR wrong number of arguments for 'command|count' command");
  EXPECT_EQ(c.Call({"COMMAND", "HELP", "x"}).str,
            "ERR wrong number of arguments for 'command|help' command");
  EXPECT_EQ(c.Call({"COMMAND", "NOPE"}).str, "ERR unknown subcommand 'NOPE'. Try COMMAND HELP.");
  EXPECT_EQ(c.Call({"COMMAND", "COUNT"}).integer,
            static_cast<int64_t>(c.Call({"COMMAND", "LIST"}).elements.size()));
  Reply docs = c.Call({"COMMAND", "DOCS", "command"});
  ASSERT_NE(docs.Get("command"), nullptr);
  EXPECT_NE(docs.Get("command")->Get("subcommands")->Get("command|help"), nullptr);
  EXPECT_EQ(server.Terminate(), 0);
}

// "k=v k=v ..." -> the keys in order, and the values by key.
std::vector<std::pair<std::string, std::string>> Fields(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t at = 0;
  while (at < line.size()) {
    size_t end = line.find(' ', at);
    if (end == std::string::npos) end = line.size();
    std::string field = line.substr(at, end - at);
    size_t eq = field.find('=');
    out.emplace_back(field.substr(0, eq), eq == std::string::npos ? "" : field.substr(eq + 1));
    at = end + 1;
  }
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string Value(const std::vector<std::pair<std::string, std::string>>& fields,
                  const std::string& key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return "(missing)";
}

TEST(IntrospectionTest, ClientListShowsEveryClientOfEveryThreadInRedisFormat) {
  ServerProcess server({"--threads", "2"});
  ASSERT_GT(server.port(), 0);
  std::vector<std::unique_ptr<RespClient>> clients;
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    clients.push_back(std::make_unique<RespClient>(server.port()));
    ids.push_back(clients.back()->Call({"CLIENT", "ID"}).integer);
    ASSERT_EQ(clients.back()->Call({"CLIENT", "SETNAME", "c" + std::to_string(i)}).str, "OK");
  }
  ASSERT_EQ(clients[3]->Call({"HELLO", "3"}).type, '%');
  ASSERT_EQ(clients[4]->Call({"CLIENT", "SETINFO", "LIB-NAME", "mylib"}).str, "OK");

  std::string list = clients[0]->Call({"CLIENT", "LIST"}).str;
  std::vector<std::string> lines = Lines(list);
  ASSERT_EQ(lines.size(), 5u) << list;  // was: the caller only
  const std::vector<std::string> kRedisFields = {
      "id",        "addr",     "laddr",     "fd",    "name", "age",      "idle",
      "flags",     "db",       "sub",       "psub",  "ssub", "multi",    "qbuf",
      "qbuf-free", "argv-mem", "multi-mem", "obl",   "oll",  "omem",     "tot-mem",
      "events",    "cmd",      "user",      "redir", "resp", "lib-name", "lib-ver"};
  for (size_t i = 0; i < lines.size(); ++i) {
    auto fields = Fields(lines[i]);
    std::vector<std::string> keys;
    for (const auto& [k, v] : fields) keys.push_back(k);
    EXPECT_EQ(keys, kRedisFields) << lines[i];
    EXPECT_EQ(Value(fields, "id"), std::to_string(ids[i])) << "oldest first";
    EXPECT_EQ(Value(fields, "name"), "c" + std::to_string(i));
    EXPECT_EQ(Value(fields, "resp"), i == 3 ? "3" : "2");
    EXPECT_EQ(Value(fields, "cmd"), i == 0   ? "client|list"
                                    : i == 3 ? "hello"
                                    : i == 4 ? "client|setinfo"
                                             : "client|setname");
    EXPECT_EQ(Value(fields, "lib-name"), i == 4 ? "mylib" : "");
    EXPECT_NE(Value(fields, "fd"), "-1");
  }
  // Filters, as Redis.
  lines = Lines(clients[1]
                    ->Call({"CLIENT", "LIST", "ID", std::to_string(ids[2]), std::to_string(ids[4])})
                    .str);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(Value(Fields(lines[0]), "name"), "c2");
  EXPECT_EQ(Lines(clients[1]->Call({"CLIENT", "LIST", "TYPE", "normal"}).str).size(), 5u);
  EXPECT_EQ(clients[1]->Call({"CLIENT", "LIST", "TYPE", "pubsub"}).str, "");
  EXPECT_EQ(clients[1]->Call({"CLIENT", "LIST", "TYPE", "bogus"}).str,
            "ERR Unknown client type 'bogus'");
  EXPECT_EQ(clients[1]->Call({"CLIENT", "LIST", "ID", "x"}).str, "ERR Invalid client ID");
  // A client that leaves leaves the list.
  clients[2].reset();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = Lines(clients[0]->Call({"CLIENT", "LIST"}).str).size() == 4;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone);
  // CLIENT INFO is the caller's own line in the same format.
  auto info = Fields(Lines(clients[4]->Call({"CLIENT", "INFO"}).str).at(0));
  EXPECT_EQ(Value(info, "name"), "c4");
  EXPECT_EQ(Value(info, "cmd"), "client|info");
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace rl::test

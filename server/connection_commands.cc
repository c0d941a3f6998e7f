// The connection commands: what clients send unasked and what sets up or ends a session (PING,
// ECHO, HELLO, AUTH, SELECT, CLIENT, QUIT, RESET). Texts and shapes follow Redis 7.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "command_families.h"
#include "command_table.h"
#include "server.h"
#include "server_state.h"
#include "transaction.h"

namespace rl::server {
namespace {

constexpr std::string_view kWrongPass =
    "WRONGPASS invalid username-password pair or user is disabled.";

void Ping(CommandContext& ctx) {
  if (ctx.args.size() > 2) return WriteWrongArity(ctx.w, "ping");
  if (ctx.args.size() == 2) return ctx.w.Bulk(ctx.args[1]);
  ctx.w.SimpleString("PONG");
}

void Echo(CommandContext& ctx) { ctx.w.Bulk(ctx.args[1]); }

// Checks a username/password pair against requirepass. With no password configured, the
// default user takes any password (Redis's "nopass").
bool CheckCredentials(const ServerState& state, std::string_view user, std::string_view pass) {
  bool user_ok = EqualsIgnoreCase(user, "default");
  if (state.config.requirepass.empty()) return user_ok;
  bool pass_ok = PasswordMatches(pass, state.config.requirepass);
  return user_ok && pass_ok;
}

// A wrong password costs time: its reply, and everything the client sent after it, waits
// 100 ms, doubling with each wrong one in a row up to 1 s, and the tenth in a row closes the
// connection. A pipeline of guesses gets a handful per second instead of tens of thousands, and
// only that connection waits (the pause is a timer, see Connection::Pause).
constexpr int kAuthFailuresBeforeClose = 10;
constexpr int64_t kAuthFirstPauseMs = 100;
constexpr int64_t kAuthMaxPauseMs = 1000;

void FailAuth(CommandContext& ctx) {
  ClientSession& s = ctx.session;
  ++s.auth_failures;
  ctx.state.global.auth_failures.fetch_add(1, std::memory_order_relaxed);
  s.pause_ms = std::min(kAuthMaxPauseMs, kAuthFirstPauseMs << std::min(s.auth_failures - 1, 4));
  if (s.auth_failures >= kAuthFailuresBeforeClose) {
    ctx.state.global.auth_failure_disconnects.fetch_add(1, std::memory_order_relaxed);
    s.close_after_reply = true;
  }
  ctx.w.Error(kWrongPass);
}

void Auth(CommandContext& ctx) {
  if (ctx.args.size() > 3) return WriteSyntaxError(ctx.w);
  if (ctx.args.size() == 2 && ctx.state.config.requirepass.empty()) {
    return ctx.w.Error(
        "ERR AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?");
  }
  std::string_view user = ctx.args.size() == 3 ? ctx.args[1] : "default";
  std::string_view pass = ctx.args.back();
  if (!CheckCredentials(ctx.state, user, pass)) return FailAuth(ctx);
  ctx.session.authenticated = true;
  ctx.session.auth_failures = 0;
  ctx.w.SimpleString("OK");
}

bool ValidClientName(std::string_view name) {
  for (char c : name) {
    if (c < '!' || c > '~') return false;  // Redis: no spaces, newlines or specials
  }
  return true;
}

void Hello(CommandContext& ctx) {
  auto& args = ctx.args;
  int64_t proto = ctx.session.protocol;
  if (args.size() >= 2) {
    if (!ParseInt64(args[1], &proto)) {
      return ctx.w.Error("ERR Protocol version is not an integer or out of range");
    }
    if (proto < 2 || proto > 3) return ctx.w.Error("NOPROTO unsupported protocol version");
  }
  std::string_view setname;
  bool has_setname = false;
  for (size_t i = 2; i < args.size(); ++i) {
    bool more = i + 1 < args.size();
    if (EqualsIgnoreCase(args[i], "auth") && i + 2 < args.size()) {
      if (!CheckCredentials(ctx.state, args[i + 1], args[i + 2])) return FailAuth(ctx);
      ctx.session.authenticated = true;
      ctx.session.auth_failures = 0;
      i += 2;
    } else if (EqualsIgnoreCase(args[i], "setname") && more) {
      setname = args[i + 1];
      has_setname = true;
      if (!ValidClientName(setname)) {
        return ctx.w.Error(
            "ERR Client names cannot contain spaces, newlines or special characters.");
      }
      ++i;
    } else {
      std::string msg = fmt::format("ERR Syntax error in HELLO option '{}'", args[i]);
      return ctx.w.Error(msg);
    }
  }
  if (!ctx.session.authenticated) {
    return ctx.w.Error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
        "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
        "select the RESP protocol version at the same time");
  }
  ctx.state.clients.Update(ctx.session, [&](ClientSession& s) {
    if (has_setname) s.name = std::string(setname);
    s.protocol = static_cast<int>(proto);
  });
  ctx.w.set_protocol(ctx.session.protocol);
  resp::Writer& w = ctx.w;
  w.MapHeader(7);
  w.Bulk("server");
  w.Bulk("redis");
  w.Bulk("version");
  w.Bulk(kRedisCompatVersion);
  w.Bulk("proto");
  w.Integer(proto);
  w.Bulk("id");
  w.Integer(static_cast<int64_t>(ctx.session.id));
  w.Bulk("mode");
  w.Bulk("standalone");
  w.Bulk("role");
  w.Bulk("master");
  w.Bulk("modules");
  w.ArrayHeader(0);
}

void Select(CommandContext& ctx) {
  int64_t db = 0;
  if (!ParseInt64(ctx.args[1], &db))
    return ctx.w.Error("ERR value is not an integer or out of range");
  if (db != 0) return ctx.w.Error("ERR DB index is out of range");
  ctx.w.SimpleString("OK");
}

// One client in Redis 7's CLIENT LIST / CLIENT INFO format. Fields Redis has and rl does not
// (pub/sub, databases) carry Redis's values for a plain client. Another thread's session is read
// only inside ClientRegistry::ForEach.
void AppendClientLine(const ClientSession& s, int64_t now, std::string* out) {
  const CommandSpec* cmd = s.last_command.load(std::memory_order_relaxed);
  const size_t used = s.query_used.load(std::memory_order_relaxed);
  const size_t size = s.query_size.load(std::memory_order_relaxed);
  const size_t omem = s.output_pending.load(std::memory_order_relaxed);
  const int64_t multi = s.multi_queued.load(std::memory_order_relaxed);
  const size_t multi_mem = s.multi_mem.load(std::memory_order_relaxed);
  fmt::format_to(
      std::back_inserter(*out),
      "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db=0 sub=0 psub=0 ssub=0 "
      "multi={} qbuf={} qbuf-free={} argv-mem=0 multi-mem={} obl=0 oll=0 omem={} tot-mem={} "
      "events={} cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={}\n",
      s.id, s.addr, s.laddr, s.fd, s.name, (now - s.created_ms) / 1000,
      (now - s.last_active_ms.load(std::memory_order_relaxed)) / 1000, multi >= 0 ? "x" : "N",
      multi, used, size > used ? size - used : 0, multi_mem, omem, size + omem + multi_mem,
      omem > 0 ? "rw" : "r",
      cmd != nullptr ? std::string_view(cmd->name) : std::string_view("NULL"), s.protocol,
      s.lib_name, s.lib_ver);
}

void ClientSetName(CommandContext& ctx) {
  if (!ValidClientName(ctx.args[2])) {
    return ctx.w.Error("ERR Client names cannot contain spaces, newlines or special characters.");
  }
  ctx.state.clients.Update(ctx.session,
                           [&](ClientSession& s) { s.name = std::string(ctx.args[2]); });
  ctx.w.SimpleString("OK");
}

void ClientGetName(CommandContext& ctx) {
  if (ctx.session.name.empty()) return ctx.w.Null();
  ctx.w.Bulk(ctx.session.name);
}

void ClientId(CommandContext& ctx) { ctx.w.Integer(static_cast<int64_t>(ctx.session.id)); }

void ClientSetInfo(CommandContext& ctx) {
  if (!ValidClientName(ctx.args[3])) {
    return ctx.w.Error(
        "ERR lib-name and lib-ver cannot contain spaces, newlines or special "
        "characters.");
  }
  if (EqualsIgnoreCase(ctx.args[2], "lib-name")) {
    ctx.state.clients.Update(ctx.session,
                             [&](ClientSession& s) { s.lib_name = std::string(ctx.args[3]); });
  } else if (EqualsIgnoreCase(ctx.args[2], "lib-ver")) {
    ctx.state.clients.Update(ctx.session,
                             [&](ClientSession& s) { s.lib_ver = std::string(ctx.args[3]); });
  } else {
    return ctx.w.Error(fmt::format("ERR Unrecognized option '{}'", ctx.args[2]));
  }
  ctx.w.SimpleString("OK");
}

void ClientInfo(CommandContext& ctx) {
  std::string line;
  AppendClientLine(ctx.session, ctx.state.clock->NowMs(), &line);
  ctx.w.Verbatim("txt", line);
}

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]: every connected client of
// every I/O thread, one line each, oldest first. rl has only normal clients.
void ClientList(CommandContext& ctx) {
  auto& args = ctx.args;
  bool none = false;  // TYPE master|replica|pubsub: no such clients here
  std::vector<uint64_t> ids;
  for (size_t i = 2; i < args.size(); ++i) {
    if (EqualsIgnoreCase(args[i], "type") && i + 1 < args.size()) {
      std::string_view type = args[++i];
      if (EqualsIgnoreCase(type, "normal")) continue;
      if (EqualsIgnoreCase(type, "master") || EqualsIgnoreCase(type, "replica") ||
          EqualsIgnoreCase(type, "slave") || EqualsIgnoreCase(type, "pubsub")) {
        none = true;
        continue;
      }
      return ctx.w.Error(fmt::format("ERR Unknown client type '{}'", type));
    }
    if (EqualsIgnoreCase(args[i], "id") && i + 1 < args.size()) {
      for (++i; i < args.size(); ++i) {
        int64_t id = 0;
        if (!ParseInt64(args[i], &id) || id < 1) return ctx.w.Error("ERR Invalid client ID");
        ids.push_back(static_cast<uint64_t>(id));
      }
      break;
    }
    return WriteSyntaxError(ctx.w);
  }
  std::string out;
  if (!none) {
    const int64_t now = ctx.state.clock->NowMs();
    ctx.state.clients.ForEach([&](const ClientSession& s) {
      if (ids.empty() || std::find(ids.begin(), ids.end(), s.id) != ids.end()) {
        AppendClientLine(s, now, &out);
      }
    });
  }
  ctx.w.Verbatim("txt", out);
}

void ClientOk(CommandContext& ctx) { ctx.w.SimpleString("OK"); }

void Quit(CommandContext& ctx) {
  ctx.w.SimpleString("OK");
  ctx.session.close_after_reply = true;
}

void Reset(CommandContext& ctx) {
  if (ctx.txn != nullptr) ctx.txn->Reset();  // discards MULTI, forgets WATCHed keys
  ctx.state.clients.Update(ctx.session, [](ClientSession& s) {
    s.protocol = 2;
    s.name.clear();
  });
  ctx.w.set_protocol(2);
  ctx.session.authenticated = ctx.state.config.requirepass.empty();
  ctx.w.SimpleString("RESET");
}

// CLIENT and its subcommands, with Redis's HELP wording.
CommandSpec ClientRow(std::string_view g) {
  CommandSpec client =
      Row(g, "client", -2, 0, nullptr, "A container for client commands.", "2.4.0");
  client.subcommands.push_back(Row(g, "client|setname", 3, kCmdFast, ClientSetName,
                                   "Sets the connection name.", "2.6.9",
                                   {Arg("connection-name", "string")}));
  client.subcommands.push_back(Row(g, "client|getname", 2, kCmdFast, ClientGetName,
                                   "Returns the name of the connection.", "2.6.9"));
  client.subcommands.push_back(Row(g, "client|id", 2, kCmdFast, ClientId,
                                   "Returns the unique client ID of the connection.", "5.0.0"));
  client.subcommands.push_back(
      Row(g, "client|setinfo", 4, kCmdFast, ClientSetInfo,
          "Sets information specific to the client or connection.", "7.2.0",
          {ArgDoc{"attr",
                  "oneof",
                  "",
                  0,
                  {Arg("libname", "string", 0, "LIB-NAME"), Arg("libver", "string", 0, "LIB-VER")}},
           Arg("value", "string")}));
  client.subcommands.push_back(Row(g, "client|info", 2, kCmdFast, ClientInfo,
                                   "Returns information about the connection.", "6.2.0"));
  client.subcommands.push_back(
      Row(g, "client|list", -2, kCmdAdmin, ClientList, "Lists open connections.", "2.4.0",
          {Arg("client-type", "string", kArgOptional, "TYPE"),
           Arg("client-id", "integer", kArgOptional | kArgMultiple, "ID")}));
  client.subcommands.push_back(Row(g, "client|no-evict", 3, kCmdFast, ClientOk,
                                   "Accepted for compatibility; no effect.", "7.0.0",
                                   {Arg("enabled", "string")}));
  client.subcommands.push_back(Row(g, "client|no-touch", 3, kCmdFast, ClientOk,
                                   "Accepted for compatibility; no effect.", "7.2.0",
                                   {Arg("enabled", "string")}));
  client.subcommands.push_back(Row(g, "client|help", 2, kCmdFast, WriteHelp,
                                   "Returns helpful text about the different subcommands.",
                                   "5.0.0"));
  // CLIENT HELP in Redis's words (the usage when it reads better than the generated one).
  static constexpr std::string_view kHelp[][3] = {
      {"client|setname", "SETNAME <name>", "Assign the name <name> to the current connection."},
      {"client|getname", "", "Return the name of the current connection."},
      {"client|id", "", "Return the ID of the current connection."},
      {"client|setinfo", "SETINFO <LIB-NAME|LIB-VER> <value>",
       "Set client library name or version."},
      {"client|info", "", "Return information about the current client connection."},
      {"client|list", "LIST [TYPE <normal|master|replica|pubsub>] [ID <id> [<id> ...]]",
       "Return information about client connections (all of them unless filtered)."},
      {"client|no-evict", "NO-EVICT (ON|OFF)", ""},
      {"client|no-touch", "NO-TOUCH (ON|OFF)", ""}};
  for (CommandSpec& sub : client.subcommands) {
    for (const auto& [name, usage, text] : kHelp) {
      if (sub.name != name) continue;
      sub.help_usage = usage;
      sub.help_summary = text;
    }
  }
  return client;
}

}  // namespace

void AddConnectionCommands(std::vector<CommandSpec>* rows) {
  constexpr std::string_view g = "connection";
  rows->push_back(Row(g, "ping", -1, kCmdFast | kCmdStale, Ping,
                      "Returns the server's liveliness response.", "1.0.0",
                      {Arg("message", "string", kArgOptional)}));
  rows->push_back(Row(g, "echo", 2, kCmdFast, Echo, "Returns the given string.", "1.0.0",
                      {Arg("message", "string")}));
  {
    ArgDoc auth{"auth",
                "block",
                "AUTH",
                kArgOptional,
                {Arg("username", "string"), Arg("password", "string")}};
    ArgDoc setname = Arg("clientname", "string", kArgOptional, "SETNAME");
    ArgDoc block{
        "arguments", "block", "", kArgOptional, {Arg("protover", "integer"), auth, setname}};
    rows->push_back(Row(g, "hello", -1, kCmdNoAuth | kCmdFast | kCmdStale | kCmdLoading, Hello,
                        "Handshakes with the server: protocol (2 or 3), AUTH and SETNAME.", "6.0.0",
                        {block}));
  }
  rows->push_back(Row(g, "auth", -2, kCmdNoAuth | kCmdFast | kCmdStale | kCmdLoading, Auth,
                      "Authenticates the connection.", "1.0.0",
                      {Arg("username", "string", kArgOptional), Arg("password", "string")}));
  rows->push_back(Row(g, "select", 2, kCmdFast, Select,
                      "Changes the selected database (only 0 exists).", "1.0.0",
                      {Arg("index", "integer")}));
  rows->push_back(ClientRow(g));
  // QUIT and RESET run at once inside MULTI, as in Redis.
  rows->push_back(Row(g, "quit", -1, kCmdNoAuth | kCmdFast | kCmdLoading | kCmdStale | kCmdNoQueue,
                      Quit, "Closes the connection.", "1.0.0"));
  rows->push_back(Row(g, "reset", 1, kCmdNoAuth | kCmdFast | kCmdLoading | kCmdStale | kCmdNoQueue,
                      Reset, "Resets the connection.", "6.2.0"));
}

}  // namespace rl::server

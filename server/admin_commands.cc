// What clients send unasked and what people type: PING, ECHO, HELLO, AUTH, SELECT, CLIENT,
// COMMAND, INFO, CONFIG GET, TIME, DBSIZE, QUIT, RESET. Texts and shapes follow Redis 7.
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <map>
#include <string>

#include <fmt/format.h>

#include "absl/container/flat_hash_map.h"
#include "command_table.h"
#include "server.h"
#include "server_state.h"
#include "snapshot.h"

namespace rl::server {
namespace {

constexpr std::string_view kRedisCompatVersion = "7.0.0";
constexpr std::string_view kWrongPass = "WRONGPASS invalid username-password pair or user is disabled.";

void Ping(CommandContext& ctx) {
  if (ctx.args.size() > 2) return WriteWrongArity(ctx.w, "ping");
  if (ctx.args.size() == 2) return ctx.w.Bulk(ctx.args[1]);
  ctx.w.SimpleString("PONG");
}

void Echo(CommandContext& ctx) { ctx.w.Bulk(ctx.args[1]); }

// Checks a username/password pair against requirepass. With no password configured, the
// default user takes any password (Redis's "nopass").
bool CheckCredentials(const ServerState& state, std::string_view user, std::string_view pass) {
  bool user_ok = EqualsLower(user, "default");
  if (state.config.requirepass.empty()) return user_ok;
  bool pass_ok = PasswordMatches(pass, state.config.requirepass);
  return user_ok && pass_ok;
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
  if (!CheckCredentials(ctx.state, user, pass)) return ctx.w.Error(kWrongPass);
  ctx.session.authenticated = true;
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
    if (EqualsLower(args[i], "auth") && i + 2 < args.size()) {
      if (!CheckCredentials(ctx.state, args[i + 1], args[i + 2])) {
        return ctx.w.Error(kWrongPass);
      }
      ctx.session.authenticated = true;
      i += 2;
    } else if (EqualsLower(args[i], "setname") && more) {
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
  if (!ParseInt64(ctx.args[1], &db)) return ctx.w.Error("ERR value is not an integer or out of range");
  if (db != 0) return ctx.w.Error("ERR DB index is out of range");
  ctx.w.SimpleString("OK");
}

// One client in Redis 7's CLIENT LIST / CLIENT INFO format. Fields Redis has and rl does not
// (pub/sub, MULTI, databases) carry Redis's values for a plain client. Another thread's session
// is read only inside ClientRegistry::ForEach.
void AppendClientLine(const ClientSession& s, int64_t now, std::string* out) {
  const CommandSpec* cmd = s.last_command.load(std::memory_order_relaxed);
  const size_t used = s.query_used.load(std::memory_order_relaxed);
  const size_t size = s.query_size.load(std::memory_order_relaxed);
  const size_t omem = s.output_pending.load(std::memory_order_relaxed);
  fmt::format_to(
      std::back_inserter(*out),
      "id={} addr={} laddr={} fd={} name={} age={} idle={} flags=N db=0 sub=0 psub=0 ssub=0 "
      "multi=-1 qbuf={} qbuf-free={} argv-mem=0 multi-mem=0 obl=0 oll=0 omem={} tot-mem={} "
      "events={} cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={}\n",
      s.id, s.addr, s.laddr, s.fd, s.name, (now - s.created_ms) / 1000,
      (now - s.last_active_ms.load(std::memory_order_relaxed)) / 1000, used,
      size > used ? size - used : 0, omem, size + omem, omem > 0 ? "rw" : "r",
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
    return ctx.w.Error("ERR lib-name and lib-ver cannot contain spaces, newlines or special "
                       "characters.");
  }
  if (EqualsLower(ctx.args[2], "lib-name")) {
    ctx.state.clients.Update(ctx.session,
                             [&](ClientSession& s) { s.lib_name = std::string(ctx.args[3]); });
  } else if (EqualsLower(ctx.args[2], "lib-ver")) {
    ctx.state.clients.Update(ctx.session,
                             [&](ClientSession& s) { s.lib_ver = std::string(ctx.args[3]); });
  } else {
    return ctx.w.Error(fmt::format("ERR Unrecognized option '{}'", ctx.args[2]));
  }
  ctx.w.SimpleString("OK");
}

void ClientInfo(CommandContext& ctx) {
  std::string line;
  AppendClientLine(ctx.session, SteadyNowMs(), &line);
  ctx.w.Verbatim("txt", line);
}

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]: every connected client of
// every I/O thread, one line each, oldest first. rl has only normal clients.
void ClientList(CommandContext& ctx) {
  auto& args = ctx.args;
  bool none = false;  // TYPE master|replica|pubsub: no such clients here
  std::vector<uint64_t> ids;
  for (size_t i = 2; i < args.size(); ++i) {
    if (EqualsLower(args[i], "type") && i + 1 < args.size()) {
      std::string_view type = args[++i];
      if (EqualsLower(type, "normal")) continue;
      if (EqualsLower(type, "master") || EqualsLower(type, "replica") ||
          EqualsLower(type, "slave") || EqualsLower(type, "pubsub")) {
        none = true;
        continue;
      }
      return ctx.w.Error(fmt::format("ERR Unknown client type '{}'", type));
    }
    if (EqualsLower(args[i], "id") && i + 1 < args.size()) {
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
    const int64_t now = SteadyNowMs();
    ctx.state.clients.ForEach([&](const ClientSession& s) {
      if (ids.empty() || std::find(ids.begin(), ids.end(), s.id) != ids.end()) {
        AppendClientLine(s, now, &out);
      }
    });
  }
  ctx.w.Verbatim("txt", out);
}

void ClientOk(CommandContext& ctx) { ctx.w.SimpleString("OK"); }

void ClientHelp(CommandContext& ctx) {
  // clang-format off
  static constexpr std::string_view kLines[] = {
      "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "GETNAME", "    Return the name of the current connection.",
      "ID", "    Return the ID of the current connection.",
      "INFO", "    Return information about the current client connection.",
      "LIST [TYPE <normal|master|replica|pubsub>] [ID <id> [<id> ...]]",
      "    Return information about client connections (all of them unless filtered).",
      "SETNAME <name>", "    Assign the name <name> to the current connection.",
      "SETINFO <LIB-NAME|LIB-VER> <value>", "    Set client library name or version.",
      "HELP", "    Print this help."};
  // clang-format on
  ctx.w.ArrayHeader(std::size(kLines));
  for (std::string_view line : kLines) ctx.w.SimpleString(line);
}

void Command(CommandContext& ctx) {
  const auto& rows = ctx.state.commands.rows();
  auto& args = ctx.args;
  if (args.size() == 1) {
    ctx.w.ArrayHeader(rows.size());
    for (const CommandSpec& row : rows) CommandTable::WriteInfo(ctx.w, row);
    return;
  }
  std::string_view sub = args[1];
  if (EqualsLower(sub, "count")) {
    if (args.size() != 2) return WriteWrongArity(ctx.w, "command|count");
    return ctx.w.Integer(static_cast<int64_t>(rows.size()));
  }
  if (EqualsLower(sub, "list")) {
    ctx.w.ArrayHeader(rows.size());
    for (const CommandSpec& row : rows) ctx.w.Bulk(row.name);
    return;
  }
  if (EqualsLower(sub, "info")) {
    if (args.size() == 2) {
      ctx.w.ArrayHeader(rows.size());
      for (const CommandSpec& row : rows) CommandTable::WriteInfo(ctx.w, row);
      return;
    }
    ctx.w.ArrayHeader(args.size() - 2);
    for (size_t i = 2; i < args.size(); ++i) {
      const CommandSpec* spec = ctx.state.commands.Find(args[i]);
      if (spec == nullptr) {
        ctx.w.NullArray();
      } else {
        CommandTable::WriteInfo(ctx.w, *spec);
      }
    }
    return;
  }
  if (EqualsLower(sub, "docs")) {
    if (args.size() == 2) {
      ctx.w.MapHeader(rows.size());
      for (const CommandSpec& row : rows) {
        ctx.w.Bulk(row.name);
        CommandTable::WriteDocs(ctx.w, row);
      }
      return;
    }
    // Unknown names are left out, as Redis does.
    std::vector<const CommandSpec*> found;
    for (size_t i = 2; i < args.size(); ++i) {
      if (const CommandSpec* spec = ctx.state.commands.Find(args[i])) found.push_back(spec);
    }
    ctx.w.MapHeader(found.size());
    for (const CommandSpec* spec : found) {
      ctx.w.Bulk(spec->name);
      CommandTable::WriteDocs(ctx.w, *spec);
    }
    return;
  }
  if (EqualsLower(sub, "help")) {
    static constexpr std::string_view kLines[] = {
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)", "    Return details about all commands.",
        "COUNT", "    Return the total number of commands in this server.",
        "LIST", "    Return a list of all commands in this server.",
        "INFO [<command-name> ...]", "    Return details about multiple commands.",
        "DOCS [<command-name> ...]", "    Return documentation details about multiple commands.",
        "HELP", "    Print this help."};
    ctx.w.ArrayHeader(std::size(kLines));
    for (std::string_view line : kLines) ctx.w.SimpleString(line);
    return;
  }
  WriteUnknownSubcommand(ctx.w, sub, "command");
}

int64_t ResidentBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

std::string HumanBytes(uint64_t n) {
  if (n >= (1ull << 30)) return fmt::format("{:.2f}G", n / double(1ull << 30));
  if (n >= (1ull << 20)) return fmt::format("{:.2f}M", n / double(1ull << 20));
  if (n >= (1ull << 10)) return fmt::format("{:.2f}K", n / double(1ull << 10));
  return fmt::format("{}B", n);
}

// At most this many policy_* lines in INFO: with thousands of policies the section would be
// megabytes built on an I/O thread while its other clients wait. /metrics has them all.
constexpr size_t kInfoMaxPolicyLines = 100;

// The policy_<name> lines of the busiest policies (most checks), in name order, then how many
// were left out. Linear in the number of policies: no sort of them all.
void WritePolicyLines(const absl::flat_hash_map<std::string, PolicyCounters>& per_policy,
                      std::string* out) {
  std::vector<const std::pair<const std::string, PolicyCounters>*> rows;
  rows.reserve(per_policy.size());
  for (const auto& entry : per_policy) rows.push_back(&entry);
  auto busier = [](const auto* a, const auto* b) {
    return a->second.checks != b->second.checks ? a->second.checks > b->second.checks
                                                : a->first < b->first;
  };
  const size_t shown = std::min(rows.size(), kInfoMaxPolicyLines);
  if (shown < rows.size()) {
    std::nth_element(rows.begin(), rows.begin() + static_cast<ptrdiff_t>(shown), rows.end(),
                     busier);
    rows.resize(shown);
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  auto o = std::back_inserter(*out);
  for (const auto* row : rows) {
    const PolicyCounters& c = row->second;
    // "" counts inline limits, as policy "(inline)".
    fmt::format_to(o, "policy_{}:checks={},allowed={},denied={},shadow_denied={},near_limit={}\r\n",
                   row->first.empty() ? "(inline)" : row->first, c.checks, c.allowed, c.denied,
                   c.shadow_denied, c.near_limit);
  }
  if (shown < per_policy.size()) {
    fmt::format_to(o, "policy_lines_omitted:{}\r\n", per_policy.size() - shown);
  }
}

void Info(CommandContext& ctx) {
  ServerState& st = ctx.state;
  bool all = ctx.args.size() == 1;
  auto want = [&](std::string_view section) {
    if (all) return true;
    for (size_t i = 1; i < ctx.args.size(); ++i) {
      if (EqualsLower(ctx.args[i], section) || EqualsLower(ctx.args[i], "all") ||
          EqualsLower(ctx.args[i], "everything") || EqualsLower(ctx.args[i], "default")) {
        return true;
      }
    }
    return false;
  };
  std::string out;
  auto o = std::back_inserter(out);
  int64_t uptime_s = (SteadyNowMs() - st.start_steady_ms) / 1000;
  if (want("server")) {
    fmt::format_to(o,
                   "# Server\r\nredis_version:{}\r\nrl_version:{}\r\nredis_mode:standalone\r\n"
                   "os:Linux\r\narch_bits:64\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\n"
                   "run_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\n"
                   "io_threads_active:{}\r\nexecutable:rl-server\r\nconfig_file:{}\r\n\r\n",
                   kRedisCompatVersion, RL_VERSION, getpid(), st.run_id, st.port, uptime_s,
                   uptime_s / 86400, st.config.threads, st.config.config_file);
  }
  if (want("clients")) {
    fmt::format_to(o,
                   "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:0\r\n"
                   "client_output_limit:{}\r\nclients_query_buffer_bytes:{}\r\n"
                   "client_query_buffer_total:{}\r\nclient_query_buffer_limit:{}\r\n"
                   "proto_max_bulk_len:{}\r\n\r\n",
                   st.global.connected_clients.load(), st.config.maxclients,
                   st.config.client_output_limit, st.global.client_query_bytes.load(),
                   st.config.client_query_total, st.config.client_query_limit,
                   st.config.proto_max_bulk_len);
  }
  rl::LimiterStats ls = st.limiter->Stats();
  if (want("memory")) {
    int64_t rss = ResidentBytes();
    fmt::format_to(o,
                   "# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\n"
                   "used_memory_rss:{}\r\nused_memory_rss_human:{}\r\nmaxmemory:{}\r\n"
                   "maxmemory_human:{}\r\nmaxmemory_policy:evict-least-valuable\r\n"
                   "max_keys:{}\r\noverflow_mode:{}\r\n\r\n",
                   ls.memory_bytes, HumanBytes(ls.memory_bytes), rss, HumanBytes(rss),
                   st.config.max_memory, HumanBytes(st.config.max_memory), st.config.max_keys,
                   OverflowModeName(st.config.overflow));
  }
  if (want("persistence")) out += PersistenceInfo(st) + "\r\n";
  if (want("stats")) {
    uint64_t commands = 0;
    absl::flat_hash_map<std::string, PolicyCounters> per_policy;
    PolicyCounters total;  // deleted policies' counts stay in the totals
    for (const auto& ws : st.worker_stats) {
      commands += ws->commands();
      ws->AddTo(&per_policy, &total);
    }
    for (const auto& [name, c] : per_policy) total.Add(c);
    fmt::format_to(o,
                   "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n"
                   "rejected_connections:{}\r\ntotal_error_replies:0\r\nprotocol_errors:{}\r\n"
                   "client_output_limit_disconnections:{}\r\nidle_timeout_disconnections:{}\r\n"
                   "accept_resource_errors:{}\r\nclient_query_buffer_limit_disconnections:{}\r\n"
                   "evicted_keys:{}\r\nexpired_keys:{}\r\nrl_overflows:{}\r\n"
                   "rl_checks:{}\r\nrl_allowed:{}\r\n"
                   "rl_denied:{}\r\nrl_shadow_denied:{}\r\nrl_near_limit:{}\r\n",
                   st.global.total_connections.load(), commands,
                   st.global.rejected_connections.load(), st.global.protocol_errors.load(),
                   st.global.output_limit_disconnects.load(), st.global.idle_disconnects.load(),
                   st.global.accept_resource_errors.load(),
                   st.global.query_limit_disconnects.load(), ls.evictions, ls.expired,
                   ls.overflows, total.checks, total.allowed, total.denied, total.shadow_denied,
                   total.near_limit);
    WritePolicyLines(per_policy, &out);
    out.append("\r\n");
  }
  if (want("keyspace")) {
    fmt::format_to(o, "# Keyspace\r\ndb0:keys={},expires={},avg_ttl=0\r\n\r\n", ls.keys, ls.keys);
  }
  if (out.size() >= 2) out.resize(out.size() - 2);  // Redis has no blank line at the end
  ctx.w.Verbatim("txt", out);
}

void ConfigGet(CommandContext& ctx) {
  const ServerConfig& c = ctx.state.config;
  // Read-only values: those clients and redis-benchmark ask for, and this server's settings.
  const std::pair<std::string, std::string> params[] = {
      {"appendonly", "no"},
      {"bind", c.bind},
      {"databases", "1"},
      {"maxclients", std::to_string(c.maxclients)},
      {"maxmemory", std::to_string(c.max_memory)},
      {"max-keys", std::to_string(c.max_keys)},
      {"port", std::to_string(ctx.state.port)},
      {"protected-mode", c.protected_mode ? "yes" : "no"},
      {"save", ""},
      {"timeout", std::to_string(c.timeout_s)},
      {"io-threads", std::to_string(c.threads)},
      {"proto-max-bulk-len", std::to_string(c.proto_max_bulk_len)},
      {"client-query-buffer-limit", std::to_string(c.client_query_limit)},
      {"client-query-buffer-total", std::to_string(c.client_query_total)},
  };
  std::vector<const std::pair<std::string, std::string>*> hits;
  for (const auto& p : params) {
    for (size_t i = 2; i < ctx.args.size(); ++i) {
      std::string pattern(ctx.args[i]);
      if (fnmatch(pattern.c_str(), p.first.c_str(), FNM_CASEFOLD) == 0) {
        hits.push_back(&p);
        break;
      }
    }
  }
  ctx.w.MapHeader(hits.size());
  for (const auto* p : hits) {
    ctx.w.Bulk(p->first);
    ctx.w.Bulk(p->second);
  }
}

void ConfigReadOnly(CommandContext& ctx) {
  ctx.w.Error("ERR rl-server's configuration is read-only here: edit the config file and send "
              "SIGHUP to reload policies");
}

void ConfigHelp(CommandContext& ctx) {
  static constexpr std::string_view kLines[] = {
      "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
      "HELP", "    Print this help."};
  ctx.w.ArrayHeader(std::size(kLines));
  for (std::string_view line : kLines) ctx.w.SimpleString(line);
}

void Time(CommandContext& ctx) {
  using namespace std::chrono;
  int64_t us = duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
  char buf[24];
  ctx.w.ArrayHeader(2);
  auto n = fmt::format_to_n(buf, sizeof(buf), "{}", us / 1000000).size;
  ctx.w.Bulk(std::string_view(buf, n));
  n = fmt::format_to_n(buf, sizeof(buf), "{}", us % 1000000).size;
  ctx.w.Bulk(std::string_view(buf, n));
}

void DbSize(CommandContext& ctx) {
  ctx.w.Integer(static_cast<int64_t>(ctx.state.limiter->KeyCount()));
}

void Quit(CommandContext& ctx) {
  ctx.w.SimpleString("OK");
  ctx.session.close_after_reply = true;
}

void Reset(CommandContext& ctx) {
  ctx.state.clients.Update(ctx.session, [](ClientSession& s) {
    s.protocol = 2;
    s.name.clear();
  });
  ctx.w.set_protocol(2);
  ctx.session.authenticated = ctx.state.config.requirepass.empty();
  ctx.w.SimpleString("RESET");
}

ArgDoc Arg(std::string name, std::string type, uint8_t flags = 0, std::string token = "") {
  return ArgDoc{std::move(name), std::move(type), std::move(token), flags, {}};
}

CommandSpec Row(std::string name, int arity, uint32_t flags, Handler handler, std::string summary,
                std::string since, std::vector<ArgDoc> args = {}) {
  CommandSpec spec;
  spec.name = std::move(name);
  spec.arity = arity;
  spec.flags = flags;
  spec.handler = handler;
  spec.group = "connection";
  spec.summary = std::move(summary);
  spec.since = std::move(since);
  spec.complexity = "O(1)";
  spec.arguments = std::move(args);
  return spec;
}

}  // namespace

void AddAdminCommands(std::vector<CommandSpec>* rows) {
  rows->push_back(Row("ping", -1, kCmdFast | kCmdStale, Ping,
                      "Returns the server's liveliness response.", "1.0.0",
                      {Arg("message", "string", kArgOptional)}));
  rows->push_back(Row("echo", 2, kCmdFast, Echo, "Returns the given string.", "1.0.0",
                      {Arg("message", "string")}));
  {
    ArgDoc auth{"auth", "block", "AUTH", kArgOptional,
                {Arg("username", "string"), Arg("password", "string")}};
    ArgDoc setname = Arg("clientname", "string", kArgOptional, "SETNAME");
    ArgDoc block{"arguments", "block", "", kArgOptional,
                 {Arg("protover", "integer"), auth, setname}};
    rows->push_back(Row("hello", -1, kCmdNoAuth | kCmdFast | kCmdStale | kCmdLoading, Hello,
                        "Handshakes with the server: protocol (2 or 3), AUTH and SETNAME.",
                        "6.0.0", {block}));
  }
  rows->push_back(Row("auth", -2, kCmdNoAuth | kCmdFast | kCmdStale | kCmdLoading, Auth,
                      "Authenticates the connection.", "1.0.0",
                      {Arg("username", "string", kArgOptional), Arg("password", "string")}));
  rows->push_back(Row("select", 2, kCmdFast, Select,
                      "Changes the selected database (only 0 exists).", "1.0.0",
                      {Arg("index", "integer")}));
  {
    CommandSpec client = Row("client", -2, 0, nullptr, "A container for client commands.",
                             "2.4.0");
    client.subcommands.push_back(Row("client|setname", 3, kCmdFast, ClientSetName,
                                     "Sets the connection name.", "2.6.9",
                                     {Arg("connection-name", "string")}));
    client.subcommands.push_back(Row("client|getname", 2, kCmdFast, ClientGetName,
                                     "Returns the name of the connection.", "2.6.9"));
    client.subcommands.push_back(Row("client|id", 2, kCmdFast, ClientId,
                                     "Returns the unique client ID of the connection.", "5.0.0"));
    client.subcommands.push_back(Row(
        "client|setinfo", 4, kCmdFast, ClientSetInfo,
        "Sets information specific to the client or connection.", "7.2.0",
        {ArgDoc{"attr", "oneof", "", 0,
                {Arg("libname", "string", 0, "LIB-NAME"), Arg("libver", "string", 0, "LIB-VER")}},
         Arg("value", "string")}));
    client.subcommands.push_back(Row("client|info", 2, kCmdFast, ClientInfo,
                                     "Returns information about the connection.", "6.2.0"));
    client.subcommands.push_back(
        Row("client|list", -2, kCmdAdmin, ClientList, "Lists open connections.", "2.4.0",
            {Arg("client-type", "string", kArgOptional, "TYPE"),
             Arg("client-id", "integer", kArgOptional | kArgMultiple, "ID")}));
    client.subcommands.push_back(Row("client|no-evict", 3, kCmdFast, ClientOk,
                                     "Accepted for compatibility; no effect.", "7.0.0",
                                     {Arg("enabled", "string")}));
    client.subcommands.push_back(Row("client|no-touch", 3, kCmdFast, ClientOk,
                                     "Accepted for compatibility; no effect.", "7.2.0",
                                     {Arg("enabled", "string")}));
    client.subcommands.push_back(Row("client|help", 2, kCmdFast, ClientHelp,
                                     "Returns helpful text about the different subcommands.",
                                     "5.0.0"));
    rows->push_back(std::move(client));
  }
  {
    CommandSpec command = Row("command", -1, kCmdLoading | kCmdStale, Command,
                              "Returns detailed information about all commands.", "2.8.13");
    command.group = "server";
    command.subcommands.push_back(Row("command|count", 2, kCmdLoading | kCmdStale, nullptr,
                                      "Returns a count of commands.", "2.8.13"));
    command.subcommands.push_back(Row("command|docs", -2, kCmdLoading | kCmdStale, nullptr,
                                      "Returns documentary information about commands.", "7.0.0",
                                      {Arg("command-name", "string",
                                           kArgOptional | kArgMultiple)}));
    command.subcommands.push_back(Row("command|info", -2, kCmdLoading | kCmdStale, nullptr,
                                      "Returns information about commands.", "2.8.13",
                                      {Arg("command-name", "string",
                                           kArgOptional | kArgMultiple)}));
    command.subcommands.push_back(Row("command|list", -2, kCmdLoading | kCmdStale, nullptr,
                                      "Returns a list of command names.", "7.0.0"));
    for (auto& sub : command.subcommands) sub.group = "server";
    rows->push_back(std::move(command));
  }
  {
    CommandSpec info = Row("info", -1, kCmdLoading | kCmdStale, Info,
                           "Returns information and statistics about the server, including "
                           "per-policy checks, allowed and denied.",
                           "1.0.0", {Arg("section", "string", kArgOptional | kArgMultiple)});
    info.group = "server";
    rows->push_back(std::move(info));
  }
  {
    CommandSpec config = Row("config", -2, 0, nullptr, "A container for server configuration "
                             "commands.", "2.0.0");
    config.group = "server";
    config.subcommands.push_back(Row("config|get", -3, kCmdLoading | kCmdStale, ConfigGet,
                                     "Returns the effective values of configuration parameters.",
                                     "2.0.0", {Arg("parameter", "pattern", kArgMultiple)}));
    config.subcommands.push_back(Row("config|set", -4, kCmdAdmin, ConfigReadOnly,
                                     "Not supported: the configuration is read-only.", "2.0.0",
                                     {Arg("parameter", "string"), Arg("value", "string")}));
    config.subcommands.push_back(Row("config|resetstat", 2, kCmdAdmin, ConfigReadOnly,
                                     "Not supported.", "2.0.0"));
    config.subcommands.push_back(Row("config|rewrite", 2, kCmdAdmin, ConfigReadOnly,
                                     "Not supported.", "2.8.0"));
    config.subcommands.push_back(Row("config|help", 2, kCmdLoading | kCmdStale, ConfigHelp,
                                     "Returns helpful text about the different subcommands.",
                                     "5.0.0"));
    for (auto& sub : config.subcommands) sub.group = "server";
    rows->push_back(std::move(config));
  }
  {
    CommandSpec time = Row("time", 1, kCmdFast | kCmdLoading | kCmdStale, Time,
                           "Returns the server time.", "2.6.0");
    time.group = "server";
    rows->push_back(std::move(time));
    CommandSpec dbsize = Row("dbsize", 1, kCmdFast | kCmdReadonly, DbSize,
                             "Returns the number of limiter states (keys).", "1.0.0");
    dbsize.group = "server";
    rows->push_back(std::move(dbsize));
  }
  rows->push_back(Row("quit", -1, kCmdNoAuth | kCmdFast | kCmdLoading | kCmdStale, Quit,
                      "Closes the connection.", "1.0.0"));
  rows->push_back(Row("reset", 1, kCmdNoAuth | kCmdFast | kCmdLoading | kCmdStale, Reset,
                      "Resets the connection.", "6.2.0"));
}

}  // namespace rl::server

// The server commands: introspection and settings of the server as a whole (COMMAND, INFO,
// CONFIG GET, TIME, DBSIZE). Texts and shapes follow Redis 7.
#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "command_families.h"
#include "command_table.h"
#include "persistence_commands.h"
#include "rl/limiter.h"
#include "rl/version.h"
#include "server.h"
#include "server_state.h"
#include "settings.h"

namespace rl::server {
namespace {

// Whether COMMAND lists `row`: DEBUG only while enable-debug-command is on, so with it off
// COMMAND, COUNT, LIST, INFO and DOCS are what they were before DEBUG existed.
bool Listed(const ServerState& state, const CommandSpec* row) {
  return row != nullptr && (!(row->flags & kCmdProtected) ||
                            state.config.enable_debug_command != DebugCommandMode::kNo);
}

size_t ListedCount(const ServerState& state) {
  const auto& rows = state.commands.rows();
  return static_cast<size_t>(std::count_if(
      rows.begin(), rows.end(), [&](const CommandSpec& row) { return Listed(state, &row); }));
}

// COMMAND with no subcommand, and COMMAND INFO: every row's info, or the named ones'.
void CommandInfo(CommandContext& ctx) {
  const CommandTable& table = ctx.state.commands;
  if (ctx.args.size() <= 2) {
    ctx.w.ArrayHeader(ListedCount(ctx.state));
    for (const CommandSpec& row : table.rows()) {
      if (Listed(ctx.state, &row)) CommandTable::WriteInfo(ctx.w, row);
    }
    return;
  }
  ctx.w.ArrayHeader(ctx.args.size() - 2);
  for (size_t i = 2; i < ctx.args.size(); ++i) {
    const CommandSpec* spec = table.Find(ctx.args[i]);
    if (!Listed(ctx.state, spec)) {
      ctx.w.NullArray();
    } else {
      CommandTable::WriteInfo(ctx.w, *spec);
    }
  }
}

void CommandCount(CommandContext& ctx) {
  ctx.w.Integer(static_cast<int64_t>(ListedCount(ctx.state)));
}

void CommandList(CommandContext& ctx) {
  ctx.w.ArrayHeader(ListedCount(ctx.state));
  for (const CommandSpec& row : ctx.state.commands.rows()) {
    if (Listed(ctx.state, &row)) ctx.w.Bulk(row.name);
  }
}

void CommandDocs(CommandContext& ctx) {
  const CommandTable& table = ctx.state.commands;
  if (ctx.args.size() == 2) {
    ctx.w.MapHeader(ListedCount(ctx.state));
    for (const CommandSpec& row : table.rows()) {
      if (!Listed(ctx.state, &row)) continue;
      ctx.w.Bulk(row.name);
      CommandTable::WriteDocs(ctx.w, row);
    }
    return;
  }
  // Unknown names are left out, as Redis does.
  std::vector<const CommandSpec*> found;
  for (size_t i = 2; i < ctx.args.size(); ++i) {
    const CommandSpec* spec = table.Find(ctx.args[i]);
    if (Listed(ctx.state, spec)) found.push_back(spec);
  }
  ctx.w.MapHeader(found.size());
  for (const CommandSpec* spec : found) {
    ctx.w.Bulk(spec->name);
    CommandTable::WriteDocs(ctx.w, *spec);
  }
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

// `<field>:checks=..,allowed=..,denied=..,shadow_denied=..,near_limit=..`
void WriteCountersLine(std::string_view field, const PolicyCounters& c, std::string* out) {
  fmt::format_to(std::back_inserter(*out),
                 "{}:checks={},allowed={},denied={},shadow_denied={},near_limit={}\r\n", field,
                 c.checks, c.allowed, c.denied, c.shadow_denied, c.near_limit);
}

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
    WriteCountersLine("policy_" + row->first, c, out);
  }
  if (shown < per_policy.size()) {
    fmt::format_to(o, "policy_lines_omitted:{}\r\n", per_policy.size() - shown);
  }
}

// The last SIGHUP reload: INFO has one line per field, so its message loses line breaks.
void AppendReloadInfo(const ReloadStatus& r, std::string* out) {
  std::string message = r.message;
  for (char& c : message) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  std::string pending;
  for (const std::string& p : r.restart_pending) {
    pending += pending.empty() ? "" : ",";
    pending += p.substr(0, p.find(' '));  // the setting's name
  }
  fmt::format_to(std::back_inserter(*out),
                 "config_reload_last_status:{}\r\nconfig_reload_last_time:{}\r\n"
                 "config_reload_last_message:{}\r\nconfig_reloads_ok:{}\r\n"
                 "config_reloads_failed:{}\r\nconfig_restart_pending:{}\r\n",
                 r.last, r.last_wall_ms / 1000, message, r.ok, r.failed, pending);
}

// INFO's "# Server" section, with the config reload fields.
void InfoServer(const ServerState& st, std::string* page) {
  std::string& out = *page;
  auto o = std::back_inserter(out);
  int64_t uptime_s = (st.clock->NowMs() - st.start_steady_ms) / 1000;
  fmt::format_to(o,
                 "# Server\r\nredis_version:{}\r\nrl_version:{}\r\nredis_mode:standalone\r\n"
                 "os:Linux\r\narch_bits:64\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\n"
                 "run_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\n"
                 "io_threads_active:{}\r\nexecutable:rl-server\r\nconfig_file:{}\r\n\r\n",
                 kRedisCompatVersion, RL_VERSION_STRING, getpid(), st.run_id, st.port, uptime_s,
                 uptime_s / 86400, st.config.threads, st.config.config_file);
  out.resize(out.size() - 2);  // the reload fields belong to this section
  AppendReloadInfo(st.reloads.Get(), &out);
  out += "\r\n";
}

void InfoClients(const ServerState& st, std::string* page) {
  std::string& out = *page;
  auto o = std::back_inserter(out);
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

void Info(CommandContext& ctx) {
  ServerState& st = ctx.state;
  bool all = ctx.args.size() == 1;
  auto want = [&](std::string_view section) {
    if (all) return true;
    for (size_t i = 1; i < ctx.args.size(); ++i) {
      if (EqualsIgnoreCase(ctx.args[i], section) || EqualsIgnoreCase(ctx.args[i], "all") ||
          EqualsIgnoreCase(ctx.args[i], "everything") || EqualsIgnoreCase(ctx.args[i], "default")) {
        return true;
      }
    }
    return false;
  };
  std::string out;
  auto o = std::back_inserter(out);
  if (want("server")) InfoServer(st, &out);
  if (want("clients")) InfoClients(st, &out);
  rl::LimiterStats ls = st.limiter->Stats();
  if (want("memory")) {
    int64_t rss = ResidentBytes();
    fmt::format_to(o,
                   "# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\n"
                   "used_memory_rss:{}\r\nused_memory_rss_human:{}\r\nmaxmemory:{}\r\n"
                   "maxmemory_human:{}\r\nmaxmemory_policy:evict-least-valuable\r\n"
                   "max_keys:{}\r\nshards:{}\r\noverflow_mode:{}\r\n\r\n",
                   ls.memory_bytes, HumanBytes(ls.memory_bytes), rss, HumanBytes(rss),
                   st.config.max_memory, HumanBytes(st.config.max_memory), ls.max_keys, ls.shards,
                   OverflowModeName(st.config.overflow));
  }
  if (want("persistence")) out += PersistenceInfo(st) + "\r\n";
  if (want("stats")) {
    uint64_t commands = 0;
    CheckCounters checks;
    for (const auto& ws : st.worker_stats) {
      commands += ws->commands();
      ws->AddTo(&checks);
    }
    const PolicyCounters total = checks.Total();  // deleted policies' counts stay in the totals
    fmt::format_to(
        o,
        "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n"
        "rejected_connections:{}\r\ntotal_error_replies:0\r\nprotocol_errors:{}\r\n"
        "client_output_limit_disconnections:{}\r\nidle_timeout_disconnections:{}\r\n"
        "accept_resource_errors:{}\r\nclient_query_buffer_limit_disconnections:{}\r\n"
        "acl_access_denied_auth:{}\r\nauth_failures:{}\r\nauth_failure_disconnections:{}\r\n"
        "evicted_keys:{}\r\nexpired_keys:{}\r\nrl_overflows:{}\r\n"
        "rl_checks:{}\r\nrl_allowed:{}\r\n"
        "rl_denied:{}\r\nrl_shadow_denied:{}\r\nrl_near_limit:{}\r\n",
        st.global.total_connections.load(), commands, st.global.rejected_connections.load(),
        st.global.protocol_errors.load(), st.global.output_limit_disconnects.load(),
        st.global.idle_disconnects.load(), st.global.accept_resource_errors.load(),
        st.global.query_limit_disconnects.load(), st.global.auth_failures.load(),
        st.global.auth_failures.load(), st.global.auth_failure_disconnects.load(), ls.evictions,
        ls.expired, ls.overflows, total.checks, total.allowed, total.denied, total.shadow_denied,
        total.near_limit);
    // Internal users of the engine have fields of their own: no policy name can take them.
    WriteCountersLine("inline_limits", checks.inline_limits, &out);
    WriteCountersLine("cl_throttle", checks.throttle, &out);
    WritePolicyLines(checks.per_policy, &out);
    out.append("\r\n");
  }
  if (want("keyspace")) {
    fmt::format_to(o, "# Keyspace\r\ndb0:keys={},expires={},avg_ttl=0\r\n\r\n", ls.keys, ls.keys);
  }
  if (out.size() >= 2) out.resize(out.size() - 2);  // Redis has no blank line at the end
  ctx.w.Verbatim("txt", out);
}

// Every row of the settings table by its CONFIG GET name (read-only), and the Redis settings
// clients and redis-benchmark ask for, with this server's fixed answers.
void ConfigGet(CommandContext& ctx) {
  const ServerConfig& c = ctx.state.config;
  std::vector<std::pair<std::string_view, std::string>> params = {
      {"appendonly", "no"}, {"databases", "1"}, {"save", ""}};
  for (const Setting& s : Settings()) params.emplace_back(ConfigGetName(s), ConfigGetValue(s, c));
  std::vector<const std::pair<std::string_view, std::string>*> hits;
  for (const auto& p : params) {
    const std::string name(p.first);
    for (size_t i = 2; i < ctx.args.size(); ++i) {
      std::string pattern(ctx.args[i]);
      if (fnmatch(pattern.c_str(), name.c_str(), FNM_CASEFOLD) == 0) {
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
  ctx.w.Error(
      "ERR rl-server's configuration is read-only here: edit the config file and send "
      "SIGHUP to reload policies");
}

// TIME is the one read of the system clock outside ServerState::clock: it answers in
// microseconds, finer than rl::Clock's milliseconds.
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

}  // namespace

void AddServerCommands(std::vector<CommandSpec>* rows) {
  constexpr std::string_view g = "server";
  {
    // The HELP texts are Redis's.
    CommandSpec command = Row(g, "command", -1, kCmdLoading | kCmdStale, CommandInfo,
                              "Returns detailed information about all commands.", "2.8.13");
    command.help_summary = "Return details about all commands.";
    CommandSpec count = Row(g, "command|count", 2, kCmdLoading | kCmdStale, CommandCount,
                            "Returns a count of commands.", "2.8.13");
    count.help_summary = "Return the total number of commands in this server.";
    CommandSpec docs = Row(g, "command|docs", -2, kCmdLoading | kCmdStale, CommandDocs,
                           "Returns documentary information about commands.", "7.0.0",
                           {Arg("command-name", "string", kArgOptional | kArgMultiple)});
    docs.help_usage = "DOCS [<command-name> ...]";
    docs.help_summary = "Return documentation details about multiple commands.";
    CommandSpec info = Row(g, "command|info", -2, kCmdLoading | kCmdStale, CommandInfo,
                           "Returns information about commands.", "2.8.13",
                           {Arg("command-name", "string", kArgOptional | kArgMultiple)});
    info.help_usage = "INFO [<command-name> ...]";
    info.help_summary = "Return details about multiple commands.";
    CommandSpec list = Row(g, "command|list", -2, kCmdLoading | kCmdStale, CommandList,
                           "Returns a list of command names.", "7.0.0");
    list.help_summary = "Return a list of all commands in this server.";
    command.subcommands = {std::move(count), std::move(docs), std::move(info), std::move(list)};
    rows->push_back(std::move(command));
  }
  rows->push_back(Row(g, "info", -1, kCmdLoading | kCmdStale, Info,
                      "Returns information and statistics about the server, including "
                      "per-policy checks, allowed and denied.",
                      "1.0.0", {Arg("section", "string", kArgOptional | kArgMultiple)}));
  {
    CommandSpec config =
        Row(g, "config", -2, 0, nullptr, "A container for server configuration commands.", "2.0.0");
    CommandSpec get = Row(g, "config|get", -3, kCmdLoading | kCmdStale, ConfigGet,
                          "Returns the effective values of configuration parameters.", "2.0.0",
                          {Arg("parameter", "pattern", kArgMultiple)});
    get.help_usage = "GET <pattern>";  // Redis's HELP text
    get.help_summary = "Return parameters matching the glob-like <pattern> and their values.";
    config.subcommands.push_back(std::move(get));
    config.subcommands.push_back(Row(g, "config|set", -4, kCmdAdmin, ConfigReadOnly,
                                     "Not supported: the configuration is read-only.", "2.0.0",
                                     {Arg("parameter", "string"), Arg("value", "string")}));
    config.subcommands.push_back(
        Row(g, "config|resetstat", 2, kCmdAdmin, ConfigReadOnly, "Not supported.", "2.0.0"));
    config.subcommands.push_back(
        Row(g, "config|rewrite", 2, kCmdAdmin, ConfigReadOnly, "Not supported.", "2.8.0"));
    config.subcommands.push_back(Row(g, "config|help", 2, kCmdLoading | kCmdStale, WriteHelp,
                                     "Returns helpful text about the different subcommands.",
                                     "5.0.0"));
    rows->push_back(std::move(config));
  }
  rows->push_back(Row(g, "time", 1, kCmdFast | kCmdLoading | kCmdStale, Time,
                      "Returns the server time.", "2.6.0"));
  rows->push_back(Row(g, "dbsize", 1, kCmdFast | kCmdReadonly, DbSize,
                      "Returns the number of limiter states (keys).", "1.0.0"));
}

}  // namespace rl::server

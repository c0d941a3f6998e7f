// Command table lookup, COMMAND/COMMAND DOCS generation and Redis's standard error replies.
#include "command_table.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "rl/ascii.h"
#include "server_state.h"

namespace rl::server {
namespace {

constexpr size_t kMaxNameLen = 64;

void WriteFlags(resp::Writer& w, uint32_t flags) {
  static constexpr std::pair<uint32_t, std::string_view> kNames[] = {
      {kCmdWrite, "write"},    {kCmdReadonly, "readonly"}, {kCmdAdmin, "admin"},
      {kCmdNoAuth, "no_auth"}, {kCmdFast, "fast"},         {kCmdLoading, "loading"},
      {kCmdStale, "stale"}};
  size_t n = 0;
  for (const auto& [bit, name] : kNames) n += (flags & bit) ? 1 : 0;
  w.SetHeader(n);
  for (const auto& [bit, name] : kNames) {
    if (flags & bit) w.SimpleString(name);
  }
}

void WriteArg(resp::Writer& w, const ArgDoc& arg) {
  size_t fields =
      2 + (arg.token.empty() ? 0 : 1) + (arg.flags ? 1 : 0) + (arg.arguments.empty() ? 0 : 1);
  w.MapHeader(fields);
  w.Bulk("name");
  w.Bulk(arg.name);
  w.Bulk("type");
  w.Bulk(arg.type);
  if (!arg.token.empty()) {
    w.Bulk("token");
    w.Bulk(arg.token);
  }
  if (arg.flags) {
    w.Bulk("flags");
    size_t n = ((arg.flags & kArgOptional) ? 1 : 0) + ((arg.flags & kArgMultiple) ? 1 : 0);
    w.SetHeader(n);
    if (arg.flags & kArgOptional) w.SimpleString("optional");
    if (arg.flags & kArgMultiple) w.SimpleString("multiple");
  }
  if (!arg.arguments.empty()) {
    w.Bulk("arguments");
    w.ArrayHeader(arg.arguments.size());
    for (const ArgDoc& child : arg.arguments) WriteArg(w, child);
  }
}

// Adds "<parent>|help" to every container that lacks one.
void AddHelpRows(std::vector<CommandSpec>* rows) {
  for (CommandSpec& row : *rows) {
    if (row.subcommands.empty()) continue;
    bool has_help = false;
    for (const CommandSpec& sub : row.subcommands) {
      has_help |= sub.name.size() == row.name.size() + 5 && sub.name.ends_with("|help");
    }
    if (has_help) continue;
    CommandSpec help;
    help.name = row.name;
    help.name.append("|help");
    help.arity = 2;
    help.flags = kCmdLoading | kCmdStale;
    help.handler = WriteHelp;
    help.group = row.group;
    help.summary = "Returns helpful text about the different subcommands.";
    help.since = row.since;
    help.complexity = "O(1)";
    row.subcommands.push_back(std::move(help));
  }
}

// A row with no handler is never called (a container's own row, if its arity let it through).
const CommandSpec* Served(const CommandSpec* spec, absl::Span<const std::string_view> args,
                          resp::Writer& w) {
  if (spec->handler != nullptr) return spec;
  WriteUnknownCommand(w, args);
  return nullptr;
}

}  // namespace

void WriteHelp(CommandContext& ctx) {
  const CommandSpec* parent = ctx.state.commands.Find(ctx.args[0]);
  if (parent == nullptr) return WriteSyntaxError(ctx.w);
  auto text = [](const CommandSpec& row) -> std::string_view {
    if (row.handler == WriteHelp) return "Print this help.";
    return row.help_summary.empty() ? row.summary : row.help_summary;
  };
  std::vector<command::HelpEntry> subs;
  for (const CommandSpec& sub : parent->subcommands) {
    subs.push_back(command::HelpEntry{sub.name, &sub.arguments, sub.help_usage, text(sub)});
  }
  // A container with a handler of its own also runs with no subcommand.
  const std::vector<std::string> lines = command::HelpLines(
      parent->name, parent->handler != nullptr ? text(*parent) : std::string_view(), subs);
  ctx.w.ArrayHeader(lines.size());
  for (const std::string& line : lines) ctx.w.SimpleString(line);
}

ArgDoc Arg(std::string name, std::string type, uint8_t flags, std::string token) {
  return ArgDoc{std::move(name), std::move(type), std::move(token), flags, {}};
}

CommandSpec Row(std::string_view group, std::string name, int arity, uint32_t flags,
                Handler handler, std::string summary, std::string since, std::vector<ArgDoc> args) {
  CommandSpec spec;
  spec.name = std::move(name);
  spec.arity = arity;
  spec.flags = flags;
  spec.handler = handler;
  spec.group = std::string(group);
  spec.summary = std::move(summary);
  spec.since = std::move(since);
  spec.complexity = "O(1)";
  spec.arguments = std::move(args);
  return spec;
}

CommandTable::CommandTable(std::vector<CommandSpec> rows) : rows_(std::move(rows)) {
  AddHelpRows(&rows_);
  std::sort(rows_.begin(), rows_.end(),
            [](const CommandSpec& a, const CommandSpec& b) { return a.name < b.name; });
  for (const CommandSpec& row : rows_) by_name_[row.name] = &row;
}

const CommandSpec* CommandTable::Find(std::string_view name) const {
  char buf[kMaxNameLen];
  std::string_view lower = LowerInto(name, buf, sizeof(buf));
  if (lower.empty()) return nullptr;
  auto it = by_name_.find(absl::string_view(lower.data(), lower.size()));
  return it == by_name_.end() ? nullptr : it->second;
}

namespace {
bool ArityOk(const CommandSpec& spec, size_t n) {
  const int64_t args = static_cast<int64_t>(n);
  return spec.arity > 0 ? args == spec.arity : args >= -int64_t{spec.arity};
}
}  // namespace

const CommandSpec* CommandTable::Resolve(const CommandSpec* found,
                                         absl::Span<const std::string_view> args,
                                         const ClientSession& session, resp::Writer& w) const {
  const CommandSpec* spec = found;
  if (spec == nullptr) {
    WriteUnknownCommand(w, args);
    return nullptr;
  }
  // Redis's order: unknown command, then arity, then protected, then authentication.
  if (!ArityOk(*spec, args.size())) {
    WriteWrongArity(w, spec->name);
    return nullptr;
  }
  if ((spec->flags & kCmdProtected) && !session.debug_allowed) {
    // Redis's text (DEBUG is the only protected command here).
    w.Error(
        "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
        "you can run it from a local connection, otherwise you need to set this option in the "
        "configuration file, and then restart the server.");
    return nullptr;
  }
  if (!session.authenticated && !(spec->flags & kCmdNoAuth)) {
    w.Error("NOAUTH Authentication required.");
    return nullptr;
  }
  // Arity keeps containers at 2+.
  if (spec->subcommands.empty() || args.size() < 2) return Served(spec, args, w);
  const CommandSpec* sub = FindSub(*spec, args[1]);
  if (sub == nullptr) {
    WriteUnknownSubcommand(w, args[1], spec->name);
    return nullptr;
  }
  if (!ArityOk(*sub, args.size())) {
    WriteWrongArity(w, sub->name);
    return nullptr;
  }
  return Served(sub, args, w);
}

const CommandSpec* CommandTable::FindSub(const CommandSpec& parent, std::string_view name) {
  char buf[kMaxNameLen];
  std::string_view lower = LowerInto(name, buf, sizeof(buf));
  if (lower.empty()) return nullptr;
  for (const CommandSpec& sub : parent.subcommands) {
    std::string_view sub_name = sub.name;
    size_t bar = sub_name.find('|');
    if (bar != std::string_view::npos && sub_name.substr(bar + 1) == lower) return &sub;
  }
  return nullptr;
}

void CommandTable::WriteInfo(resp::Writer& w, const CommandSpec& spec) {
  w.ArrayHeader(10);
  w.Bulk(spec.name);
  w.Integer(spec.arity);
  WriteFlags(w, spec.flags);
  w.Integer(spec.first_key);
  w.Integer(spec.last_key != 0 ? spec.last_key : spec.first_key);
  w.Integer(spec.first_key > 0 ? 1 : 0);
  w.SetHeader(1);  // ACL categories
  w.SimpleString(spec.group == "rl" ? "@rl" : "@" + spec.group);
  w.SetHeader(0);    // tips
  w.ArrayHeader(0);  // key specs
  w.ArrayHeader(spec.subcommands.size());
  for (const CommandSpec& sub : spec.subcommands) WriteInfo(w, sub);
}

void CommandTable::WriteDocs(resp::Writer& w, const CommandSpec& spec) {
  size_t fields = 4 + (spec.arguments.empty() ? 0 : 1) + (spec.subcommands.empty() ? 0 : 1);
  w.MapHeader(fields);
  w.Bulk("summary");
  w.Bulk(spec.summary);
  w.Bulk("since");
  w.Bulk(spec.since);
  w.Bulk("group");
  w.Bulk(spec.group);
  w.Bulk("complexity");
  w.Bulk(spec.complexity);
  if (!spec.arguments.empty()) {
    w.Bulk("arguments");
    w.ArrayHeader(spec.arguments.size());
    for (const ArgDoc& arg : spec.arguments) WriteArg(w, arg);
  }
  if (!spec.subcommands.empty()) {
    w.Bulk("subcommands");
    w.MapHeader(spec.subcommands.size());
    for (const CommandSpec& sub : spec.subcommands) {
      w.Bulk(sub.name);
      WriteDocs(w, sub);
    }
  }
}

std::string_view LowerInto(std::string_view name, char* buf, size_t cap) {
  if (name.size() > cap || name.empty()) return {};
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    buf[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return std::string_view(buf, name.size());
}

void WriteWrongArity(resp::Writer& w, std::string_view full_name) {
  std::string msg = "ERR wrong number of arguments for '";
  msg.append(full_name);
  msg.append("' command");
  w.Error(msg);  // the writer keeps it one line (CR/LF become spaces)
}

void WriteUnknownCommand(resp::Writer& w, absl::Span<const std::string_view> args) {
  // Redis: "unknown command '%.128s', with args beginning with: " then each arg as "'%.*s' "
  // while the args part stays within 128 bytes.
  std::string msg = "ERR unknown command '";
  msg.append(args[0].substr(0, 128));
  msg.append("', with args beginning with: ");
  size_t used = 0;
  for (size_t i = 1; i < args.size() && used < 128; ++i) {
    size_t take = std::min(args[i].size(), 128 - used);
    msg.push_back('\'');
    msg.append(args[i].substr(0, take));
    msg.append("' ");
    used += take + 3;
  }
  w.Error(msg);  // the writer keeps it one line (CR/LF become spaces)
}

void WriteUnknownSubcommand(resp::Writer& w, std::string_view sub, std::string_view parent) {
  const std::string upper = AsciiUppered(parent);
  std::string msg = "ERR unknown subcommand '";
  msg.append(sub.substr(0, 128));
  msg.append("'. Try ");
  msg.append(upper);
  msg.append(" HELP.");
  w.Error(msg);  // the writer keeps it one line (CR/LF become spaces)
}

void WriteSyntaxError(resp::Writer& w) { w.Error("ERR syntax error"); }

}  // namespace rl::server

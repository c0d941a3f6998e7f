// The command table: one row per command (name, arity, flags, handler, docs). The dispatcher
// checks arity and authentication once from the row; COMMAND, COMMAND INFO and COMMAND DOCS
// are generated from the same rows, so what redis-cli shows is what the server does.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "resp/writer.h"
#include "rl/ascii.h"  // ParseInt64, EqualsIgnoreCase: the handlers' argument readers
#include "rl/command/docs.h"
#include "rl/command/limit_cache.h"
#include "stats.h"
#include "text.h"

namespace rl::server {

struct ServerState;
class WorkerStats;

struct CommandSpec;
class Transaction;
class PolicyCache;

// Per-connection state that commands read and change. CLIENT LIST reads it from other threads:
// the fields after `id` that change are atomics or written under the ClientRegistry's lock.
struct ClientSession {
  uint64_t id = 0;
  int protocol = 2;                // 2 or 3 (HELLO); shared: written under the registry lock
  bool authenticated = false;      // true when no password is configured
  bool debug_allowed = false;      // may run protected commands (DEBUG); see DebugAllowed
  bool close_after_reply = false;  // QUIT
  std::string name;                // CLIENT SETNAME; shared
  std::string lib_name;            // CLIENT SETINFO LIB-NAME; shared
  std::string lib_ver;             // CLIENT SETINFO LIB-VER; shared
  std::string addr;                // peer ip:port
  std::string laddr;               // local ip:port
  int fd = -1;                     // the socket
  int64_t created_ms = 0;          // steady clock
  std::atomic<int64_t> last_active_ms{0};  // steady clock; for the idle timeout
  // For CLIENT LIST, published by the connection with relaxed stores: the last command run,
  // unparsed input bytes, the input buffer's size and replies not yet written.
  std::atomic<const CommandSpec*> last_command{nullptr};
  std::atomic<size_t> query_used{0};
  std::atomic<size_t> query_size{0};
  std::atomic<size_t> output_pending{0};
  // MULTI: commands queued (-1 outside MULTI) and their bytes (see Transaction).
  std::atomic<int64_t> multi_queued{-1};
  std::atomic<size_t> multi_mem{0};
  // Wrong passwords (AUTH, HELLO ... AUTH) in a row, and how long the connection pauses before
  // it sends the reply to the last one and reads on (a pause the handler asks for, taken by the
  // connection on a timer: no thread waits).
  int auth_failures = 0;
  int64_t pause_ms = 0;
  std::list<ClientSession*>::iterator registry_pos;  // owned by ClientRegistry
};

// Everything a handler may touch for one command. `args[0]` is the command name as sent.
struct CommandContext {
  absl::Span<const std::string_view> args;
  resp::Writer& w;
  ClientSession& session;
  ServerState& state;
  WorkerStats& stats;
  // The connection's last parsed limit list (RL.* commands reuse it); null = parse every time.
  rl::command::LimitCache* limit_cache = nullptr;
  // The connection's MULTI/WATCH state; null when not run by a connection.
  Transaction* txn = nullptr;
  // The connection's named policies (RL.* POLICY name); null = the store's lookup every time.
  PolicyCache* policy_cache = nullptr;
};

using Handler = void (*)(CommandContext& ctx);
// A hint run on a command still waiting in a client's pipeline, before the commands ahead of it
// run (ctx.w must not be written): it may start loading what the command will read
// (Limiter::Prefetch) and must change no answer (the command then runs as if no hint was given).
using Prefetcher = void (*)(CommandContext& ctx);

enum CommandFlag : uint32_t {
  kCmdNoAuth = 1u << 0,  // may run before AUTH
  kCmdFast = 1u << 1,
  kCmdWrite = 1u << 2,
  kCmdReadonly = 1u << 3,
  kCmdAdmin = 1u << 4,
  kCmdLoading = 1u << 5,
  kCmdStale = 1u << 6,
  // Refused unless enable-debug-command allows the client (Redis's CMD_PROTECTED), and left out
  // of COMMAND's lists while it is off.
  kCmdProtected = 1u << 7,
  // Runs at once inside MULTI instead of being queued (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET).
  kCmdNoQueue = 1u << 8,
};

// Argument docs (COMMAND DOCS) are the command layer's, shared with rl.so.
using ArgDoc = rl::command::ArgDoc;
using rl::command::kArgMultiple;
using rl::command::kArgOptional;

struct CommandSpec {
  std::string name;  // lower case; subcommands are "parent|sub"
  int arity = 0;     // counts the name; negative = at least -arity
  uint32_t flags = 0;
  Handler handler = nullptr;
  int first_key = 0;  // 1 for commands whose first argument is a key
  int last_key = 0;   // 0 = first_key; -1 = every argument from first_key on (WATCH)
  std::string group;  // COMMAND DOCS group, e.g. "connection", "server", "rl"
  std::string summary;
  std::string since;
  std::string complexity;
  std::vector<ArgDoc> arguments;
  // Dispatched by the second argument. A container with a handler of its own (COMMAND) runs it
  // when called with no subcommand.
  std::vector<CommandSpec> subcommands;
  CommandFamily family = kFamilyOther;  // which latency histogram the command counts in
  Prefetcher prefetch = nullptr;        // null: nothing to load ahead
  // HELP's lines for this row when not generated: the usage (default: the subcommand's name and
  // its argument syntax) and the text (default: `summary`), for Redis's wording.
  std::string help_usage;
  std::string help_summary;
};

// "<CONTAINER> HELP": Redis's layout (a title, then per subcommand its usage and its text
// indented by four) generated from the container's rows, so it lists what the server dispatches.
void WriteHelp(CommandContext& ctx);

// Builders of rows and argument docs. A row's complexity is O(1) unless set after.
ArgDoc Arg(std::string name, std::string type, uint8_t flags = 0, std::string token = "");
CommandSpec Row(std::string_view group, std::string name, int arity, uint32_t flags,
                Handler handler, std::string summary, std::string since,
                std::vector<ArgDoc> args = {});

class CommandTable {
 public:
  // The table of `rows` (each family's, see command_families.h), with a generated HELP subcommand
  // for every container that has none.
  explicit CommandTable(std::vector<CommandSpec> rows);

  // Lookup by name, case-insensitively; null when unknown. No allocation.
  const CommandSpec* Find(std::string_view name) const;
  // The row that runs `args` (a subcommand's for a container) for `session`, checked in Redis's
  // order: unknown command, arity, protected (DEBUG), authentication, unknown subcommand, the
  // subcommand's arity. Null after writing the error reply when it may not run.
  const CommandSpec* Resolve(absl::Span<const std::string_view> args, const ClientSession& session,
                             resp::Writer& w) const {
    return Resolve(Find(args[0]), args, session, w);
  }
  // The same with the row of args[0] found already (Find's answer: null when unknown).
  const CommandSpec* Resolve(const CommandSpec* found, absl::Span<const std::string_view> args,
                             const ClientSession& session, resp::Writer& w) const;
  // A subcommand of `parent` by its second argument; null when unknown.
  static const CommandSpec* FindSub(const CommandSpec& parent, std::string_view name);

  const std::vector<CommandSpec>& rows() const { return rows_; }

  // COMMAND / COMMAND INFO entry of one row (Redis 7's ten-element shape).
  static void WriteInfo(resp::Writer& w, const CommandSpec& spec);
  // The docs map of one row (summary, since, group, complexity, arguments, subcommands).
  static void WriteDocs(resp::Writer& w, const CommandSpec& spec);

 private:
  std::vector<CommandSpec> rows_;
  absl::flat_hash_map<std::string, const CommandSpec*> by_name_;
};

// Lower-cases `name` into `buf` (of `cap` bytes); returns the view, or empty when too long.
std::string_view LowerInto(std::string_view name, char* buf, size_t cap);

// Reply helpers with Redis's exact error texts.
void WriteWrongArity(resp::Writer& w, std::string_view full_name);
void WriteUnknownCommand(resp::Writer& w, absl::Span<const std::string_view> args);
void WriteUnknownSubcommand(resp::Writer& w, std::string_view sub, std::string_view parent);
void WriteSyntaxError(resp::Writer& w);

}  // namespace rl::server

// What the RL.* commands are, as data: name, arity, flags, key positions, summary and argument
// docs in Redis's COMMAND DOCS shape. rl-server builds its command table rows (COMMAND, COMMAND
// DOCS, HELP) from these, and rl.so registers its commands (flags, key specs, docs) from the same
// rows, so both front ends describe one contract.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rl::command {

enum ArgFlag : uint8_t {
  kArgOptional = 1u << 0,
  kArgMultiple = 1u << 1,
};

// One argument in COMMAND DOCS: a type of key, string, integer, pure-token (a bare keyword),
// oneof or block (with nested arguments).
struct ArgDoc {
  std::string name;
  std::string type;
  std::string token;  // empty = none
  uint8_t flags = 0;
  std::vector<ArgDoc> arguments;
};

enum DocFlag : uint32_t {
  kDocWrite = 1u << 0,     // changes state (Redis: "write", with "deny-oom")
  kDocReadonly = 1u << 1,  // runs on a replica in READONLY mode
  kDocFast = 1u << 2,
  kDocNoDenyOom = 1u << 3,  // a write that only frees memory: still runs over maxmemory
};

// What a front end dispatches an RL.* row on: each row carries one, and rl-server and rl.so each
// map it to their handler in a switch with no default, so -Wswitch (an error for both) names a
// command added here that either does not serve. kPolicy is a container: its subcommands run.
enum class CommandId : uint8_t {
  kCheck,
  kPeek,
  kReset,
  kRefund,
  kCharge,
  kAcquire,
  kRelease,
  kPolicy,
  kPolicySet,
  kPolicyGet,
  kPolicyDel,
  kPolicyList,
  kPolicyHelp,
  kThrottle,
};

struct CommandDoc {
  CommandId id = CommandId::kCheck;
  std::string name;  // lower case; subcommands are "parent|sub"
  int arity = 0;     // counts the name; negative = at least -arity
  uint32_t flags = 0;
  int first_key = 0;  // 1 for commands whose first argument is a key (last = first, step 1)
  std::string summary;
  std::string since;
  std::string complexity;
  std::vector<ArgDoc> arguments;
  std::vector<CommandDoc> subcommands;
};

// RL.CHECK, RL.PEEK, RL.RESET, RL.REFUND, RL.CHARGE, RL.ACQUIRE, RL.RELEASE, RL.POLICY (SET,
// GET, DEL, LIST, HELP) and CL.THROTTLE.
const std::vector<CommandDoc>& RlCommandDocs();
// The row of one of them by (lower-case) name, e.g. "rl.policy"; null when unknown.
const CommandDoc* FindRlCommandDoc(std::string_view name);

// "<CONTAINER> HELP", the one renderer for both front ends and every container (RL.POLICY, and
// rl-server's CLIENT, CONFIG, COMMAND, DEBUG): Redis's layout, a title line, then per subcommand
// its usage and its text indented by four. Arguments are written as Redis's HELP writes them
// ("<name>", "TOKEN <name>", "A|B", "[optional]", "x [x ...]"); a named block such as <limit> is
// written "<limit>" and spelled out once on a line of its own at the end.
struct HelpEntry {
  std::string_view name;  // "parent|sub"
  const std::vector<ArgDoc>* arguments = nullptr;
  std::string_view usage;  // written instead of the generated one if set
  std::string_view summary;
};
// `own_summary`: for a container that also runs with no subcommand (COMMAND), its text.
std::vector<std::string> HelpLines(std::string_view container, std::string_view own_summary,
                                   const std::vector<HelpEntry>& subcommands);
// The same for an RL.* row with subcommands.
std::vector<std::string> HelpLines(const CommandDoc& doc);
// "SET <name> [<concurrency>] <limit> [<limit> ...] ...": the usage of one (sub)command from its
// argument docs, as its HELP line writes it.
std::string Usage(const CommandDoc& doc);

}  // namespace rl::command

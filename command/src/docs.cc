// The RL.* command rows (see docs.h).
#include "rl/command/docs.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "rl/ascii.h"
#include "rl/limit.h"

namespace rl::command {
namespace {

ArgDoc Arg(std::string name, std::string type, uint8_t flags = 0, std::string token = "") {
  return ArgDoc{std::move(name), std::move(type), std::move(token), flags, {}};
}

// <limit> := ALGORITHM limit window [BURST n] [BLOCK duration]
ArgDoc LimitDoc(uint8_t flags) {
  ArgDoc algorithm{"algorithm", "oneof", "", 0, {}};
  // Every rate algorithm; CONCURRENCY has a form of its own (ConcurrencyDoc).
  for (Algorithm a : Algorithms()) {
    if (a == Algorithm::kConcurrency) continue;
    const std::string name(AlgorithmName(a));
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    algorithm.arguments.push_back(Arg(lower, "pure-token", 0, name));
  }
  return ArgDoc{"limit",
                "block",
                "",
                flags,
                {algorithm, Arg("limit", "integer"), Arg("window", "string"),
                 Arg("burst", "integer", kArgOptional, "BURST"),
                 Arg("block", "string", kArgOptional, "BLOCK")}};
}

// CONCURRENCY n [LEASE ttl]
ArgDoc ConcurrencyDoc(uint8_t flags) {
  return ArgDoc{
      "concurrency",
      "block",
      "",
      flags,
      {Arg("n", "integer", 0, "CONCURRENCY"), Arg("ttl", "string", kArgOptional, "LEASE")}};
}

// (CONCURRENCY n [LEASE ttl] [<limit>...] | POLICY name [CONCURRENCY n [LEASE ttl]] [<limit>...])
ArgDoc AcquireTargetDoc() {
  ArgDoc inline_limits{
      "limits", "block", "", 0, {ConcurrencyDoc(0), LimitDoc(kArgOptional | kArgMultiple)}};
  ArgDoc policy{"policy",
                "block",
                "",
                0,
                {Arg("name", "string", 0, "POLICY"), ConcurrencyDoc(kArgOptional),
                 LimitDoc(kArgOptional | kArgMultiple)}};
  return ArgDoc{"target", "oneof", "", 0, {std::move(inline_limits), std::move(policy)}};
}

// (<limit>... | POLICY name [<limit>...])
ArgDoc TargetDoc() {
  ArgDoc policy{"policy",
                "block",
                "",
                0,
                {Arg("name", "string", 0, "POLICY"), LimitDoc(kArgOptional | kArgMultiple)}};
  return ArgDoc{"target", "oneof", "", 0, {LimitDoc(kArgMultiple), std::move(policy)}};
}

CommandDoc Row(CommandId id, std::string name, int arity, uint32_t flags, std::string summary,
               std::vector<ArgDoc> args, int first_key = 1) {
  CommandDoc doc;
  doc.id = id;
  doc.name = std::move(name);
  doc.arity = arity;
  doc.flags = flags;
  doc.first_key = first_key;
  doc.summary = std::move(summary);
  doc.since = "0.1.0";
  doc.complexity = "O(L) for L limits";
  doc.arguments = std::move(args);
  return doc;
}

// RL.POLICY and its subcommands.
CommandDoc PolicyDoc() {
  CommandDoc policy = Row(CommandId::kPolicy, "rl.policy", -2, 0,
                          "Named policies: SET, GET, DEL, LIST, HELP.", {}, 0);
  policy.complexity = "O(1), LIST O(N) for N policies";
  policy.subcommands.push_back(Row(
      CommandId::kPolicySet, "rl.policy|set", -4, kDocWrite, "Defines or replaces a named policy.",
      {Arg("name", "string"), ConcurrencyDoc(kArgOptional), LimitDoc(kArgMultiple),
       Arg("shadow", "pure-token", kArgOptional, "SHADOW"),
       ArgDoc{"failure",
              "oneof",
              "",
              kArgOptional,
              {Arg("fail_open", "pure-token", 0, "FAIL_OPEN"),
               Arg("fail_closed", "pure-token", 0, "FAIL_CLOSED")}}},
      0));
  policy.subcommands.push_back(Row(CommandId::kPolicyGet, "rl.policy|get", 3,
                                   kDocReadonly | kDocFast, "Returns a policy's spec, or nil.",
                                   {Arg("name", "string")}, 0));
  policy.subcommands.push_back(Row(CommandId::kPolicyDel, "rl.policy|del", 3, kDocWrite | kDocFast,
                                   "Deletes a policy; replies 1 if it existed.",
                                   {Arg("name", "string")}, 0));
  policy.subcommands.push_back(Row(CommandId::kPolicyList, "rl.policy|list", 2, kDocReadonly,
                                   "Returns every policy's name and spec.", {}, 0));
  policy.subcommands.push_back(Row(CommandId::kPolicyHelp, "rl.policy|help", 2,
                                   kDocReadonly | kDocFast, "Prints this help.", {}, 0));
  return policy;
}

std::vector<CommandDoc> MakeDocs() {
  std::vector<CommandDoc> rows;
  const std::vector<ArgDoc> check_args = {Arg("key", "key"), TargetDoc(),
                                          Arg("n", "integer", kArgOptional, "COST"),
                                          Arg("headers", "pure-token", kArgOptional, "HEADERS"),
                                          Arg("limits", "pure-token", kArgOptional, "LIMITS")};
  std::vector<ArgDoc> queued_check_args = check_args;
  queued_check_args.insert(queued_check_args.begin() + 3,
                           Arg("duration", "string", kArgOptional, "MAXWAIT"));
  rows.push_back(Row(CommandId::kCheck, "rl.check", -4, kDocWrite | kDocFast,
                     "Checks and consumes: all limits allow or nothing is taken. Replies "
                     "allowed, limit, remaining, retry_after_ms, reset_after_ms. With MAXWAIT, "
                     "a call that may proceed within that wait is admitted into debt.",
                     queued_check_args));
  rows.push_back(Row(CommandId::kPeek, "rl.peek", -4, kDocReadonly | kDocFast,
                     "What RL.CHECK would answer, changing nothing.", check_args));
  rows.push_back(Row(CommandId::kReset, "rl.reset", -4, kDocWrite | kDocFast,
                     "Forgets the state of these limits for the key (their penalty blocks and "
                     "leases too); replies how many had something to forget.",
                     {Arg("key", "key"), TargetDoc()}));
  const std::vector<ArgDoc> adjust_args = {Arg("key", "key"), TargetDoc(),
                                           Arg("n", "integer", 0, "COST"),
                                           Arg("headers", "pure-token", kArgOptional, "HEADERS"),
                                           Arg("limits", "pure-token", kArgOptional, "LIMITS")};
  CommandDoc refund = Row(CommandId::kRefund, "rl.refund", -4, kDocWrite | kDocFast,
                          "Gives back up to n to every limit (never above a fresh state). "
                          "Replies as RL.CHECK of cost 0 would right after.",
                          adjust_args);
  refund.since = "0.2.0";
  rows.push_back(std::move(refund));
  CommandDoc charge = Row(CommandId::kCharge, "rl.charge", -4, kDocWrite | kDocFast,
                          "Takes n from every limit even into debt (settle-later costs). Replies "
                          "as RL.CHECK of cost 0 would right after: denied while in debt.",
                          adjust_args);
  charge.since = "0.2.0";
  rows.push_back(std::move(charge));
  CommandDoc acquire =
      Row(CommandId::kAcquire, "rl.acquire", -4, kDocWrite | kDocFast,
          "Takes a lease of the CONCURRENCY limit when every limit allows (all or nothing). "
          "Replies as RL.CHECK plus the lease id, nil when none was taken.",
          {Arg("key", "key"), AcquireTargetDoc(), Arg("n", "integer", kArgOptional, "COST"),
           Arg("headers", "pure-token", kArgOptional, "HEADERS"),
           Arg("limits", "pure-token", kArgOptional, "LIMITS")});
  acquire.since = "0.2.0";
  acquire.complexity = "O(L + N) for L limits and N leases held";
  rows.push_back(std::move(acquire));
  CommandDoc release =
      Row(CommandId::kRelease, "rl.release", 3, kDocWrite | kDocFast | kDocNoDenyOom,
          "Ends a lease; replies 1 if it was held, 0 if it had already ended.",
          {Arg("key", "key"), Arg("lease_id", "string")});
  release.since = "0.2.0";
  release.complexity = "O(N) for N leases held";
  rows.push_back(std::move(release));
  rows.push_back(PolicyDoc());
  rows.push_back(
      Row(CommandId::kThrottle, "cl.throttle", -5, kDocWrite | kDocFast,
          "redis-cell compatible GCRA: replies limited, limit, remaining, retry_after, reset_after "
          "(seconds).",
          {Arg("key", "key"), Arg("max_burst", "integer"), Arg("count", "integer"),
           Arg("period", "integer"), Arg("quantity", "integer", kArgOptional)}));
  return rows;
}

// An argument's syntax as Redis's HELP lines write it: "<name>", "TOKEN <name>", "(A|B)",
// "[optional]", "x [x ...]". A block is written in place ("CONCURRENCY <n> [LEASE <ttl>]"), but
// one that repeats (an RL <limit>) is written "<limit>" and added to *blocks once by name, to be
// spelled out on a line of its own.
std::string Syntax(const ArgDoc& arg, std::vector<const ArgDoc*>* blocks) {
  std::string text;
  if (arg.type == "pure-token") {
    text = arg.token;
  } else if (arg.type == "oneof") {
    for (const ArgDoc& child : arg.arguments) {
      if (!text.empty()) text.append("|");
      text.append(Syntax(child, blocks));
    }
    if (!(arg.flags & kArgOptional) && arg.arguments.size() > 1) text = "(" + text + ")";
  } else if (arg.type == "block" && !(arg.flags & kArgMultiple)) {
    text = arg.token;
    for (const ArgDoc& child : arg.arguments) {
      if (!text.empty()) text.append(" ");
      text.append(Syntax(child, blocks));
    }
  } else {
    if (!arg.token.empty() && arg.type != "block") text.append(arg.token).append(" ");
    text.append("<").append(arg.name).append(">");
    const auto named = [&](const ArgDoc* b) { return b->name == arg.name; };
    if (arg.type == "block" && std::none_of(blocks->begin(), blocks->end(), named)) {
      blocks->push_back(&arg);
    }
  }
  if (arg.flags & kArgMultiple) {
    std::string one = text;
    text.append(" [").append(one).append(" ...]");
  }
  if (!(arg.flags & kArgOptional)) return text;
  return "[" + text + "]";
}

std::string UsageLine(std::string_view name, const std::vector<ArgDoc>& arguments,
                      std::vector<const ArgDoc*>* blocks) {
  const size_t bar = name.find('|');
  std::string line = AsciiUppered(bar == std::string_view::npos ? name : name.substr(bar + 1));
  for (const ArgDoc& arg : arguments) line.append(" ").append(Syntax(arg, blocks));
  return line;
}

}  // namespace

const std::vector<CommandDoc>& RlCommandDocs() {
  static const std::vector<CommandDoc>* docs = new std::vector<CommandDoc>(MakeDocs());
  return *docs;
}

const CommandDoc* FindRlCommandDoc(std::string_view name) {
  for (const CommandDoc& doc : RlCommandDocs()) {
    if (doc.name == name) return &doc;
  }
  return nullptr;
}

std::string Usage(const CommandDoc& doc) {
  std::vector<const ArgDoc*> blocks;
  return UsageLine(doc.name, doc.arguments, &blocks);
}

std::vector<std::string> HelpLines(std::string_view container, std::string_view own_summary,
                                   const std::vector<HelpEntry>& subcommands) {
  std::vector<std::string> lines;
  lines.push_back(AsciiUppered(container) +
                  " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  if (!own_summary.empty()) {
    lines.emplace_back("(no subcommand)");
    lines.push_back("    " + std::string(own_summary));
  }
  static const std::vector<ArgDoc> kNone;
  std::vector<const ArgDoc*> blocks;
  for (const HelpEntry& sub : subcommands) {
    lines.push_back(!sub.usage.empty()
                        ? std::string(sub.usage)
                        : UsageLine(sub.name, sub.arguments ? *sub.arguments : kNone, &blocks));
    lines.push_back("    " + std::string(sub.summary));
  }
  for (size_t i = 0; i < blocks.size(); ++i) {  // Syntax may add nested blocks as it goes
    std::string line = "<" + blocks[i]->name + "> is:";
    for (const ArgDoc& arg : blocks[i]->arguments) line.append(" ").append(Syntax(arg, &blocks));
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> HelpLines(const CommandDoc& doc) {
  std::vector<HelpEntry> subs;
  for (const CommandDoc& sub : doc.subcommands) {
    subs.push_back(HelpEntry{sub.name, &sub.arguments, {}, sub.summary});
  }
  return HelpLines(doc.name, {}, subs);
}

}  // namespace rl::command

// The RL.* command rows (see docs.h).
#include "rl/command/docs.h"

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

CommandDoc Row(std::string name, int arity, uint32_t flags, std::string summary,
               std::vector<ArgDoc> args, int first_key = 1) {
  CommandDoc doc;
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

std::vector<CommandDoc> MakeDocs() {
  std::vector<CommandDoc> rows;
  const std::vector<ArgDoc> check_args = {Arg("key", "key"), TargetDoc(),
                                          Arg("n", "integer", kArgOptional, "COST"),
                                          Arg("headers", "pure-token", kArgOptional, "HEADERS"),
                                          Arg("limits", "pure-token", kArgOptional, "LIMITS")};
  rows.push_back(Row("rl.check", -4, kDocWrite | kDocFast,
                     "Checks and consumes: all limits allow or nothing is taken. Replies "
                     "allowed, limit, remaining, retry_after_ms, reset_after_ms.",
                     check_args));
  rows.push_back(Row("rl.peek", -4, kDocReadonly | kDocFast,
                     "What RL.CHECK would answer, changing nothing.", check_args));
  rows.push_back(Row("rl.reset", -4, kDocWrite | kDocFast,
                     "Forgets the state of these limits for the key (their penalty blocks and "
                     "leases too); replies how many had something to forget.",
                     {Arg("key", "key"), TargetDoc()}));
  const std::vector<ArgDoc> adjust_args = {Arg("key", "key"), TargetDoc(),
                                           Arg("n", "integer", 0, "COST"),
                                           Arg("headers", "pure-token", kArgOptional, "HEADERS"),
                                           Arg("limits", "pure-token", kArgOptional, "LIMITS")};
  CommandDoc refund = Row("rl.refund", -4, kDocWrite | kDocFast,
                          "Gives back up to n to every limit (never above a fresh state). "
                          "Replies as RL.CHECK of cost 0 would right after.",
                          adjust_args);
  refund.since = "0.2.0";
  rows.push_back(std::move(refund));
  CommandDoc charge = Row("rl.charge", -4, kDocWrite | kDocFast,
                          "Takes n from every limit even into debt (settle-later costs). Replies "
                          "as RL.CHECK of cost 0 would right after: denied while in debt.",
                          adjust_args);
  charge.since = "0.2.0";
  rows.push_back(std::move(charge));
  CommandDoc acquire =
      Row("rl.acquire", -4, kDocWrite | kDocFast,
          "Takes a lease of the CONCURRENCY limit when every limit allows (all or nothing). "
          "Replies as RL.CHECK plus the lease id, nil when none was taken.",
          {Arg("key", "key"), AcquireTargetDoc(), Arg("n", "integer", kArgOptional, "COST"),
           Arg("headers", "pure-token", kArgOptional, "HEADERS"),
           Arg("limits", "pure-token", kArgOptional, "LIMITS")});
  acquire.since = "0.2.0";
  acquire.complexity = "O(L + N) for L limits and N leases held";
  rows.push_back(std::move(acquire));
  CommandDoc release = Row("rl.release", 3, kDocWrite | kDocFast | kDocNoDenyOom,
                           "Ends a lease; replies 1 if it was held, 0 if it had already ended.",
                           {Arg("key", "key"), Arg("lease_id", "string")});
  release.since = "0.2.0";
  release.complexity = "O(N) for N leases held";
  rows.push_back(std::move(release));
  CommandDoc policy = Row("rl.policy", -2, 0, "Named policies: SET, GET, DEL, LIST, HELP.", {}, 0);
  policy.complexity = "O(1), LIST O(N) for N policies";
  policy.subcommands.push_back(
      Row("rl.policy|set", -4, kDocWrite, "Defines or replaces a named policy.",
          {Arg("name", "string"), ConcurrencyDoc(kArgOptional), LimitDoc(kArgMultiple),
           Arg("shadow", "pure-token", kArgOptional, "SHADOW"),
           ArgDoc{"failure",
                  "oneof",
                  "",
                  kArgOptional,
                  {Arg("fail_open", "pure-token", 0, "FAIL_OPEN"),
                   Arg("fail_closed", "pure-token", 0, "FAIL_CLOSED")}}},
          0));
  policy.subcommands.push_back(Row("rl.policy|get", 3, kDocReadonly | kDocFast,
                                   "Returns a policy's spec, or nil.", {Arg("name", "string")}, 0));
  policy.subcommands.push_back(Row("rl.policy|del", 3, kDocWrite | kDocFast,
                                   "Deletes a policy; replies 1 if it existed.",
                                   {Arg("name", "string")}, 0));
  policy.subcommands.push_back(
      Row("rl.policy|list", 2, kDocReadonly, "Returns every policy's name and spec.", {}, 0));
  policy.subcommands.push_back(
      Row("rl.policy|help", 2, kDocReadonly | kDocFast, "Prints this help.", {}, 0));
  rows.push_back(std::move(policy));
  rows.push_back(
      Row("cl.throttle", -5, kDocWrite | kDocFast,
          "redis-cell compatible GCRA: replies limited, limit, remaining, retry_after, reset_after "
          "(seconds).",
          {Arg("key", "key"), Arg("max_burst", "integer"), Arg("count", "integer"),
           Arg("period", "integer"), Arg("quantity", "integer", kArgOptional)}));
  return rows;
}

std::string Render(const ArgDoc& arg) {
  std::string text;
  if (arg.type == "pure-token") {
    text = arg.token;
  } else if (arg.type == "block" && arg.name == "limit") {
    text = "<limit>";
  } else if (arg.type == "block" && arg.name == "concurrency") {
    text = "CONCURRENCY n [LEASE ttl]";
  } else if (arg.type == "block") {
    for (const ArgDoc& child : arg.arguments) {
      if (!text.empty()) text += ' ';
      text += Render(child);
    }
  } else if (arg.type == "oneof") {
    for (const ArgDoc& child : arg.arguments) {
      if (!text.empty()) text += '|';
      text += Render(child);
    }
    if ((arg.flags & kArgOptional) == 0) text = "(" + text + ")";
  } else {
    text = arg.token.empty() ? arg.name : arg.token + " " + arg.name;
  }
  if (arg.flags & kArgMultiple) text += "...";
  if (arg.flags & kArgOptional) text = "[" + text + "]";
  return text;
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
  const size_t bar = doc.name.find('|');
  std::string text = AsciiUppered(bar == std::string::npos ? doc.name : doc.name.substr(bar + 1));
  for (const ArgDoc& arg : doc.arguments) {
    text += ' ';
    text += Render(arg);
  }
  return text;
}

std::vector<std::string> HelpLines(const CommandDoc& doc) {
  std::vector<std::string> lines;
  lines.push_back(AsciiUppered(doc.name) +
                  " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  for (const CommandDoc& sub : doc.subcommands) {
    lines.push_back(Usage(sub));
    lines.push_back("    " + sub.summary);
  }
  // "<limit>" in a usage line means the limit grammar; spell it out once, as Redis's HELP does
  // for its nested blocks.
  for (const std::string& line : lines) {
    if (line.find("<limit>") == std::string::npos) continue;
    ArgDoc limit = LimitDoc(0);
    limit.name = "expanded";  // render the block's parts, not "<limit>" again
    lines.push_back("<limit> is: " + Render(limit));
    break;
  }
  return lines;
}

}  // namespace rl::command

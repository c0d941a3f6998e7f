// The rate-limit commands: RL.CHECK, RL.PEEK, RL.RESET, RL.POLICY and redis-cell's CL.THROTTLE.
// Each handler parses its arguments, calls one engine function and writes one reply. Inline
// limits are parsed into a fixed array and replies are written straight into the connection's
// output buffer, so a check allocates nothing.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "command_table.h"
#include "rl/decision.h"
#include "rl/headers.h"
#include "rl/limit.h"
#include "rl/limiter.h"
#include "server_state.h"

namespace rl::server {
namespace {

// Scope of CL.THROTTLE's state, so it never shares a bucket with RL.CHECK's inline limits.
constexpr std::string_view kThrottleScope = "cl.throttle";

void WriteStatusError(resp::Writer& w, const absl::Status& status) {
  std::string msg = "ERR ";
  msg.append(ToStd(status.message()));
  for (char& c : msg) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  w.Error(msg);
}

// What RL.CHECK / RL.PEEK / RL.RESET name: inline limits or a policy, plus options.
struct Target {
  std::array<rl::Limit, rl::kMaxLimitsPerCheck> limits;
  size_t count = 0;
  std::shared_ptr<const rl::Policy> policy;  // set for POLICY name
  int64_t cost = 1;
  bool headers = false;
};

// Parses args[2..] as (<limit>... | POLICY name) [COST n] [HEADERS]. Writes the error reply and
// returns false on failure. `options` = whether COST and HEADERS are accepted.
bool ParseTarget(CommandContext& ctx, bool options, Target* t) {
  auto args = ctx.args;
  size_t pos = 2;
  if (EqualsLower(args[pos], "policy")) {
    if (pos + 1 >= args.size()) {
      WriteSyntaxError(ctx.w);
      return false;
    }
    t->policy = ctx.state.policies.Get(args[pos + 1]);
    if (t->policy == nullptr) {
      ctx.w.Error(fmt::format("ERR no such policy '{}'", args[pos + 1]));
      return false;
    }
    pos += 2;
  } else {
    while (pos < args.size() && rl::ParseAlgorithm(args[pos]).has_value()) {
      if (t->count == t->limits.size()) {
        ctx.w.Error(fmt::format("ERR at most {} limits per check", rl::kMaxLimitsPerCheck));
        return false;
      }
      auto limit = rl::ParseLimit(args, &pos);
      if (!limit.ok()) {
        WriteStatusError(ctx.w, limit.status());
        return false;
      }
      t->limits[t->count++] = *limit;
    }
    if (t->count == 0) {
      ctx.w.Error(fmt::format(
          "ERR expected a limit (TOKEN_BUCKET, GCRA, SLIDING_LOG, SLIDING_WINDOW, FIXED_WINDOW, "
          "LEAKY_BUCKET) or POLICY name, got '{}'",
          args[pos].substr(0, 64)));
      return false;
    }
  }
  while (pos < args.size()) {
    if (options && EqualsLower(args[pos], "cost") && pos + 1 < args.size()) {
      if (!ParseInt64(args[pos + 1], &t->cost)) {
        ctx.w.Error("ERR value is not an integer or out of range");
        return false;
      }
      if (t->cost < 0) {
        ctx.w.Error("ERR COST must not be negative");
        return false;
      }
      pos += 2;
    } else if (options && EqualsLower(args[pos], "headers")) {
      t->headers = true;
      ++pos;
    } else {
      WriteSyntaxError(ctx.w);
      return false;
    }
  }
  return true;
}

// The contract's reply: RESP2 an array of five integers (+ headers), RESP3 a map.
void WriteDecision(CommandContext& ctx, const rl::Decision& d, const Target& t,
                   bool shadow_denied) {
  resp::Writer& w = ctx.w;
  bool allowed = d.allowed || shadow_denied;
  int64_t retry = shadow_denied ? 0 : d.retry_after_ms;
  std::vector<rl::HeaderField> headers;
  if (t.headers) {
    rl::Decision shown = d;
    shown.allowed = allowed;
    shown.retry_after_ms = retry;
    std::string_view name = t.policy ? std::string_view(t.policy->name) : "default";
    headers = rl::HeaderValues(shown, name, ctx.state.limiter->clock().WallMs());
  }
  size_t fields = 5 + (t.headers ? 1 : 0);
  if (w.protocol() >= 3) {
    w.MapHeader(fields + (shadow_denied ? 1 : 0));
    w.Bulk("allowed");
    w.Integer(allowed ? 1 : 0);
    w.Bulk("limit");
    w.Integer(d.limit);
    w.Bulk("remaining");
    w.Integer(d.remaining);
    w.Bulk("retry_after_ms");
    w.Integer(retry);
    w.Bulk("reset_after_ms");
    w.Integer(d.reset_after_ms);
    if (t.headers) w.Bulk("headers");
  } else {
    w.ArrayHeader(fields);
    w.Integer(allowed ? 1 : 0);
    w.Integer(d.limit);
    w.Integer(d.remaining);
    w.Integer(retry);
    w.Integer(d.reset_after_ms);
  }
  if (t.headers) {
    w.MapHeader(headers.size());  // RESP2: flat name, value array
    for (const rl::HeaderField& h : headers) {
      w.Bulk(h.name);
      w.Bulk(h.value);
    }
  }
  if (shadow_denied && w.protocol() >= 3) {
    w.Bulk("shadow_denied");
    w.Integer(1);
  }
}

void CheckOrPeek(CommandContext& ctx, bool peek) {
  Target t;
  if (!ParseTarget(ctx, /*options=*/true, &t)) return;
  std::string_view key = ctx.args[1];
  rl::Limiter& limiter = *ctx.state.limiter;
  absl::StatusOr<rl::Decision> d;
  if (t.policy) {
    d = peek ? limiter.Peek(t.policy->name, key, t.policy->limits, t.cost)
             : limiter.Check(*t.policy, key, t.cost);
  } else {
    auto limits = absl::MakeConstSpan(t.limits.data(), t.count);
    d = peek ? limiter.Peek("", key, limits, t.cost) : limiter.Check("", key, limits, t.cost);
  }
  if (!d.ok()) return WriteStatusError(ctx.w, d.status());
  bool shadow_denied = t.policy && t.policy->shadow && !d->allowed;
  if (!peek) {
    ctx.stats.RecordCheck(t.policy ? std::string_view(t.policy->name) : std::string_view(),
                          d->allowed, shadow_denied, d->limit, d->remaining);
  }
  WriteDecision(ctx, *d, t, shadow_denied);
}

void Check(CommandContext& ctx) { CheckOrPeek(ctx, /*peek=*/false); }
void Peek(CommandContext& ctx) { CheckOrPeek(ctx, /*peek=*/true); }

void Reset(CommandContext& ctx) {
  Target t;
  if (!ParseTarget(ctx, /*options=*/false, &t)) return;
  size_t removed =
      t.policy ? ctx.state.limiter->Reset(t.policy->name, ctx.args[1], t.policy->limits)
               : ctx.state.limiter->Reset("", ctx.args[1],
                                          absl::MakeConstSpan(t.limits.data(), t.count));
  ctx.w.Integer(static_cast<int64_t>(removed));
}

void PolicySet(CommandContext& ctx) {
  auto policy = rl::ParsePolicy(ctx.args[2], ctx.args.subspan(3));
  if (!policy.ok()) return WriteStatusError(ctx.w, policy.status());
  absl::Status st = ctx.state.policies.SetRuntime(std::move(*policy));
  if (!st.ok()) return WriteStatusError(ctx.w, st);
  ctx.w.SimpleString("OK");
}

void PolicyGet(CommandContext& ctx) {
  auto policy = ctx.state.policies.Get(ctx.args[2]);
  if (policy == nullptr) return ctx.w.Null();
  ctx.w.Bulk(rl::FormatPolicy(*policy));
}

void PolicyDel(CommandContext& ctx) {
  ctx.w.Integer(ctx.state.policies.Delete(ctx.args[2]) ? 1 : 0);
}

// name -> spec: RESP3 a map, RESP2 a flat array, sorted by name.
void PolicyList(CommandContext& ctx) {
  auto all = ctx.state.policies.List();
  ctx.w.MapHeader(all.size());
  for (const auto& policy : all) {
    ctx.w.Bulk(policy->name);
    ctx.w.Bulk(rl::FormatPolicy(*policy));
  }
}

int64_t CeilSeconds(int64_t ms) { return ms <= 0 ? 0 : (ms + 999) / 1000; }

// CL.THROTTLE key max_burst count period [quantity], as redis-cell: GCRA with capacity
// max_burst + 1 and rate count / period seconds; reply [limited, limit, remaining,
// retry_after s (-1 when allowed), reset_after s], partial seconds rounded up.
void Throttle(CommandContext& ctx) {
  auto args = ctx.args;
  if (args.size() > 6) return WriteWrongArity(ctx.w, "cl.throttle");
  int64_t max_burst = 0, count = 0, period = 0, quantity = 1;
  if (!ParseInt64(args[2], &max_burst) || !ParseInt64(args[3], &count) ||
      !ParseInt64(args[4], &period) || (args.size() == 6 && !ParseInt64(args[5], &quantity))) {
    return ctx.w.Error("ERR value is not an integer or out of range");
  }
  if (max_burst < 0 || max_burst >= rl::kMaxLimit) {
    return ctx.w.Error("ERR max_burst must be in [0, 2^40)");
  }
  if (count <= 0 || period <= 0) return ctx.w.Error("ERR Zero rates are not supported");
  if (count > rl::kMaxLimit || period > rl::kMaxWindowMs / 1000) {
    return ctx.w.Error("ERR count or period out of range");
  }
  if (quantity < 0) return ctx.w.Error("ERR quantity must not be negative");
  rl::Limit limit;
  limit.algorithm = rl::Algorithm::kGcra;
  limit.limit = count;
  limit.window_ms = period * 1000;
  limit.burst = max_burst + 1;
  auto d = ctx.state.limiter->Check(kThrottleScope, args[1], absl::MakeConstSpan(&limit, 1),
                                    quantity);
  if (!d.ok()) return WriteStatusError(ctx.w, d.status());
  ctx.stats.RecordCheck(kThrottleScope, d->allowed, false, max_burst + 1, d->remaining);
  resp::Writer& w = ctx.w;
  w.ArrayHeader(5);
  w.Integer(d->allowed ? 0 : 1);
  w.Integer(max_burst + 1);
  w.Integer(d->remaining);
  w.Integer(d->allowed || d->retry_after_ms < 0 ? -1 : CeilSeconds(d->retry_after_ms));
  w.Integer(CeilSeconds(d->reset_after_ms));
}

ArgDoc Arg(std::string name, std::string type, uint8_t flags = 0, std::string token = "") {
  return ArgDoc{std::move(name), std::move(type), std::move(token), flags, {}};
}

// <limit> := ALGORITHM limit window [BURST n], for COMMAND DOCS.
ArgDoc LimitDoc(uint8_t flags) {
  ArgDoc algorithm{"algorithm", "oneof", "", 0,
                   {Arg("token_bucket", "pure-token", 0, "TOKEN_BUCKET"),
                    Arg("gcra", "pure-token", 0, "GCRA"),
                    Arg("sliding_log", "pure-token", 0, "SLIDING_LOG"),
                    Arg("sliding_window", "pure-token", 0, "SLIDING_WINDOW"),
                    Arg("fixed_window", "pure-token", 0, "FIXED_WINDOW"),
                    Arg("leaky_bucket", "pure-token", 0, "LEAKY_BUCKET")}};
  return ArgDoc{"limit", "block", "", flags,
                {algorithm, Arg("limit", "integer"), Arg("window", "string"),
                 Arg("burst", "integer", kArgOptional, "BURST")}};
}

ArgDoc TargetDoc() {
  return ArgDoc{"target", "oneof", "", 0,
                {LimitDoc(kArgMultiple), Arg("name", "string", 0, "POLICY")}};
}

CommandSpec Row(std::string name, int arity, uint32_t flags, Handler handler, std::string summary,
                std::vector<ArgDoc> args, int first_key = 1) {
  CommandSpec spec;
  spec.name = std::move(name);
  spec.arity = arity;
  spec.flags = flags;
  spec.handler = handler;
  spec.first_key = first_key;
  spec.group = "rl";
  spec.summary = std::move(summary);
  spec.since = "0.1.0";
  spec.complexity = "O(L) for L limits";
  spec.arguments = std::move(args);
  return spec;
}

}  // namespace

void AddRlCommands(std::vector<CommandSpec>* rows) {
  std::vector<ArgDoc> check_args = {Arg("key", "key"), TargetDoc(),
                                    Arg("n", "integer", kArgOptional, "COST"),
                                    Arg("headers", "pure-token", kArgOptional, "HEADERS")};
  rows->push_back(Row("rl.check", -4, kCmdWrite | kCmdFast, Check,
                      "Checks and consumes: all limits allow or nothing is taken. Replies "
                      "allowed, limit, remaining, retry_after_ms, reset_after_ms.",
                      check_args));
  rows->push_back(Row("rl.peek", -4, kCmdReadonly | kCmdFast, Peek,
                      "What RL.CHECK would answer, changing nothing.", check_args));
  rows->push_back(Row("rl.reset", -4, kCmdWrite | kCmdFast, Reset,
                      "Forgets the state of these limits for the key; replies how many existed.",
                      {Arg("key", "key"), TargetDoc()}));
  {
    CommandSpec policy = Row("rl.policy", -2, 0, nullptr, "Named policies: SET, GET, DEL, LIST.",
                             {}, 0);
    policy.subcommands.push_back(Row(
        "rl.policy|set", -4, kCmdWrite, PolicySet, "Defines or replaces a named policy.",
        {Arg("name", "string"), LimitDoc(kArgMultiple),
         Arg("shadow", "pure-token", kArgOptional, "SHADOW"),
         ArgDoc{"failure", "oneof", "", kArgOptional,
                {Arg("fail_open", "pure-token", 0, "FAIL_OPEN"),
                 Arg("fail_closed", "pure-token", 0, "FAIL_CLOSED")}}},
        0));
    policy.subcommands.push_back(Row("rl.policy|get", 3, kCmdReadonly | kCmdFast, PolicyGet,
                                     "Returns a policy's spec, or nil.", {Arg("name", "string")},
                                     0));
    policy.subcommands.push_back(Row("rl.policy|del", 3, kCmdWrite | kCmdFast, PolicyDel,
                                     "Deletes a policy; replies 1 if it existed.",
                                     {Arg("name", "string")}, 0));
    policy.subcommands.push_back(Row("rl.policy|list", 2, kCmdReadonly, PolicyList,
                                     "Returns every policy's name and spec.", {}, 0));
    rows->push_back(std::move(policy));
  }
  CommandSpec throttle = Row(
      "cl.throttle", -5, kCmdWrite | kCmdFast, Throttle,
      "redis-cell compatible GCRA: replies limited, limit, remaining, retry_after, reset_after "
      "(seconds).",
      {Arg("key", "key"), Arg("max_burst", "integer"), Arg("count", "integer"),
       Arg("period", "integer"), Arg("quantity", "integer", kArgOptional)});
  rows->push_back(std::move(throttle));
}

}  // namespace rl::server

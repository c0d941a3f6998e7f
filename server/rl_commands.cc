// The rate-limit commands of rl-server: RL.CHECK, RL.PEEK, RL.RESET, RL.REFUND, RL.CHARGE,
// RL.ACQUIRE, RL.RELEASE, RL.POLICY and redis-cell's CL.THROTTLE. Grammar, validation, decisions
// and reply shapes live in the shared command layer (command/, also behind rl.so); this file only
// supplies the server's engine (the shared rl::Limiter, with per-policy statistics), its policy
// store and its command table rows. Inline limits are parsed into a fixed array (or taken from the
// connection's LimitCache when the client sends the same list again) and replies go straight into
// the connection's output buffer, so a check allocates nothing.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "command_families.h"
#include "command_table.h"
#include "rl/command/commands.h"
#include "rl/command/docs.h"
#include "rl/decision.h"
#include "rl/limiter.h"
#include "server_state.h"

namespace rl::server {
namespace {

using command::Acquired;
using command::ReleaseRequest;
using command::Request;
using command::ThrottleRequest;
using command::Verb;

// The Engine rl-server runs commands on: the shared limiter, each decision counted per policy
// (the engine's own answer, before shadow mode turns a denial into an allowance).
class ServerEngine {
 public:
  explicit ServerEngine(CommandContext& ctx) : ctx_(ctx), engine_(*ctx.state.limiter) {}

  absl::StatusOr<Decision> Check(const Request& r) {
    absl::StatusOr<Decision> d = engine_.Check(r);
    if (d.ok()) {
      ctx_.stats.RecordCheck(KindOf(r), r.scope, d->allowed, r.shadow && !d->allowed, d->limit,
                             d->remaining);
      if (Watched() && CheckChanged(r.limits, r.cost, *d)) Changed(r.key);
    }
    return d;
  }
  // A watching client's read of a watched key: EXEC fails if the state becomes fresh before it.
  absl::StatusOr<Decision> Peek(const Request& r) {
    absl::StatusOr<Decision> d = engine_.Peek(r);
    if (d.ok() && ctx_.txn != nullptr && ctx_.txn->watching()) ReadByWatcher(r);
    return d;
  }
  absl::StatusOr<int64_t> Reset(const Request& r) {
    absl::StatusOr<int64_t> n = engine_.Reset(r);
    if (Watched() && n.ok() && *n > 0) Changed(r.key);
    return n;
  }
  // Both always apply (limiter.h).
  absl::StatusOr<Decision> Refund(const Request& r) { return Applied(r.key, engine_.Refund(r)); }
  absl::StatusOr<Decision> Charge(const Request& r) { return Applied(r.key, engine_.Charge(r)); }
  // An acquire counts as a check of its policy (allowed: a lease was granted).
  absl::StatusOr<Acquired> Acquire(const Request& r) {
    absl::StatusOr<Acquired> a = engine_.Acquire(r);
    if (a.ok()) {
      const Decision& d = a->decision;
      ctx_.stats.RecordCheck(KindOf(r), r.scope, d.allowed, r.shadow && !d.allowed, d.limit,
                             d.remaining);
      // A denied acquire holds and changes nothing; a shadow denial takes no lease.
      if (Watched() && d.allowed && !d.shadow_denied) Changed(r.key);
    }
    return a;
  }
  absl::StatusOr<bool> Release(const ReleaseRequest& r) {
    absl::StatusOr<bool> held = engine_.Release(r);
    if (Watched() && held.ok() && *held) Changed(r.key);
    return held;
  }
  absl::StatusOr<Decision> Throttle(const ThrottleRequest& t) {
    absl::StatusOr<Decision> d = engine_.Throttle(t);
    if (d.ok()) {
      ctx_.stats.RecordCheck(CheckKind::kThrottle, {}, d->allowed, false, t.limit.capacity(),
                             d->remaining);
      if (Watched() && CheckChanged(absl::MakeConstSpan(&t.limit, 1), t.quantity, *d)) {
        Changed(t.key);
      }
    }
    return d;
  }
  int64_t WallNowMs() { return engine_.WallNowMs(); }

 private:
  // Statistics are kept by kind, so a policy named like an internal user has its own counters.
  static CheckKind KindOf(const Request& r) {
    return r.scope == command::kInlineScope ? CheckKind::kInline : CheckKind::kPolicy;
  }

  // Whether a check changed its key's state (what WATCH sees): consumed, or started a penalty
  // block (a denial then has the block's whole length to wait). A denial otherwise, a shadow
  // denial and a check of cost 0 change nothing.
  static bool CheckChanged(absl::Span<const Limit> limits, int64_t cost, const Decision& d) {
    if (d.allowed) return cost > 0 && !d.shadow_denied;
    for (size_t i = 0; i < d.count && i < limits.size(); ++i) {
      if (limits[i].block_ms > 0 && d.limits[i].retry_after_ms == limits[i].block_ms) return true;
    }
    return false;
  }
  absl::StatusOr<Decision> Applied(std::string_view key, absl::StatusOr<Decision> d) {
    if (Watched() && d.ok()) Changed(key);
    return d;
  }
  // When the state read becomes fresh: the resets of a peek of cost 0 (a peek's own answer
  // counts its cost as used).
  void ReadByWatcher(const Request& r) {
    Request now_state = r;
    now_state.limits = r.limits;  // into r's storage, alive for this call
    now_state.cost = 0;
    absl::StatusOr<Decision> d = engine_.Peek(now_state);
    if (!d.ok()) return;
    int64_t fresh_after = 0;
    for (size_t i = 0; i < d->count; ++i) {
      fresh_after = std::max(fresh_after, d->limits[i].reset_after_ms);
    }
    const int64_t now = ctx_.state.limiter->clock().NowMs();
    ctx_.txn->Read(r.key, now, now + fresh_after);
  }
  // Whether anybody WATCHes a key: otherwise a change costs nothing more.
  bool Watched() const { return ctx_.state.watches.watched_keys() > 0; }
  void Changed(std::string_view key) { ctx_.state.watches.Changed(key); }

  CommandContext& ctx_;
  command::LimiterEngine engine_;
};

// The Registry the policy commands run on: runtime definitions in the server's PolicyStore.
class ServerRegistry {
 public:
  explicit ServerRegistry(PolicyStore& store) : store_(store) {}
  absl::Status Set(rl::Policy policy) { return store_.SetRuntime(std::move(policy)); }
  bool Delete(std::string_view name) { return store_.Delete(name); }
  std::shared_ptr<const rl::Policy> Get(std::string_view name) { return store_.Get(name); }
  std::vector<std::shared_ptr<const rl::Policy>> List() { return store_.List(); }

 private:
  PolicyStore& store_;
};

command::PolicyLookup Lookup(CommandContext& ctx) {
  PolicyStore* store = &ctx.state.policies;
  if (PolicyCache* cache = ctx.policy_cache) {
    return [store, cache](std::string_view name) { return cache->Find(*store, name); };
  }
  return [store](std::string_view name) { return store->Get(name); };
}

void Check(CommandContext& ctx) {
  ServerEngine engine(ctx);
  command::RunCheck(engine, ctx.w, Verb::kCheck, ctx.args, Lookup(ctx), ctx.limit_cache);
}
// RL.CHECK and RL.PEEK waiting in a pipeline: their states' table lines, requested while the
// commands ahead of them run, for a named policy (from the connection's policy cache) or else for
// the inline list this client sent last (its limit cache), which most clients repeat. The list is
// not compared with the command's tokens (the command does that): a wrong guess, like an unknown
// name, loads lines nobody reads and changes no answer.
void PrefetchCheck(CommandContext& ctx) {
  const absl::Span<const std::string_view> args = ctx.args;
  if (args.size() < 3) return;
  if (args.size() >= 4 && EqualsIgnoreCase(args[2], "POLICY")) {
    if (std::shared_ptr<const Policy> p = ctx.policy_cache->Find(ctx.state.policies, args[3])) {
      ctx.state.limiter->Prefetch(p->name, args[1], p->limits);
    }
    return;
  }
  if (absl::Span<const Limit> limits = ctx.limit_cache->last(); !limits.empty()) {
    ctx.state.limiter->Prefetch(command::kInlineScope, args[1], limits);
  }
}
void Peek(CommandContext& ctx) {
  ServerEngine engine(ctx);
  command::RunCheck(engine, ctx.w, Verb::kPeek, ctx.args, Lookup(ctx), ctx.limit_cache);
}
void Reset(CommandContext& ctx) {
  ServerEngine engine(ctx);
  command::RunReset(engine, ctx.w, ctx.args, Lookup(ctx), ctx.limit_cache);
}
void Refund(CommandContext& ctx) {
  ServerEngine engine(ctx);
  command::RunAdjust(engine, ctx.w, Verb::kRefund, ctx.args, Lookup(ctx), ctx.limit_cache);
}
void Charge(CommandContext& ctx) {
  ServerEngine engine(ctx);
  command::RunAdjust(engine, ctx.w, Verb::kCharge, ctx.args, Lookup(ctx), ctx.limit_cache);
}
void Acquire(CommandContext& ctx) {
  ServerEngine engine(ctx);
  command::RunAcquire(engine, ctx.w, ctx.args, Lookup(ctx), ctx.limit_cache);
}
void Release(CommandContext& ctx) {
  ServerEngine engine(ctx);
  command::RunRelease(engine, ctx.w, ctx.args);
}
void Throttle(CommandContext& ctx) {
  ServerEngine engine(ctx);
  command::RunThrottle(engine, ctx.w, ctx.args);
}
void PolicySet(CommandContext& ctx) {
  ServerRegistry registry(ctx.state.policies);
  command::RunPolicySet(registry, ctx.w, ctx.args);
}
void PolicyGet(CommandContext& ctx) {
  ServerRegistry registry(ctx.state.policies);
  command::RunPolicyGet(registry, ctx.w, ctx.args);
}
void PolicyDel(CommandContext& ctx) {
  ServerRegistry registry(ctx.state.policies);
  command::RunPolicyDel(registry, ctx.w, ctx.args);
}
void PolicyList(CommandContext& ctx) {
  ServerRegistry registry(ctx.state.policies);
  command::RunPolicyList(registry, ctx.w);
}
void PolicyHelp(CommandContext& ctx) {
  command::RunHelp(ctx.w, *command::FindRlCommandDoc("rl.policy"));
}

// No default: -Wswitch (an error here) names a row this server does not serve.
Handler HandlerFor(command::CommandId id) {
  using command::CommandId;
  switch (id) {
    case CommandId::kCheck:
      return Check;
    case CommandId::kPeek:
      return Peek;
    case CommandId::kReset:
      return Reset;
    case CommandId::kRefund:
      return Refund;
    case CommandId::kCharge:
      return Charge;
    case CommandId::kAcquire:
      return Acquire;
    case CommandId::kRelease:
      return Release;
    case CommandId::kPolicy:
      return nullptr;  // a container: the table dispatches to its subcommands
    case CommandId::kPolicySet:
      return PolicySet;
    case CommandId::kPolicyGet:
      return PolicyGet;
    case CommandId::kPolicyDel:
      return PolicyDel;
    case CommandId::kPolicyList:
      return PolicyList;
    case CommandId::kPolicyHelp:
      return PolicyHelp;
    case CommandId::kThrottle:
      return Throttle;
  }
  return nullptr;
}

uint32_t FlagsFor(uint32_t doc_flags) {
  return ((doc_flags & command::kDocWrite) ? kCmdWrite : 0u) |
         ((doc_flags & command::kDocReadonly) ? kCmdReadonly : 0u) |
         ((doc_flags & command::kDocFast) ? kCmdFast : 0u);
}

// A command table row from the shared docs, with this server's handler.
CommandSpec RowFrom(const command::CommandDoc& doc) {
  CommandSpec spec = Row("rl", doc.name, doc.arity, FlagsFor(doc.flags), HandlerFor(doc.id),
                         doc.summary, doc.since, doc.arguments);
  spec.first_key = doc.first_key;
  spec.complexity = doc.complexity;
  spec.family = kFamilyRl;
  if (doc.id == command::CommandId::kCheck || doc.id == command::CommandId::kPeek) {
    spec.prefetch = PrefetchCheck;
  }
  for (const command::CommandDoc& sub : doc.subcommands) spec.subcommands.push_back(RowFrom(sub));
  return spec;
}

}  // namespace

void AddRlCommands(std::vector<CommandSpec>* rows) {
  for (const command::CommandDoc& doc : command::RlCommandDocs()) rows->push_back(RowFrom(doc));
}

}  // namespace rl::server

// The RL.* commands, once: parse (request.h), run on an Engine, reply (reply.h). rl-server and
// rl.so each supply an Engine (where the state lives) and a Sink (how replies are written) and
// call these, so the two front ends cannot drift in grammar, validation, decision or reply.
//
// An Engine provides:
//   absl::StatusOr<Decision> Check(const Request&);   // all or nothing, consumes r.cost
//                                    // (r.max_wait_ms >= 0: as Limiter::ChargeWithin)
//   absl::StatusOr<Decision> Peek(const Request&);    // changes nothing
//   absl::StatusOr<int64_t>  Reset(const Request&);   // states removed
//   absl::StatusOr<Decision> Refund(const Request&);  // gives back r.cost
//   absl::StatusOr<Decision> Charge(const Request&);  // takes r.cost, even into debt
//   absl::StatusOr<Acquired> Acquire(const Request&); // a lease of the CONCURRENCY limit
//   absl::StatusOr<bool>     Release(const ReleaseRequest&);  // true when it was held
//   absl::StatusOr<Decision> Throttle(const ThrottleRequest&);
//   int64_t WallNowMs();                              // Unix ms, for X-RateLimit-Reset
// returning the engine's raw decision; shadow mode is applied here.
//
// A Registry (named policies) provides:
//   absl::Status Set(Policy);  bool Delete(std::string_view);
//   std::shared_ptr<const Policy> Get(std::string_view);
//   std::vector<std::shared_ptr<const Policy>> List();
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rl/command/docs.h"
#include "rl/command/reply.h"
#include "rl/command/request.h"
#include "rl/decision.h"
#include "rl/limiter.h"

namespace rl::command {

using Args = absl::Span<const std::string_view>;

// What an Engine's Acquire answers: the decision, and the id of the lease taken (empty when none
// was: denied, or allowed without a slot, see rl::Lease::held).
struct Acquired {
  Decision decision;
  std::string lease_id;
};

// The RL.* commands that take limits accept a LimitCache (see limit_cache.h): the connection's
// last parsed limit list, reused when the same bytes come again.

// RL.CHECK (verb kCheck) and RL.PEEK (kPeek).
template <class Engine, class Sink>
void RunCheck(Engine& engine, Sink& w, Verb verb, Args args, const PolicyLookup& lookup,
              LimitCache* cache = nullptr) {
  Request r;
  if (absl::Status s = ParseRequest(verb, args, lookup, &r, cache); !s.ok()) {
    return WriteError(w, s);
  }
  absl::StatusOr<Decision> d = verb == Verb::kPeek ? engine.Peek(r) : engine.Check(r);
  if (!d.ok()) return WriteError(w, d.status());
  if (r.shadow) ApplyShadow(*d);
  WriteDecision(w, *d, r, r.headers ? engine.WallNowMs() : 0);
}

// RL.RESET -> the number of states removed.
template <class Engine, class Sink>
void RunReset(Engine& engine, Sink& w, Args args, const PolicyLookup& lookup,
              LimitCache* cache = nullptr) {
  Request r;
  if (absl::Status s = ParseRequest(Verb::kReset, args, lookup, &r, cache); !s.ok()) {
    return WriteError(w, s);
  }
  absl::StatusOr<int64_t> removed = engine.Reset(r);
  if (!removed.ok()) return WriteError(w, removed.status());
  w.Integer(*removed);
}

// RL.REFUND (verb kRefund) and RL.CHARGE (kCharge): RL.CHECK's reply, as a check of cost 0 would
// answer right after the refund or charge.
template <class Engine, class Sink>
void RunAdjust(Engine& engine, Sink& w, Verb verb, Args args, const PolicyLookup& lookup,
               LimitCache* cache = nullptr) {
  Request r;
  if (absl::Status s = ParseRequest(verb, args, lookup, &r, cache); !s.ok()) {
    return WriteError(w, s);
  }
  absl::StatusOr<Decision> d = verb == Verb::kRefund ? engine.Refund(r) : engine.Charge(r);
  if (!d.ok()) return WriteError(w, d.status());
  if (r.shadow) ApplyShadow(*d);
  WriteDecision(w, *d, r, r.headers ? engine.WallNowMs() : 0);
}

// RL.ACQUIRE: RL.CHECK's reply with the lease id last (nil when no lease was taken).
template <class Engine, class Sink>
void RunAcquire(Engine& engine, Sink& w, Args args, const PolicyLookup& lookup,
                LimitCache* cache = nullptr) {
  Request r;
  if (absl::Status s = ParseRequest(Verb::kAcquire, args, lookup, &r, cache); !s.ok()) {
    return WriteError(w, s);
  }
  absl::StatusOr<Acquired> a = engine.Acquire(r);
  if (!a.ok()) return WriteError(w, a.status());
  if (r.shadow) ApplyShadow(a->decision);
  WriteDecision(w, a->decision, r, r.headers ? engine.WallNowMs() : 0, &a->lease_id);
}

// RL.RELEASE key lease-id -> 1 when the lease was held, 0 when it had already ended.
template <class Engine, class Sink>
void RunRelease(Engine& engine, Sink& w, Args args) {
  ReleaseRequest r;
  if (absl::Status s = ParseRelease(args, &r); !s.ok()) return WriteError(w, s);
  absl::StatusOr<bool> held = engine.Release(r);
  if (!held.ok()) return WriteError(w, held.status());
  w.Integer(*held ? 1 : 0);
}

// CL.THROTTLE, redis-cell's arguments and reply.
template <class Engine, class Sink>
void RunThrottle(Engine& engine, Sink& w, Args args) {
  ThrottleRequest t;
  if (absl::Status s = ParseThrottle(args, &t); !s.ok()) return WriteError(w, s);
  absl::StatusOr<Decision> d = engine.Throttle(t);
  if (!d.ok()) return WriteError(w, d.status());
  WriteThrottle(w, *d, t);
}

// RL.POLICY SET name <limit>... [SHADOW] [FAIL_OPEN|FAIL_CLOSED]. `bare`: kMilliseconds only for
// a definition an earlier version replicated or logged (rl.so's replication stream and AOF).
template <class Registry, class Sink>
void RunPolicySet(Registry& registry, Sink& w, Args args,
                  BareDuration bare = BareDuration::kRefused) {
  if (args.size() < 4) return WriteError(w, SyntaxError());
  absl::StatusOr<Policy> policy = ParsePolicy(args[2], args.subspan(3), bare);
  if (!policy.ok()) return WriteError(w, policy.status());
  if (absl::Status s = registry.Set(*std::move(policy)); !s.ok()) return WriteError(w, s);
  w.SimpleString("OK");
}

// RL.POLICY GET name -> the policy's spec, or nil.
template <class Registry, class Sink>
void RunPolicyGet(Registry& registry, Sink& w, Args args) {
  std::shared_ptr<const Policy> policy = registry.Get(args[2]);
  if (policy == nullptr) return w.Null();
  w.Bulk(FormatPolicy(*policy));
}

// RL.POLICY DEL name -> 1 if it existed.
template <class Registry, class Sink>
void RunPolicyDel(Registry& registry, Sink& w, Args args) {
  w.Integer(registry.Delete(args[2]) ? 1 : 0);
}

// RL.POLICY LIST -> name, spec pairs sorted by name (RESP3 a map, RESP2 a flat array).
template <class Registry, class Sink>
void RunPolicyList(Registry& registry, Sink& w) {
  auto all = registry.List();
  w.MapHeader(all.size());
  for (const auto& policy : all) {
    w.Bulk(policy->name);
    w.Bulk(FormatPolicy(*policy));
  }
}

// `<COMMAND> HELP`: one status line per subcommand, from the command's docs, as Redis's HELP.
template <class Sink>
void RunHelp(Sink& w, const CommandDoc& doc) {
  const std::vector<std::string> lines = HelpLines(doc);
  w.ArrayHeader(lines.size());
  for (const std::string& line : lines) w.SimpleString(line);
}

// The Engine over an rl::Limiter: what rl-server (and an in-process caller of the command layer)
// runs on.
class LimiterEngine {
 public:
  explicit LimiterEngine(Limiter& limiter) : limiter_(limiter) {}

  absl::StatusOr<Decision> Check(const Request& r) {
    Carry(r);
    if (r.max_wait_ms >= 0) {
      return limiter_.ChargeWithin(r.scope, r.key, r.limits, r.cost, r.max_wait_ms);
    }
    return limiter_.Check(r.scope, r.key, r.limits, r.cost);
  }
  absl::StatusOr<Decision> Peek(const Request& r) {
    return limiter_.Peek(r.scope, r.key, r.limits, r.cost);
  }
  absl::StatusOr<int64_t> Reset(const Request& r) {
    return static_cast<int64_t>(limiter_.Reset(r.scope, r.key, r.limits));
  }
  absl::StatusOr<Decision> Refund(const Request& r) {
    Carry(r);
    return limiter_.Refund(r.scope, r.key, r.limits, r.cost);
  }
  absl::StatusOr<Decision> Charge(const Request& r) {
    Carry(r);
    return limiter_.Charge(r.scope, r.key, r.limits, r.cost);
  }
  // The lease outlives the call: it is held until RL.RELEASE or its ttl.
  absl::StatusOr<Acquired> Acquire(const Request& r) {
    Carry(r);
    absl::StatusOr<Lease> lease = limiter_.Acquire(r.scope, r.key, r.limits, r.cost);
    if (!lease.ok()) return lease.status();
    Acquired a{lease->decision(), lease->Detach()};
    return a;
  }
  absl::StatusOr<bool> Release(const ReleaseRequest& r) {
    return limiter_.Release(r.key, r.lease_id);
  }
  absl::StatusOr<Decision> Throttle(const ThrottleRequest& t) {
    return limiter_.Check(kThrottleScope, t.key, absl::MakeConstSpan(&t.limit, 1), t.quantity);
  }
  int64_t WallNowMs() { return limiter_.clock().WallMs(); }

 private:
  // A stored policy whose window changed: its states follow it first (Limiter::CarryOver).
  void Carry(const Request& r) {
    if (r.policy != nullptr && !r.policy->carried_from.empty()) {
      limiter_.CarryOver(*r.policy, r.key);
    }
  }

  Limiter& limiter_;
};

}  // namespace rl::command

// RL.APPLY (see apply.h): building it on the primary, replaying it on replicas and AOF loads.
#include "apply.h"

#include <array>
#include <string>
#include <vector>

#include "glue.h"
#include "permissions.h"
#include "replicate_args.h"
#include "rl/ascii.h"
#include "rl/key_state.h"
#include "state_type.h"

namespace rl::module {
namespace {

using Op = Effect::Op;

uint64_t g_mismatches = 0;  // commands run on the main thread

struct OpSpec {
  Op op;
  const char* name;
  bool limits;  // takes <scope> <limits>
  bool cost;    // takes <cost>
  bool lease;   // takes <lease-id>
};
constexpr OpSpec kOps[] = {
    {Op::kCheck, "CHECK", true, true, false},   {Op::kAcquire, "ACQUIRE", true, true, true},
    {Op::kRefund, "REFUND", true, true, false}, {Op::kCharge, "CHARGE", true, true, false},
    {Op::kReset, "RESET", true, false, false},  {Op::kRelease, "RELEASE", false, false, true},
};
const OpSpec& SpecOf(Op op) { return kOps[static_cast<size_t>(op)]; }

bool SameLimit(const Limit& a, const Limit& b) {
  return a.algorithm == b.algorithm && a.limit == b.limit && a.window_ms == b.window_ms &&
         a.burst == b.burst && a.block_ms == b.block_ms;
}

// The canonical text of `limits` (what RL.CHECK accepts). Clients repeat their limits with every
// check, so the last list's text is kept (commands run one at a time).
std::string_view LimitsText(absl::Span<const Limit> limits) {
  static std::array<Limit, kMaxLimitsPerCheck> last;
  static size_t last_count = 0;
  static std::string text;
  bool same = limits.size() == last_count && !text.empty();
  for (size_t i = 0; same && i < limits.size(); ++i) same = SameLimit(limits[i], last[i]);
  if (same) return text;
  text.clear();
  last_count = 0;
  for (const Limit& limit : limits) {
    if (!text.empty()) text += ' ';
    text += FormatLimit(limit);
    if (last_count < last.size()) last[last_count++] = limit;
  }
  if (last_count != limits.size()) last_count = 0;  // never more than kMaxLimitsPerCheck
  return text;
}

// RL.APPLY's arguments, parsed. Views into argv.
struct Parsed {
  int64_t now_ms = 0;
  Effect effect;
  int64_t states = 0;
  int64_t expiry_ms = 0;
};

// The limits of `text`, parsed and validated as RL.CHECK's; the last list is kept (a replica
// replays the same few lists over and over).
absl::Status ParseLimitsText(std::string_view text, absl::Span<const Limit>* out) {
  static std::string last_text;
  static std::array<Limit, kMaxLimitsPerCheck> last;
  static size_t last_count = 0;
  if (last_count > 0 && text == last_text) {
    *out = absl::MakeConstSpan(last.data(), last_count);
    return absl::OkStatus();
  }
  last_count = 0;
  const std::vector<std::string_view> tokens = SplitSpec(text);
  size_t pos = 0, count = 0;
  if (absl::Status s = ParseLimitsInto(tokens, &pos, absl::MakeSpan(last), &count); !s.ok()) {
    return s;
  }
  if (pos != tokens.size()) return absl::InvalidArgumentError("trailing tokens after the limits");
  last_text.assign(text);
  last_count = count;
  *out = absl::MakeConstSpan(last.data(), last_count);
  return absl::OkStatus();
}

bool ToInt(std::string_view text, int64_t* out) { return ParseInt64(text, out); }

// The primary's times are absolute Unix milliseconds; anything outside [0, 2^48) (year 10889)
// is a forgery, refused before it reaches the arithmetic.
constexpr int64_t kMaxNowMs = int64_t{1} << 48;

absl::Status Parse(absl::Span<const std::string_view> a, Parsed* p) {
  const auto syntax = [] { return absl::InvalidArgumentError("syntax error"); };
  if (a.size() < 7) return syntax();
  if (!ToInt(a[2], &p->now_ms) || p->now_ms < 0 || p->now_ms >= kMaxNowMs) {
    return absl::InvalidArgumentError("invalid time");
  }
  const OpSpec* spec = nullptr;
  for (const OpSpec& s : kOps) {
    if (EqualsIgnoreCase(a[3], s.name)) spec = &s;
  }
  if (spec == nullptr) return syntax();
  const size_t want = 4 + (spec->limits ? 2 : 0) + (spec->cost ? 1 : 0) + (spec->lease ? 1 : 0) + 2;
  if (a.size() != want) return syntax();
  size_t i = 4;
  Effect& e = p->effect;
  e.op = spec->op;
  if (spec->limits) {
    e.scope = a[i++];
    if (absl::Status s = ParseLimitsText(a[i++], &e.limits); !s.ok()) return s;
  }
  if (spec->cost && (!ToInt(a[i++], &e.cost) || e.cost < 0)) {
    return absl::InvalidArgumentError("invalid cost");
  }
  if (spec->lease) e.lease_id = a[i++];
  if (!ToInt(a[i++], &p->states) || !ToInt(a[i++], &p->expiry_ms)) {
    return absl::InvalidArgumentError("invalid result");
  }
  return absl::OkStatus();
}

// Runs the call on `state` as KeyEngine ran it on the primary.
absl::Status Run(KeyState& state, std::string_view key, const Parsed& p, bool* changed) {
  const Effect& e = p.effect;
  *changed = false;
  switch (e.op) {
    case Op::kCheck:
      return state.Check(e.scope, e.limits, e.cost, p.now_ms, changed).status();
    case Op::kAcquire:
      return state.AcquireAs(e.scope, key, e.limits, e.cost, p.now_ms, e.lease_id, changed)
          .status();
    case Op::kRefund:
      return state.Refund(e.scope, e.limits, e.cost, p.now_ms, changed).status();
    case Op::kCharge:
      return state.Charge(e.scope, e.limits, e.cost, p.now_ms, changed).status();
    case Op::kReset:
      *changed = state.Reset(e.scope, e.limits) > 0;
      return absl::OkStatus();
    case Op::kRelease:
      return state.Release(key, e.lease_id, p.now_ms, changed).status();
  }
  return absl::OkStatus();
}

// A replay that did not reach the primary's state: counted, and logged at most once a second.
void Mismatch(RedisModuleCtx* ctx, std::string_view key, const Parsed& p, const KeyState& s) {
  ++g_mismatches;
  static int64_t last_log_ms = 0;
  const int64_t now = RedisModule_Milliseconds();
  if (now >= last_log_ms && now - last_log_ms < 1000) return;
  last_log_ms = now;
  RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                  "rl: RL.APPLY %s on key '%s' left %zu states ending at %lld, the primary %lld "
                  "ending at %lld: this node's state differs (%llu such replays so far)",
                  SpecOf(p.effect.op).name, EchoToken(key).c_str(), s.size(),
                  static_cast<long long>(s.empty() ? 0 : s.ExpiryMs()),
                  static_cast<long long>(p.states), static_cast<long long>(p.expiry_ms),
                  static_cast<unsigned long long>(g_mismatches));
}

}  // namespace

int ApplyCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 2) return RedisModule_WrongArity(ctx);
  const ArgViews a = Views(argv, argc);
  Parsed p;
  if (absl::Status s = Parse(a, &p); !s.ok()) {
    return RedisModule_ReplyWithError(ctx, ("ERR " + std::string(s.message())).c_str());
  }
  StateKey key(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
  if (!key.status().ok()) {
    return RedisModule_ReplyWithError(ctx, std::string(key.status().message()).c_str());
  }
  // An AOF written by a clock ahead of this one (a node restarted with its wall clock behind):
  // the call runs at this node's time instead, so no state it builds waits past its own limits
  // (as an RDB load moves stored times, LoadShiftMs). Calls collapsed onto one time admit less,
  // never more; the primary's end state is then not expected. A replica never does this.
  const bool moved = LoadShiftMs(p.now_ms) != 0;
  if (moved) p.now_ms = Clock().NowMs();
  bool changed = false;
  const absl::Status run = Run(key.state(), a[1], p, &changed);
  const KeyState& s = key.state();
  if (!moved &&
      (static_cast<int64_t>(s.size()) != p.states || (!s.empty() && s.ExpiryMs() != p.expiry_ms))) {
    Mismatch(ctx, a[1], p, s);
  }
  key.CommitReplayed(p.now_ms, RedisModule_GetContextFlags(ctx), p.effect);
  if (!run.ok() && !changed) {
    return RedisModule_ReplyWithError(ctx, ("ERR " + std::string(run.message())).c_str());
  }
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

void ReplicateEffect(RedisModuleCtx* ctx, RedisModuleString* name, int64_t now_ms, const Effect& e,
                     size_t states, int64_t expiry_ms) {
  const OpSpec& spec = SpecOf(e.op);
  ReplicateArgs args(ctx);
  args.Key(name);
  args.Number(now_ms);
  args.Text(spec.name);
  if (e.op == Op::kRelease) {
    args.Once(e.lease_id);
  } else {
    args.Text(e.scope);
    args.Text(LimitsText(e.limits));
    if (e.op != Op::kReset) args.Number(e.cost);
    if (e.op == Op::kAcquire) args.Once(e.lease_id);
  }
  args.Number(static_cast<int64_t>(states));
  args.Number(expiry_ms);
  args.Replicate("RL.APPLY");
}

bool RegisterApply(RedisModuleCtx* ctx) {
  // Internal like RL.SETSTATE: what replicas and the AOF receive, never for applications; guarded
  // as RESTORE is (permissions.h), and not callable from scripts (held to no user's ACL there).
  return RedisModule_CreateCommand(ctx, "rl.apply", GuardedApplyCommand,
                                   "write deny-oom admin deny-script", 1, 1, 1) == REDISMODULE_OK;
}

uint64_t ApplyMismatches() { return g_mismatches; }

}  // namespace rl::module

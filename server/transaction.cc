// MULTI/EXEC/DISCARD/WATCH/UNWATCH: the watch registry, a connection's queue and the command
// rows; see transaction.h. Texts and reply shapes follow Redis 7.0.
#include "transaction.h"

#include <fmt/format.h>

#include <algorithm>

#include "absl/strings/string_view.h"
#include "command_families.h"
#include "server.h"
#include "server_state.h"

namespace rl::server {
// ---- WatchRegistry ----

void WatchRegistry::Changed(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(absl::string_view(key.data(), key.size()));
  if (it == by_key_.end()) return;
  for (WatchSet* set : it->second) set->dirty.store(true, std::memory_order_relaxed);
}

void WatchRegistry::Watch(WatchSet* set, std::string_view key) {
  for (const WatchSet::Key& k : set->keys) {
    if (k.key == key) return;
  }
  set->keys.push_back({std::string(key)});
  std::lock_guard<std::mutex> lock(mu_);
  by_key_[std::string(key)].push_back(set);
  watched_.store(by_key_.size(), std::memory_order_relaxed);
}

void WatchRegistry::UnwatchAll(WatchSet* set) {
  if (!set->keys.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const WatchSet::Key& k : set->keys) {
      auto it = by_key_.find(k.key);
      if (it == by_key_.end()) continue;
      std::vector<WatchSet*>& sets = it->second;
      sets.erase(std::remove(sets.begin(), sets.end(), set), sets.end());
      if (sets.empty()) by_key_.erase(it);
    }
    watched_.store(by_key_.size(), std::memory_order_relaxed);
    set->keys.clear();
  }
  set->dirty.store(false, std::memory_order_relaxed);
}

bool WatchRegistry::Dirty(const WatchSet& set, int64_t now) {
  if (set.dirty.load(std::memory_order_relaxed)) return true;
  for (const WatchSet::Key& k : set.keys) {
    // Live when the client read it, fresh by now: expired in between.
    if (k.fresh_at > k.read_at && k.fresh_at <= now) return true;
  }
  return false;
}

void Transaction::Read(std::string_view key, int64_t now, int64_t fresh_at) {
  for (WatchSet::Key& k : watch_.keys) {
    if (k.key != key || fresh_at <= now) continue;
    if (k.fresh_at <= k.read_at) k.read_at = now;  // the first live read
    k.fresh_at = std::max(k.fresh_at, fresh_at);
  }
}

// ---- Transaction ----

Transaction::~Transaction() { Reset(); }

void Transaction::ClearQueue() {
  queue_.clear();
  arg_spans_.clear();
  arena_.clear();
  if (arena_.capacity() > (size_t{1} << 20)) std::string().swap(arena_);
  if (queued_bytes_ > 0) {
    state_.global.client_query_bytes.fetch_sub(static_cast<int64_t>(queued_bytes_),
                                               std::memory_order_relaxed);
    queued_bytes_ = 0;
  }
}

void Transaction::Reset() {
  active_ = false;
  failed_ = false;
  ClearQueue();
  state_.watches.UnwatchAll(&watch_);
  Publish();
}

void Transaction::Publish() {
  session_->multi_queued.store(active_ ? static_cast<int64_t>(queue_.size()) : -1,
                               std::memory_order_relaxed);
  session_->multi_mem.store(queued_bytes_, std::memory_order_relaxed);
}

bool Transaction::InterceptExec(const CommandSpec* found, absl::Span<const std::string_view> args,
                                resp::Writer& w) {
  if (found == nullptr || found->name != "exec" || args.size() == 1) return false;
  Reset();
  w.Error(
      "EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command");
  return true;
}

void Transaction::Queue(const CommandSpec* spec, absl::Span<const std::string_view> args,
                        resp::Writer& w) {
  // What the queue holds for this command: its bytes and the bookkeeping around them.
  size_t bytes = sizeof(Queued) + args.size() * sizeof(arg_spans_[0]);
  for (std::string_view a : args) bytes += a.size();
  const size_t limit = state_.config.client_query_limit;
  if (queue_.size() >= kMaxQueuedCommands || queued_bytes_ + bytes > limit) {
    failed_ = true;
    return w.Error(fmt::format(
        "ERR MULTI queue full (at most {} commands and client-query-buffer-limit {} bytes); "
        "the transaction will be discarded",
        kMaxQueuedCommands, limit));
  }
  GlobalStats& global = state_.global;
  const auto delta = static_cast<int64_t>(bytes);
  const int64_t total = global.client_query_bytes.fetch_add(delta, std::memory_order_relaxed);
  if (total + delta > static_cast<int64_t>(state_.config.client_query_total)) {
    global.client_query_bytes.fetch_sub(delta, std::memory_order_relaxed);
    failed_ = true;
    return w.Error(
        "ERR MULTI queue refused: all clients' query buffers are at client-query-buffer-total; "
        "the transaction will be discarded");
  }
  queued_bytes_ += bytes;
  queue_.push_back({spec, arg_spans_.size(), args.size()});
  for (std::string_view a : args) {
    arg_spans_.emplace_back(arena_.size(), a.size());
    arena_.append(a);
  }
  Publish();
  w.SimpleString("QUEUED");
}

void Transaction::Multi(resp::Writer& w) {
  if (active_) return w.Error("ERR MULTI calls can not be nested");
  active_ = true;
  failed_ = false;
  Publish();
  w.SimpleString("OK");
}

void Transaction::DiscardCommand(resp::Writer& w) {
  if (!active_) return w.Error("ERR DISCARD without MULTI");
  Reset();
  w.SimpleString("OK");
}

void Transaction::WatchCommand(CommandContext& ctx) {
  if (active_) return ctx.w.Error("ERR WATCH inside MULTI is not allowed");
  for (size_t i = 1; i < ctx.args.size(); ++i) state_.watches.Watch(&watch_, ctx.args[i]);
  ctx.w.SimpleString("OK");
}

bool Transaction::NeedsGate() const {
  if (!watch_.keys.empty()) return true;
  return std::any_of(queue_.begin(), queue_.end(),
                     [](const Queued& q) { return q.spec->family == kFamilyRl; });
}

void Transaction::Exec(CommandContext& ctx) {
  if (!active_) return ctx.w.Error("ERR EXEC without MULTI");
  if (failed_) {
    Reset();
    return ctx.w.Error("EXECABORT Transaction discarded because of previous errors.");
  }
  // With every slot of the gate held, no RL.* command of another client is running or starts
  // until the queue has run, and every change made before is in the watch registry.
  const bool gate = worker_ != nullptr && state_.gate.slots() > 0 && NeedsGate();
  if (gate) {
    worker_->ReleaseGate();
    state_.gate.LockAll();
  }
  if (state_.watches.Dirty(watch_, state_.limiter->clock().NowMs())) {
    if (gate) state_.gate.UnlockAll();
    Reset();
    return ctx.w.NullArray();
  }
  active_ = false;
  RunQueued(ctx);
  if (gate) state_.gate.UnlockAll();
  Reset();
}

void Transaction::RunQueued(CommandContext& ctx) {
  ctx.w.ArrayHeader(queue_.size());
  std::vector<std::string_view> args;
  for (const Queued& q : queue_) {
    args.clear();
    for (size_t i = q.first_arg; i < q.first_arg + q.args; ++i) {
      args.emplace_back(arena_.data() + arg_spans_[i].first, arg_spans_[i].second);
    }
    ctx.session.last_command.store(q.spec, std::memory_order_relaxed);
    // One `now` for the whole transaction: the EXEC's (CommandClock's scope is the EXEC's).
    CommandContext sub{absl::MakeConstSpan(args), ctx.w, ctx.session,     ctx.state, ctx.stats,
                       ctx.limit_cache,           this,  ctx.policy_cache};
    q.spec->handler(sub);
    ctx.stats.RecordLatency(q.spec->family);
  }
}

// ---- Command rows ----

namespace {

constexpr std::string_view kNoConnection = "ERR transactions need a client connection";

void MultiCmd(CommandContext& ctx) {
  if (ctx.txn == nullptr) return ctx.w.Error(kNoConnection);
  ctx.txn->Multi(ctx.w);
}
void ExecCmd(CommandContext& ctx) {
  if (ctx.txn == nullptr) return ctx.w.Error(kNoConnection);
  ctx.txn->Exec(ctx);
}
void DiscardCmd(CommandContext& ctx) {
  if (ctx.txn == nullptr) return ctx.w.Error(kNoConnection);
  ctx.txn->DiscardCommand(ctx.w);
}
void WatchCmd(CommandContext& ctx) {
  if (ctx.txn == nullptr) return ctx.w.Error(kNoConnection);
  ctx.txn->WatchCommand(ctx);
}
void UnwatchCmd(CommandContext& ctx) {
  // Inside EXEC too (UNWATCH is queued); EXEC forgets the keys at its end anyway.
  if (ctx.txn != nullptr && !ctx.txn->active()) ctx.state.watches.UnwatchAll(ctx.txn->watch());
  ctx.w.SimpleString("OK");
}

}  // namespace

void AddTransactionCommands(std::vector<CommandSpec>* rows) {
  constexpr std::string_view g = "transactions";
  // MULTI, EXEC, DISCARD and WATCH run at once inside MULTI (kCmdNoQueue), as in Redis.
  constexpr uint32_t kAtOnce = kCmdNoQueue | kCmdLoading | kCmdStale;
  rows->push_back(
      Row(g, "multi", 1, kAtOnce | kCmdFast, MultiCmd, "Starts a transaction.", "1.2.0"));
  CommandSpec exec = Row(g, "exec", 1, kAtOnce, ExecCmd,
                         "Executes all commands in a transaction, together.", "1.2.0");
  exec.complexity = "Depends on the commands in the transaction";
  rows->push_back(std::move(exec));
  rows->push_back(
      Row(g, "discard", 1, kAtOnce | kCmdFast, DiscardCmd, "Discards a transaction.", "2.0.0"));
  CommandSpec watch = Row(g, "watch", -2, kAtOnce | kCmdFast, WatchCmd,
                          "Monitors changes to keys to determine the execution of a transaction.",
                          "2.2.0", {Arg("key", "key", kArgMultiple)});
  watch.first_key = 1;
  watch.last_key = -1;
  watch.complexity = "O(1) for every key.";
  rows->push_back(std::move(watch));
  rows->push_back(Row(g, "unwatch", 1, kCmdFast | kCmdLoading | kCmdStale, UnwatchCmd,
                      "Forgets about watched keys of a transaction.", "2.2.0"));
}

}  // namespace rl::server

// MULTI/EXEC/DISCARD/WATCH/UNWATCH on rl-server, with Redis 7's semantics:
//  - TransactionGate makes a transaction's commands run together: every I/O thread holds its own
//    slot of the gate while it runs RL.* commands (a mutex on a cache line of its own, taken once
//    per batch of commands read, never contended by another thread unless an EXEC runs), and an
//    EXEC that runs RL.* commands or checks watched keys takes every slot. So no other client's
//    command runs while a transaction runs, and clients that use no transaction pay one
//    uncontended lock per batch.
//  - WatchRegistry tells a WATCH that its key changed, exactly per key: every command that changed
//    a key's state marks the clients watching that key. Nothing is done per command while nobody
//    watches anything (one relaxed load).
//  - Transaction is one connection's MULTI queue and WATCH set, bounded in commands and bytes. A
//    watched key's state that the client read after WATCH (RL.PEEK) and that becomes fresh before
//    EXEC counts as changed (expired), as a Redis key read with a TTL that expires would.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "command_table.h"
#include "resp/writer.h"

namespace rl::server {

class Worker;
struct ServerState;

class TransactionGate {
 public:
  // One slot per I/O thread; call before any of them runs.
  void Init(size_t slots) {
    slots_ = std::make_unique<Slot[]>(slots);
    count_ = slots;
  }
  size_t slots() const { return count_; }
  void LockShared(size_t slot) { slots_[slot].mu.lock(); }
  void UnlockShared(size_t slot) { slots_[slot].mu.unlock(); }
  // Every slot, in index order (so two EXECs cannot deadlock); the caller holds none.
  void LockAll() {
    for (size_t i = 0; i < count_; ++i) slots_[i].mu.lock();
  }
  void UnlockAll() {
    for (size_t i = count_; i-- > 0;) slots_[i].mu.unlock();
  }

 private:
  struct alignas(64) Slot {
    std::mutex mu;
  };
  std::unique_ptr<Slot[]> slots_;
  size_t count_ = 0;
};

// One connection's watched keys.
struct WatchSet {
  struct Key {
    std::string key;
    // When the state this client read after WATCH becomes fresh, and when it read it (0 = not
    // read, or fresh when read).
    int64_t fresh_at = 0;
    int64_t read_at = 0;
  };
  std::atomic<bool> dirty{false};  // a watched key changed since WATCH
  std::vector<Key> keys;
};

class WatchRegistry {
 public:
  // Adds `key` to `set` (once) and marks it as changed by anyone from now on.
  void Watch(WatchSet* set, std::string_view key);
  // Forgets every key of `set` and clears its dirty mark.
  void UnwatchAll(WatchSet* set);
  // A command changed the state of `key` (consumed, reset, refunded, charged, leased, released,
  // started a block): marks the key's watchers. Call only when watched_keys() > 0.
  void Changed(std::string_view key);
  // Whether a watched key of `set` changed, or a state read after WATCH became fresh, by `now`.
  static bool Dirty(const WatchSet& set, int64_t now);
  // Keys watched by anyone. Read without a lock: a WATCH registers before the watcher reads or
  // changes anything, and a change that runs after those took a shard lock after them, so it
  // sees the registration.
  size_t watched_keys() const { return watched_.load(std::memory_order_relaxed); }

 private:
  std::mutex mu_;
  absl::flat_hash_map<std::string, std::vector<WatchSet*>> by_key_;
  std::atomic<size_t> watched_{0};  // by_key_.size()
};

// A connection's MULTI state. Lives on its connection's I/O thread, except `watch_.dirty`.
class Transaction {
 public:
  static constexpr size_t kMaxQueuedCommands = 10000;

  // `session` shows the queue in CLIENT LIST.
  Transaction(ServerState& state, Worker* worker, ClientSession* session)
      : state_(state), worker_(worker), session_(session) {}
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  bool active() const { return active_; }
  // Inside MULTI: handles `args` before the table resolves it, when EXEC is sent with arguments
  // (Redis discards the transaction then). True when it replied.
  bool InterceptExec(const CommandSpec* found, absl::Span<const std::string_view> args,
                     resp::Writer& w);
  // Inside MULTI: a command refused before queuing (unknown, arity, auth): EXEC will abort.
  void Fail() { failed_ = true; }
  // Inside MULTI: keeps a resolved command for EXEC and replies QUEUED, or refuses it (the queue
  // is full) and fails the transaction.
  void Queue(const CommandSpec* spec, absl::Span<const std::string_view> args, resp::Writer& w);

  // The commands' handlers (transaction_commands.cc).
  void Multi(resp::Writer& w);
  void Exec(CommandContext& ctx);
  void DiscardCommand(resp::Writer& w);
  void WatchCommand(CommandContext& ctx);
  // Ends MULTI (if any) and forgets the watched keys: DISCARD, EXEC, RESET.
  void Reset();
  WatchSet* watch() { return &watch_; }
  bool watching() const { return !watch_.keys.empty(); }
  // This client read `key`'s state (RL.PEEK) at `now`; it becomes fresh at `fresh_at`. Kept for
  // a watched key, so EXEC fails if that happens before it.
  void Read(std::string_view key, int64_t now, int64_t fresh_at);

 private:
  struct Queued {
    const CommandSpec* spec;
    size_t first_arg;  // into arg_spans_
    size_t args;
  };
  void ClearQueue();
  bool NeedsGate() const;
  void RunQueued(CommandContext& ctx);
  void Publish();  // the queue's size into the session, for CLIENT LIST

  ServerState& state_;
  Worker* worker_;  // null when not run by a Connection
  ClientSession* session_;
  bool active_ = false;
  bool failed_ = false;
  std::vector<Queued> queue_;
  std::string arena_;                                 // the queued arguments' bytes
  std::vector<std::pair<size_t, size_t>> arg_spans_;  // offset, length into arena_
  size_t queued_bytes_ = 0;  // counted in the server-wide query-buffer total
  WatchSet watch_;
};

}  // namespace rl::server

// rl::KeyState's per-key block (key_state_block.h) as a store of the one pipeline (pipeline.h):
// where a limit's state lives (its entry's offset), finding, making room for and writing back
// entries, and what changes the stored bytes (`*changed`: rl.so replicates a call by replaying
// it, so a replica must reach the very same bytes). One key's block is one Redis key: nothing
// else runs on it meanwhile, so it needs no lock.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "key_state_block.h"
#include "pipeline.h"
#include "rl/key_state.h"

namespace rl::internal::key_state {

// Where a limit's state lives in the block: its entry's id and, once found, offset (0 = none).
struct Where {
  size_t off;
  uint64_t id;
};
using Q = Pending<Where>;

// Stores (or moves) the block of state (scope, id) to end at `until`; false when the key already
// holds kMaxStates entries (the block then goes unrecorded).
// Out of line: cold, and inlined into a check it tripped a false -Wstringop-overflow.
ABSL_ATTRIBUTE_NOINLINE inline bool SetBlock(void*& block, uint64_t sid, uint64_t id,
                                             int64_t until) {
  Block b{static_cast<char*>(block)};
  if (const size_t off = b.Find(sid, id | kBlockBit); off != 0) {
    b.set_expiry(off, until);
    return true;
  }
  if (b.count() + 1 > KeyState::kMaxStates) return false;
  Reserve(block, b, kEntryHead);
  Append(b, sid, id | kBlockBit, until);
  return true;
}

class BlockStore {
 public:
  using Where = key_state::Where;

  // `read_only`: a Peek of a const KeyState, which must change nothing (not even pruning).
  BlockStore(void*& block, uint64_t sid, int64_t now, uint64_t nonce, bool read_only, bool* changed)
      : block_(block),
        b_{static_cast<char*>(block)},
        sid_(sid),
        now_(now),
        nonce_(nonce),
        read_only_(read_only),
        changed_(changed) {}
  BlockStore(const BlockStore&) = delete;
  BlockStore& operator=(const BlockStore&) = delete;

  const absl::Status& status() const { return status_; }

  template <RunOp>
  void Locate(size_t, Q& q, const Limit& limit) {
    q.at.off = 0;
    q.at.id = StateId(limit);
  }
  void Lock(size_t n) { n_ = n; }
  int64_t Now() const { return now_; }
  // Frees the pruned copies of a read-only run, and a block left without entries.
  void Unlock() {
    for (size_t i = 0; i < copies_; ++i) LogFree(copy_[i]);
    copies_ = 0;
    if (!read_only_ && b_.p != nullptr && b_.count() == 0) {
      StateFree(b_.p);
      block_ = nullptr;
      b_.p = nullptr;
    }
  }

  // The entry of the located state `q` (0: none), remembered in q.at.
  size_t FindEntry(Q& q) { return q.at.off = b_.Find(sid_, q.at.id); }
  bool FindTwo(Q& q, TwoWordState* old) {
    if (FindEntry(q) == 0) return false;
    *old = TwoWordState{b_.word(q.at.off, 0), b_.word(q.at.off, 1)};
    return true;
  }
  bool FindThree(Q& q, ThreeWordState* old) {
    if (FindEntry(q) == 0) return false;
    *old = ThreeWordState{b_.word(q.at.off, 0), b_.word(q.at.off, 1), b_.word(q.at.off, 2)};
    return true;
  }
  // A stored log is pruned in place (runs that left the window are dropped: a change of the
  // bytes); a read-only run evaluates a pruned copy.
  template <bool kReadOnly>
  LogBuf* FindLog(Q& q, const Limit& limit, int64_t now) {
    q.found = FindEntry(q) != 0;
    LogBuf* log = q.found ? b_.log(q.at.off) : nullptr;
    if (kReadOnly || read_only_) {
      LogBuf* copy = LogClone(log);
      LogPrune(copy, limit.window_ms, now);
      copy_[copies_++] = copy;
      return copy;
    }
    const int64_t before = LogTotal(log);
    LogPrune(log, limit.window_ms, now);
    if (LogTotal(log) != before) *changed_ = true;
    return log;
  }
  LeaseBuf* FindLeases(Q& q) {
    q.found = FindEntry(q) != 0;
    return q.found ? b_.leases(q.at.off) : nullptr;
  }

  // Penalty blocks are entries of their own (the state's id with kBlockBit).
  class BlockView {
   public:
    explicit BlockView(BlockStore& s) : s_(s) {}
    int64_t BlockedUntil(const Q& q, int64_t now) {
      return key_state::BlockedUntil(s_.b_, s_.sid_, q.at.id, now);
    }
    void StartBlock(const Q& q, int64_t until) {
      if (SetBlock(s_.block_, s_.sid_, q.at.id, until)) *s_.changed_ = true;
      s_.b_.p = static_cast<char*>(s_.block_);  // it may have moved (offsets stay valid)
    }

   private:
    BlockStore& s_;
  };
  BlockView Blocks() { return BlockView(*this); }

  // Drops the entries that are fresh-equivalent (it frees room and keeps the block small), then
  // checks that the new entries fit under kMaxStates and grows the block once for them. An error
  // leaves what was dropped dropped: a replay drops it too.
  template <RunOp kOp, size_t>
  Room ReserveRoom(Q* p, int64_t now, int64_t cost, Decision&) {
    size_t removed = 0;
    for (size_t off = kHeaderBytes; off < b_.bytes();) {
      if (b_.expiry(off) <= now) {
        EraseAt(b_, off);
        ++removed;
      } else {
        off += b_.size_at(off);
      }
    }
    if (removed > 0) *changed_ = true;  // even if the bound below refuses the call
    size_t added = 0, added_bytes = 0;
    for (size_t i = 0; i < n_; ++i) {
      Q& q = p[i];
      // Offsets moved; find the surviving entries again (dropped ones count as fresh, and their
      // evaluation was of a state equivalent to fresh, so it stands).
      if (removed > 0 && q.found && (q.at.off = b_.Find(sid_, q.at.id)) == 0) {
        q.found = false;
        q.log = nullptr;     // freed with the entry
        q.leases = nullptr;  // likewise
      }
      if (!q.found && WritesState(kOp, cost, q.kind)) {
        ++added;
        added_bytes += EntryBytes(q.at.id);
      }
    }
    if (b_.count() + added > KeyState::kMaxStates) {
      status_ = absl::ResourceExhaustedError(absl::StrCat(
          "too many rate-limit states under one key (at most ", KeyState::kMaxStates, ")"));
      return Room::kStop;
    }
    // Past every refusal the original call could meet (so a replay of a refused acquire drops
    // what it dropped): a replay of an acquire that took no lease must not take one.
    if (kOp == RunOp::kAcquire && nonce_ == 0) {
      for (size_t i = 0; i < n_; ++i) {
        if (p[i].kind != StateShape::kLeases) continue;
        status_ =
            absl::FailedPreconditionError("a replayed acquire without a lease id would lease");
        return Room::kStop;
      }
    }
    Reserve(block_, b_, added_bytes);
    return Room::kWrite;
  }
  bool Placed(size_t) const { return true; }
  void Grew(const Q&, size_t) {}
  void Update(const Q& q, const LimitResult&) { WriteState(b_, q.at.off, q); }
  void Insert(Q& q, const LimitResult&) {
    q.at.off = Append(b_, sid_, q.at.id, q.expiry_ms);
    WriteState(b_, q.at.off, q);
  }
  void Wrote(const Q*, size_t, int64_t, bool) { *changed_ = true; }
  // A stored state keeps its words; only an expiry that a changed limit moved is rewritten (both
  // times in the past mean the same: fresh). A peek writes nothing.
  template <RunOp kOp>
  void Refresh(const Q& q, const LimitResult&, int64_t now) {
    if (kOp == RunOp::kPeek || read_only_) return;
    const int64_t old = b_.expiry(q.at.off);
    if (old != q.expiry_ms && (old > now || q.expiry_ms > now)) {
      b_.set_expiry(q.at.off, q.expiry_ms);
      *changed_ = true;
    }
  }

  // New entries are made only by a charge: refuses one that would pass kMaxStates even after the
  // fresh entries are dropped (as a check drops them).
  bool BeginAdjust(const Q* p, absl::Span<const Limit> limits, int64_t amount, AdjustOp op,
                   int64_t now) {
    if (op != AdjustOp::kCharge || amount == 0) return true;
    auto missing = [&] {
      size_t added = 0;
      for (size_t i = 0; i < limits.size(); ++i) added += b_.Find(sid_, p[i].at.id) == 0;
      return added;
    };
    if (b_.count() + missing() <= KeyState::kMaxStates) return true;
    size_t removed = 0;
    for (size_t off = kHeaderBytes; off < b_.bytes();) {
      if (b_.expiry(off) <= now) {
        EraseAt(b_, off);
        ++removed;
      } else {
        off += b_.size_at(off);
      }
    }
    if (removed > 0) *changed_ = true;
    if (b_.count() + missing() <= KeyState::kMaxStates) return true;
    status_ = absl::ResourceExhaustedError(absl::StrCat(
        "too many rate-limit states under one key (at most ", KeyState::kMaxStates, ")"));
    return false;
  }
  // A refunded or charged state that changed: dropped when it is equivalent to fresh (a new log
  // made for nothing is freed), else written.
  void Adjusted(Q& q, const LimitResult&, bool changed, int64_t now) {
    if (q.found && q.kind == StateShape::kLog) b_.set_log(q.at.off, q.log);  // owned by the entry
    if (!changed) return;
    if (q.expiry_ms <= now) {
      if (q.found) {
        EraseAt(b_, q.at.off);
      } else if (q.kind == StateShape::kLog) {
        LogFree(q.log);
      }
    } else {
      if (!q.found) {
        Reserve(block_, b_, EntryBytes(q.at.id));
        q.at.off = Append(b_, sid_, q.at.id, q.expiry_ms);
      }
      WriteState(b_, q.at.off, q);
    }
    *changed_ = true;
  }
  // A lease set a release changed: dropped when it holds none (also a set that held none, which
  // only a decoded state can), else its expiry follows its leases.
  void Released(const Q& q, bool changed, int64_t now) {
    if (LeaseCount(q.leases) == 0) {
      EraseAt(b_, q.at.off);
      *changed_ = true;
    } else if (changed) {
      b_.set_expiry(q.at.off, LeaseExpiry(q.leases, now));
      *changed_ = true;
    }
  }
  void LocateLeases(Q& q) {
    q.at.off = 0;
    q.at.id = LimitId(Algorithm::kConcurrency, 0);
  }

 private:
  void*& block_;
  Block b_;
  const uint64_t sid_;
  const int64_t now_;
  const uint64_t nonce_;
  const bool read_only_;
  bool* const changed_;
  size_t n_ = 0;
  absl::Status status_;
  LogBuf* copy_[kMaxLimitsPerCheck];  // pruned copies of a read-only run's logs
  size_t copies_ = 0;
};

}  // namespace rl::internal::key_state

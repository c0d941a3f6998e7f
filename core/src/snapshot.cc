// Limiter snapshots: every live state and the key-hash seed in a versioned, checksummed byte
// string, with monotonic times turned into wall-clock times so a restarted process (whose
// steady clock starts elsewhere) reads them correctly.
//
// Layout (little-endian, through bytes.h): header {magic "RLSNAP\0\0", u32 version, u32 shard
// count, u64 seed, i64 wall ms at export}, then records {u8 kind | usage level << 4, u64 key, u32
// shard, i64 expiry (wall ms), payload}, then u64 XXH64 of everything before it. Payloads are
// state_codec.h's (two words, three words, a log, leases: the bytes KeyState writes, times in
// wall ms); a block has none (the expiry is the block's end, exact).
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bytes.h"
#include "limiter_impl.h"
#include "sliding_log.h"
#include "state_codec.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rl {

using internal::Clamp64;
using internal::int128;
using internal::LogBuf;
using internal::Shard;
using internal::Slot2;
using internal::Slot3;
using internal::SlotLog;
using internal::StateShape;

namespace {

constexpr char kMagic[8] = {'R', 'L', 'S', 'N', 'A', 'P', 0, 0};
// Version 2: state keys are a 64-bit XXH3 of (scope, key) mixed with (algorithm, window), the
// shard their top bits. Version 1's keys (half of a 128-bit hash) cannot be matched to a check
// any more, so such a snapshot is refused as unsupported. Version 3 adds each state's usage level
// (what evicting it gives away, see store.h) in the kind byte; version 2 states, whose level is
// unknown, load as kLevelHeavy: protected from eviction until their next check rewrites it.
// Version 4 adds penalty blocks (kind 3) and concurrency lease sets (kind 4), and lets a log run
// or total reach kMaxLogTotal (charges may overdraw a log). Older versions load unchanged.
constexpr uint32_t kVersion = 4;
constexpr uint32_t kOldestVersion = 2;
constexpr int kLevelShift = 4;
constexpr uint8_t kKindBlock = 3;
constexpr uint8_t kKindLeases = 4;
// A lease set's bound in a snapshot (the limiter's own is kMaxConcurrency per set).
constexpr uint32_t kMaxSnapshotLeases = 1 << 20;

using internal::ByteReader;
using internal::ByteWriter;

// Saturating shift between the monotonic and wall-clock frames.
int64_t Shift(int64_t t, int64_t delta) { return Clamp64(int128{t} + delta); }

}  // namespace

absl::Status Limiter::ExportState(std::string* out, uint64_t* states) const {
  return impl_->ExportState(out, states);
}

absl::Status Limiter::ImportState(std::string_view data, uint64_t* states) {
  return impl_->ImportState(data, states);
}

int64_t Limiter::Impl::ToWall(int64_t mono_now, int64_t floor_wall) const {
  const int64_t wanted = std::max(Shift(clock_->WallMs(), -mono_now), Shift(floor_wall, -mono_now));
  int64_t seen = min_to_wall_.load(std::memory_order_relaxed);
  while (seen < wanted &&
         !min_to_wall_.compare_exchange_weak(seen, wanted, std::memory_order_relaxed)) {
  }
  return std::max(seen, wanted);
}

absl::Status Limiter::Impl::ExportState(std::string* out, uint64_t* states) const {
  out->clear();
  ByteWriter w(out);
  const int64_t mono_now = clock_->NowMs();
  // Never before a wall time already exported or imported: a wall clock stepped back meanwhile
  // must not make this snapshot's times look newer than those of the last.
  const int64_t to_wall = ToWall(mono_now, INT64_MIN);
  const int64_t wall_now = Shift(mono_now, to_wall);
  out->append(kMagic, sizeof(kMagic));
  w.Put<uint32_t>(kVersion);
  w.Put<uint32_t>(static_cast<uint32_t>(shard_mask_ + 1));
  w.Put<uint64_t>(seed_);
  w.Put<int64_t>(wall_now);
  internal::LogRunList runs;
  internal::LeaseList leases;
  uint64_t written = 0;  // records as they are written: checks meanwhile cannot skew it
  for (size_t i = 0; i <= shard_mask_; ++i) {
    Shard& sh = shards_[i];
    internal::ShardLock lock(sh.mu);
    FoldHotAll(sh, clock_->NowMs());
    auto head = [&](uint8_t kind, uint64_t key, uint32_t expiry) {
      ++written;
      w.Put<uint8_t>(
          static_cast<uint8_t>(kind | internal::ExpiryCodec::Level(expiry) << kLevelShift));
      w.Put<uint64_t>(key);
      w.Put<uint32_t>(static_cast<uint32_t>(i));
      w.Put<int64_t>(Shift(expiry_.Decode(expiry), to_wall));
    };
    for (const Slot2& s : sh.two) {
      head(0, s.key, s.expiry);
      const int64_t words[2] = {expiry_.FromRel(s.rel_time()), s.word};
      internal::PutWords(w, StateShape::kTwoWord, words, to_wall);
    }
    for (const Slot3& s : sh.three) {
      head(1, s.key, s.expiry);
      const int64_t words[3] = {expiry_.FromRel(s.rel_time()), s.previous(), s.current()};
      internal::PutWords(w, StateShape::kThreeWord, words, to_wall);
    }
    for (const SlotLog& s : sh.logs) {
      head(2, s.key, s.expiry);
      internal::PutLog(w, s.log, to_wall, &runs);
    }
    for (const internal::SlotBlock& s : sh.blocks) {
      if (s.until <= mono_now) continue;  // ended
      ++written;
      w.Put<uint8_t>(kKindBlock);
      w.Put<uint64_t>(s.key);
      w.Put<uint32_t>(static_cast<uint32_t>(i));
      w.Put<int64_t>(Shift(s.until, to_wall));
    }
    for (const internal::SlotLease& s : sh.leases) {
      head(kKindLeases, s.key, s.expiry);
      internal::PutLeases(w, s.leases, to_wall, &leases);
    }
  }
  w.Put<uint64_t>(XXH64(out->data(), out->size(), 0));
  if (states != nullptr) *states = written;
  return absl::OkStatus();
}

namespace {

// One decoded record, times already in the monotonic frame. A log's runs or a lease set stay in
// the snapshot: `payload_at` is where they start (n = `runs`); `live` runs of a log (summing to
// `total`) are recent enough to be inside some window.
struct Record {
  uint8_t kind;
  uint8_t level;
  uint64_t key;
  uint32_t shard;
  int64_t expiry;
  int64_t v[3];
  uint32_t runs;
  uint32_t live;
  size_t payload_at;
  int64_t total;
};

// Requests older than the longest window are outside every window: a check would prune them at
// once, so the import leaves them out (which also keeps a log's time offsets within range).
bool LiveRun(int64_t t, int64_t mono_now) { return t > mono_now - kMaxWindowMs; }

// Reads and validates one record, log runs included.
absl::Status ReadRecord(ByteReader& r, uint32_t version, uint32_t shards, int64_t to_mono,
                        int64_t mono_now, Record* rec) {
  if (!r.Get(&rec->kind) || !r.Get(&rec->key) || !r.Get(&rec->shard) || !r.Get(&rec->expiry)) {
    return absl::DataLossError("snapshot record truncated");
  }
  rec->level = internal::kLevelHeavy;
  if (version >= 3) {
    if (rec->kind >> kLevelShift > internal::kLevelMask) {
      return absl::DataLossError("bad snapshot record");
    }
    rec->level = rec->kind >> kLevelShift;
    rec->kind &= (1 << kLevelShift) - 1;
  }
  const uint8_t max_kind = version >= 4 ? kKindLeases : 2;
  if (rec->kind > max_kind || rec->shard >= shards) {
    return absl::DataLossError("bad snapshot record");
  }
  rec->expiry = Shift(rec->expiry, to_mono);
  if (rec->kind == 2 || rec->kind == kKindLeases) {
    rec->payload_at = r.pos();
    rec->runs = 0;
    rec->total = 0;
    rec->live = 0;
    int64_t prev_time = INT64_MIN;
    const bool log = rec->kind == 2;
    auto read = [&](auto first, int64_t second) {
      ++rec->runs;
      if (!log) return true;  // lease ends are read at insertion
      const int64_t t = Shift(static_cast<int64_t>(first), to_mono), count = second;
      // Times never decrease; two runs may share a millisecond (a count past one run's field
      // starts another), as the limiter's own export writes them.
      if (count < 1 || count > internal::kMaxLogTotal || t < prev_time) return false;
      prev_time = t;
      if (!LiveRun(t, mono_now)) return true;
      if (rec->total > internal::kMaxLogTotal - count) return false;
      ++rec->live;
      rec->total += count;
      return true;
    };
    const internal::PayloadRead got =
        log ? internal::ReadPayloadPairs<int64_t>(r, UINT32_MAX, read)
            : internal::ReadPayloadPairs<uint64_t>(r, kMaxSnapshotLeases, read);
    if (got == internal::PayloadRead::kRefused) return absl::DataLossError("bad snapshot log run");
    if (got != internal::PayloadRead::kOk) {
      return absl::DataLossError(log ? "bad snapshot log" : "bad snapshot leases");
    }
  } else if (rec->kind != kKindBlock) {
    const bool three = rec->kind == 1;
    // The time moves into the monotonic frame (the store keeps it within 2^47 ms of its base).
    if (!internal::GetWords(
            r, three ? StateShape::kThreeWord : StateShape::kTwoWord,
            [to_mono](int64_t t) { return Shift(t, to_mono); }, rec->v)) {
      return absl::DataLossError("snapshot record truncated");
    }
    // Every algorithm keeps counts, ticks or token units after the time word, never negative
    // (the token bucket's top bits hold a shift the algorithm would shift by).
    if (rec->v[1] < 0 || (three && rec->v[2] < 0)) {
      return absl::DataLossError("bad snapshot record value");
    }
  }
  return absl::OkStatus();
}

// What the store keeps of a record: not state that is fresh by now, nor an empty log.
bool Kept(const Record& rec, int64_t mono_now) {
  if (rec.expiry <= mono_now) return false;
  if (rec.kind == 2) return rec.live > 0;
  return rec.kind != kKindLeases || rec.runs > 0;
}

// Inserts one validated record (kept: see Kept) into its shard.
void InsertRecord(Shard& sh, const internal::ExpiryCodec& codec, const Record& rec,
                  std::string_view payload, int64_t to_mono, int64_t mono_now)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
  const uint32_t expiry = codec.Encode(rec.expiry, rec.level);
  if (rec.kind == 0) {
    Slot2 slot{rec.key, expiry, 0, 0, rec.v[1]};
    slot.set_rel_time(codec.ToRel(rec.v[0]));
    sh.two.insert(slot);
  } else if (rec.kind == 1) {
    sh.three.insert(Slot3(rec.key, expiry, codec.ToRel(rec.v[0]), Slot3::ClampCount(rec.v[1]),
                          Slot3::ClampCount(rec.v[2])));
  } else if (rec.kind == kKindBlock) {
    sh.blocks.insert(internal::SlotBlock{rec.key, rec.expiry});
  } else if (rec.kind == kKindLeases) {
    ByteReader entries(payload);
    entries.Skip(rec.payload_at);
    internal::LeaseList leases;
    internal::ReadPayloadPairs<uint64_t>(entries, UINT32_MAX, [&](uint64_t nonce, int64_t end) {
      end = Shift(end, to_mono);
      if (end > mono_now) leases.emplace_back(nonce, end);  // ended leases stay ended
      return true;
    });
    internal::LeaseBuf* buf = internal::LeaseFromEntries(leases);
    if (buf == nullptr) return;
    const uint32_t lease_expiry =
        codec.Encode(internal::LeaseExpiry(buf, mono_now), internal::kLevelProtected);
    if (sh.leases.insert(internal::SlotLease{rec.key, lease_expiry, buf}).second) {
      sh.lease_bytes += internal::LeaseBytes(buf);
    } else {
      internal::LeaseFree(buf);
    }
  } else {
    ByteReader entries(payload);
    entries.Skip(rec.payload_at);
    internal::LogRunList runs;
    internal::ReadPayloadPairs<int64_t>(entries, UINT32_MAX, [&](int64_t t, int64_t count) {
      t = Shift(t, to_mono);
      // A run "in the future" (the saver's wall clock was ahead, or ours was stepped back)
      // counts as made now: the log appends at non-decreasing times only, and a request kept
      // in the window from now on can only under-admit.
      if (LiveRun(t, mono_now)) runs.emplace_back(std::min(t, mono_now), count);
      return true;
    });
    LogBuf* log = internal::LogFromRuns(runs, rec.total, [](LogBuf*) {});
    sh.log_bytes += internal::LogBytes(log);
    if (!sh.logs.insert(SlotLog{rec.key, expiry, log}).second) {
      sh.log_bytes -= internal::LogBytes(log);
      internal::LogFree(log);
    }
  }
}

// A snapshot's header, checked: its magic, checksum, version and shard count.
struct Header {
  std::string_view payload;  // after the magic, without the checksum
  uint32_t version;
  uint32_t shards;
  uint64_t seed;
  int64_t exported_wall;
  size_t records_at;  // where the records start in `payload`
};

absl::Status ReadHeader(std::string_view data, Header* h) {
  if (data.size() < sizeof(kMagic) + 8 || std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError("not an rl snapshot");
  }
  uint64_t checksum;
  std::memcpy(&checksum, data.data() + data.size() - 8, 8);
  const std::string_view body = data.substr(0, data.size() - 8);
  if (XXH64(body.data(), body.size(), 0) != checksum) {
    return absl::DataLossError("snapshot checksum mismatch");
  }
  h->payload = body.substr(sizeof(kMagic));
  ByteReader r(h->payload);
  if (!r.Get(&h->version) || !r.Get(&h->shards) || !r.Get(&h->seed) || !r.Get(&h->exported_wall)) {
    return absl::DataLossError("snapshot header truncated");
  }
  if (h->version < kOldestVersion || h->version > kVersion) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported snapshot version ", h->version));
  }
  // Records carry the exporter's shard index, checked for consistency only: a state's shard here
  // comes from its key (ShardOf), whatever the exporter's shard count and routing.
  if (h->shards == 0 || (h->shards & (h->shards - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot has ", h->shards, " shards; a shard count is a power of two"));
  }
  h->records_at = r.pos();
  return absl::OkStatus();
}

}  // namespace

absl::Status Limiter::Impl::ImportState(std::string_view data, uint64_t* states) {
  Header h{};
  if (absl::Status s = ReadHeader(data, &h); !s.ok()) return s;
  const std::string_view payload = h.payload;
  const uint32_t version = h.version, shards = h.shards;
  if (KeyCount() != 0) return absl::FailedPreconditionError("limiter already holds state");

  // The exporter wrote every time relative to its wall clock at `exported_wall`; a state then
  // waited at most its own window, block or lease from there. If our wall clock is behind that
  // (the exporter's was ahead, or ours was stepped back: a VM restored from a snapshot, a start
  // before time sync), taking it at its word would push every wait into the future by the
  // difference. The time base is then the export's instead: as if no time had passed since, which
  // keeps each wait within its own length and can only admit less than the truth.
  const int64_t mono_now = clock_->NowMs();
  const int64_t to_mono = -ToWall(mono_now, h.exported_wall);
  ByteReader r(payload);
  r.Skip(h.records_at);
  // First pass: validate everything before touching the store, so a malformed snapshot changes
  // nothing, and count the kept states per shard and table so each table is sized once (growing
  // them record by record rehashed every table several times).
  const size_t our_shards = shard_mask_ + 1;
  constexpr size_t kKinds = 5;
  std::vector<uint32_t> counts(our_shards * kKinds, 0);
  Record rec;
  uint64_t records = 0;
  while (r.left() > 0) {
    if (absl::Status s = ReadRecord(r, version, shards, to_mono, mono_now, &rec); !s.ok()) {
      return s;
    }
    ++records;
    if (Kept(rec, mono_now)) ++counts[ShardOf(rec.key) * kKinds + rec.kind];
  }

  // Second pass: insert, holding every shard's lock (taken in ascending order, as checks take
  // them) so a concurrent check sees all of the snapshot or none of it, and no lock is taken per
  // record.
  LockAll();
  for (size_t i = 0; i < our_shards; ++i) {
    Shard& sh = shards_[i];
    sh.mu.AssertHeld();  // by LockAll
    if (sh.Size() != 0) {
      UnlockAll();
      return absl::FailedPreconditionError("limiter already holds state");
    }
  }
  seed_ = h.seed;
  for (size_t i = 0; i < our_shards; ++i) {
    Shard& sh = shards_[i];
    sh.mu.AssertHeld();
    sh.two.reserve(counts[i * kKinds]);
    sh.three.reserve(counts[i * kKinds + 1]);
    sh.logs.reserve(counts[i * kKinds + 2]);
    sh.blocks.reserve(counts[i * kKinds + kKindBlock]);
    sh.leases.reserve(counts[i * kKinds + kKindLeases]);
  }
  ByteReader again(payload);
  again.Skip(h.records_at);
  while (again.left() > 0) {
    // Validated by the first pass.
    (void)ReadRecord(again, version, shards, to_mono, mono_now, &rec);
    if (!Kept(rec, mono_now)) continue;
    Shard& sh = shards_[ShardOf(rec.key)];
    sh.mu.AssertHeld();
    InsertRecord(sh, expiry_, rec, payload, to_mono, mono_now);
  }
  UnlockAll();
  if (states != nullptr) *states = records;
  return absl::OkStatus();
}

}  // namespace rl

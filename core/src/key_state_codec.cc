// rl::KeyState's encoding: what rl.so writes to RDB files, the AOF and replicas (RL.SETSTATE).
//
// Little-endian, independent of the block layout:
//   u8 version, u16 count, then per entry {u64 scope id, u8 kind, u64 window ms, i64 expiry ms,
//   payload}. The kind is the algorithm (0..5; 6 = CONCURRENCY, window 0), or 0x80 | algorithm
//   for a penalty block of that algorithm's state in that window (no payload; the expiry is the
//   block's end). Payloads are state_codec.h's (two words, three words, a log, leases: the bytes
//   a snapshot writes, in the caller's own frame).
// Version 1 has rate states only, of algorithms 0..5; version 2 adds blocks and leases (algorithm
// 6, CONCURRENCY); version 3 admits every algorithm of the registry (ids up to 127). Encode writes
// the lowest version that holds the state, so an older rl.so (a replica mid-upgrade) still reads
// every state it could hold; Decode reads all three.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bytes.h"
#include "key_state_block.h"
#include "leases.h"
#include "rl/key_state.h"
#include "sliding_log.h"
#include "state_alloc.h"
#include "state_codec.h"

namespace rl {

using internal::LeaseBuf;
using internal::LogBuf;
using internal::StateShape;
using namespace internal::key_state;  // NOLINT: the block layout's small helpers

namespace {

constexpr uint8_t kVersionRates = 1;
constexpr uint8_t kVersionBlocksAndLeases = 2;
constexpr uint8_t kVersionRegistry = 3;
// The highest algorithm id each older version knew (LEAKY_BUCKET, CONCURRENCY).
constexpr uint64_t kLastIdOfVersion1 = 5;
constexpr uint64_t kLastIdOfVersion2 = 6;
constexpr uint8_t kBlockKind = 0x80;
// Bounds Decode enforces on a log (LogAppend's own bound is 2^30 bytes).
constexpr uint32_t kMaxDecodedRuns = uint32_t{1} << 26;
constexpr int64_t kMaxTime = int64_t{1} << 61;

using internal::ByteReader;
using internal::ByteWriter;

absl::Status Corrupt(std::string_view what) {
  return absl::InvalidArgumentError(std::string("invalid rate-limit state: ").append(what));
}

}  // namespace

void KeyState::Encode(std::string* out) const {
  ByteWriter w(out);
  const Block b{static_cast<char*>(block_)};
  uint8_t version = kVersionRates;
  for (size_t off = kHeaderBytes; off < b.bytes(); off += b.size_at(off)) {
    const uint64_t id = static_cast<uint8_t>(IdAlgorithm(b.id(off)));
    if (id > kLastIdOfVersion2) {
      version = kVersionRegistry;
    } else if (IdIsBlock(b.id(off)) || id > kLastIdOfVersion1) {
      version = std::max(version, kVersionBlocksAndLeases);
    }
  }
  w.PutUint(version, 1);
  w.PutUint(b.count(), 2);
  internal::LogRunList runs;
  internal::LeaseList leases;
  for (size_t off = kHeaderBytes; off < b.bytes(); off += b.size_at(off)) {
    const uint64_t id = b.id(off);
    const Algorithm algorithm = IdAlgorithm(id);
    w.PutUint(b.scope(off), 8);
    w.PutUint(static_cast<uint8_t>(algorithm) | (IdIsBlock(id) ? kBlockKind : 0), 1);
    w.PutUint(static_cast<uint64_t>(IdWindow(id)), 8);
    w.PutUint(static_cast<uint64_t>(b.expiry(off)), 8);
    if (IdIsBlock(id)) continue;
    const StateShape kind = internal::ShapeOf(algorithm);
    if (kind == StateShape::kLog) {
      internal::PutLog(w, b.log(off), 0, &runs);
    } else if (kind == StateShape::kLeases) {
      internal::PutLeases(w, b.leases(off), 0, &leases);
    } else {
      const int64_t words[3] = {b.word(off, 0), b.word(off, 1),
                                kind == StateShape::kThreeWord ? b.word(off, 2) : 0};
      internal::PutWords(w, kind, words, 0);  // the caller's own frame
    }
  }
}

namespace {

// `t` moved by `shift`, kept within [-kMaxTime, kMaxTime] (order-preserving, so a log's runs
// stay sorted).
int64_t ShiftTime(int64_t t, int64_t shift) {
  if (shift == 0) return t;
  const __int128 moved = static_cast<__int128>(t) + shift;
  return static_cast<int64_t>(std::clamp<__int128>(moved, -kMaxTime, kMaxTime));
}

// One parsed entry, kept until every entry is read, so nothing is allocated for hostile sizes
// beyond what the input itself holds.
struct Parsed {
  uint64_t scope;
  uint64_t id;
  int64_t expiry;
  int64_t words[3];
  internal::LogRunList runs;
  internal::LeaseList leases;
};

// Reads a state's payload (a log's runs, a lease set or its words) into *e; the words' time moved
// by `shift_ms` (a log's and a lease set's times, validated as stored, move in PutEntry).
absl::Status ReadPayload(ByteReader& r, StateShape table, int64_t shift_ms, Parsed* e) {
  const char* why = nullptr;
  if (table == StateShape::kLog) {
    int64_t last = INT64_MIN, total = 0;
    const internal::PayloadRead got =
        internal::ReadPayloadPairs<int64_t>(r, kMaxDecodedRuns, [&](int64_t t, int64_t c) {
          if (t < -kMaxTime || t > kMaxTime || t < last) {
            why = "bad log time";
            return false;
          }
          if (c < 1 || c > internal::kMaxLogTotal || total > internal::kMaxLogTotal - c) {
            why = "bad log count";
            return false;
          }
          total += c;
          last = t;
          e->runs.emplace_back(t, c);
          return true;
        });
    if (got == internal::PayloadRead::kTruncated) return Corrupt("truncated log");
    if (got == internal::PayloadRead::kTooMany) return Corrupt("log too long");
    if (got == internal::PayloadRead::kRefused) return Corrupt(why);
  } else if (table == StateShape::kLeases) {
    const internal::PayloadRead got = internal::ReadPayloadPairs<uint64_t>(
        r, static_cast<uint64_t>(kMaxConcurrency), [&](uint64_t nonce, int64_t t) {
          if (nonce == 0 || t < -kMaxTime || t > kMaxTime) return false;
          e->leases.emplace_back(nonce, t);
          return true;
        });
    if (got == internal::PayloadRead::kTruncated) return Corrupt("truncated leases");
    if (got == internal::PayloadRead::kTooMany) return Corrupt("too many leases");
    if (got == internal::PayloadRead::kRefused) return Corrupt("bad lease");
  } else if (!internal::GetWords(
                 r, table, [shift_ms](int64_t t) { return ShiftTime(t, shift_ms); }, e->words)) {
    return Corrupt("truncated state");
  }
  return absl::OkStatus();
}

// Reads and validates one entry of an encoding of `version` (a two- or three-word state's time
// moved by `shift_ms`); `before` holds the entries read.
absl::Status ReadEntry(ByteReader& r, uint64_t version, int64_t shift_ms,
                       const std::vector<Parsed>& before, Parsed* e) {
  uint64_t kind = 0, window = 0;
  if (!r.GetUint(8, &e->scope) || !r.GetUint(1, &kind) || !r.GetUint(8, &window) ||
      !r.Get(&e->expiry)) {
    return Corrupt("truncated entry");
  }
  const bool block = (kind & kBlockKind) != 0;
  const uint64_t algorithm = kind & ~uint64_t{kBlockKind};
  const uint64_t max_algorithm = version == kVersionRates ? kLastIdOfVersion1
                                 : version == kVersionBlocksAndLeases
                                     ? kLastIdOfVersion2
                                     : internal::kAlgorithmCount - 1;
  if (algorithm > max_algorithm || algorithm >= internal::kAlgorithmCount ||
      (block && version == kVersionRates)) {
    return Corrupt("unknown algorithm");
  }
  const bool leases = internal::ShapeOf(static_cast<Algorithm>(algorithm)) == StateShape::kLeases;
  if (block && leases) return Corrupt("block of leases");
  if (leases ? window != 0 : (window < 1 || window > static_cast<uint64_t>(kMaxWindowMs))) {
    return Corrupt("bad window");
  }
  e->id = LimitId(static_cast<Algorithm>(algorithm), static_cast<int64_t>(window)) |
          (block ? kBlockBit : 0);
  for (const Parsed& other : before) {
    if (other.scope == e->scope && other.id == e->id) return Corrupt("duplicate state");
  }
  const StateShape table = internal::ShapeOf(static_cast<Algorithm>(algorithm));
  if (block) return absl::OkStatus();  // no payload
  return ReadPayload(r, table, shift_ms, e);
}

// Writes entry `e` (its times moved by `shift_ms`) at `off` of a block with room for it;
// returns the offset after it.
size_t PutEntry(Block& b, size_t off, Parsed& e, int64_t shift_ms) {
  char* p = b.p;
  // Times are validated as stored and moved afterwards (a two- or three-word state's time moved
  // as it was read).
  e.expiry = ShiftTime(e.expiry, shift_ms);
  for (auto& run : e.runs) run.first = ShiftTime(run.first, shift_ms);
  for (auto& lease : e.leases) lease.second = ShiftTime(lease.second, shift_ms);
  Store<uint64_t>(p + off, e.scope);
  Store<uint64_t>(p + off + 8, e.id);
  b.set_expiry(off, e.expiry);
  if (IdIsBlock(e.id)) {
    b.set_bytes(off + EntryBytes(e.id));
    b.set_count(b.count() + 1);
    return off + EntryBytes(e.id);
  }
  const StateShape kind = internal::ShapeOf(IdAlgorithm(e.id));
  if (kind == StateShape::kLog) {
    b.set_log(off, nullptr);
    b.set_bytes(off + EntryBytes(e.id));
    b.set_count(b.count() + 1);
    int64_t total = 0;
    for (const auto& run : e.runs) total += run.second;
    // Owned by the entry from the first append on, so a throwing allocation leaks nothing.
    internal::LogFromRuns(e.runs, total, [&](LogBuf* log) { b.set_log(off, log); });
  } else if (kind == StateShape::kLeases) {
    b.set_leases(off, nullptr);
    b.set_bytes(off + EntryBytes(e.id));
    b.set_count(b.count() + 1);
    b.set_leases(off, internal::LeaseFromEntries(e.leases));
  } else {
    for (size_t k = 0; k < PayloadWords(kind); ++k) b.set_word(off, k, e.words[k]);
    b.set_bytes(off + EntryBytes(e.id));
    b.set_count(b.count() + 1);
  }
  return off + EntryBytes(e.id);
}

}  // namespace

absl::StatusOr<KeyState> KeyState::Decode(std::string_view data) { return Decode(data, 0); }

absl::StatusOr<KeyState> KeyState::Decode(std::string_view data, int64_t shift_ms) {
  ByteReader r(data);
  uint64_t version = 0, count = 0;
  if (!r.GetUint(1, &version) || !r.GetUint(2, &count)) return Corrupt("truncated header");
  if (version < kVersionRates || version > kVersionRegistry) {
    return Corrupt(absl::StrCat("unsupported encoding version ", version));
  }
  if (count > kMaxStates) return Corrupt("too many states");
  if (count == 0) {
    if (!r.done()) return Corrupt("trailing bytes");
    return KeyState();
  }
  std::vector<Parsed> entries;
  entries.reserve(count);
  size_t bytes = kHeaderBytes;
  for (uint64_t i = 0; i < count; ++i) {
    Parsed e{};
    if (absl::Status s = ReadEntry(r, version, shift_ms, entries, &e); !s.ok()) return s;
    bytes += EntryBytes(e.id);
    entries.push_back(std::move(e));
  }
  if (!r.done()) return Corrupt("trailing bytes");

  char* p = static_cast<char*>(internal::StateAlloc(bytes));
  Store<uint16_t>(p, 0);
  Store<uint16_t>(p + 2, 0);
  Store<uint32_t>(p + 4, static_cast<uint32_t>(kHeaderBytes));
  KeyState state = AdoptBlock(p);  // owned from here on, so a throwing allocation leaks nothing
  Block b{p};
  size_t off = kHeaderBytes;
  for (Parsed& e : entries) off = PutEntry(b, off, e, shift_ms);
  return state;
}

}  // namespace rl

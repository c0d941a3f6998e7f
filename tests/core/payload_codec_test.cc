// Snapshots (Limiter::ExportState) and rl::KeyState's encoding write a state's payload with one
// codec (core/src/state_codec.h): given the same clock frame, every algorithm's state comes out as
// the same bytes from both, and reads back (ImportState, KeyState::Decode) to a state that writes
// those bytes again and answers the next check alike. A writer or reader that drifts on either
// side (a word swapped, a time moved twice or not at all) shows here.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rl/clock.h"
#include "rl/key_state.h"
#include "rl/limiter.h"

namespace rl {
namespace {

// Snapshot: header {magic 8, u32 version, u32 shards, u64 seed, i64 wall ms}, then one record
// {u8 kind, u64 key, u32 shard, i64 expiry, payload}, then u64 checksum.
constexpr size_t kSnapshotPayloadAt = 32 + 21;
// KeyState: {u8 version, u16 count}, then one entry {u64 scope, u8 kind, u64 window, i64 expiry,
// payload}.
constexpr size_t kKeyStatePayloadAt = 3 + 25;

std::string SnapshotPayload(const Limiter& limiter) {
  std::string bytes;
  uint64_t states = 0;
  EXPECT_TRUE(limiter.ExportState(&bytes, &states).ok());
  EXPECT_EQ(states, 1u);
  if (bytes.size() < kSnapshotPayloadAt + 8) return "(short snapshot)";
  return bytes.substr(kSnapshotPayloadAt, bytes.size() - 8 - kSnapshotPayloadAt);
}

std::string KeyStatePayload(const KeyState& state) {
  std::string bytes;
  state.Encode(&bytes);
  EXPECT_EQ(state.size(), 1u);
  if (bytes.size() < kKeyStatePayloadAt) return "(short encoding)";
  return bytes.substr(kKeyStatePayloadAt);
}

struct Case {
  const char* name;
  Limit limit;
};

// Every algorithm of the registry, each shape among them (windows divide a day, so a frame moved
// by whole days keeps ALIGNED_WINDOW's grid).
std::vector<Case> Cases() {
  return {{"token bucket", {Algorithm::kTokenBucket, 10, 60'000, 15}},
          {"gcra", {Algorithm::kGcra, 10, 60'000, 4}},
          {"sliding log", {Algorithm::kSlidingLog, 10, 60'000}},
          {"sliding window", {Algorithm::kSlidingWindow, 10, 60'000}},
          {"fixed window", {Algorithm::kFixedWindow, 10, 60'000}},
          {"leaky bucket", {Algorithm::kLeakyBucket, 10, 60'000, 6}},
          {"concurrency", {Algorithm::kConcurrency, 4, 60'000}},
          {"aligned window", {Algorithm::kAlignedWindow, 10, 60'000}}};
}

// Runs the same calls on a Limiter (monotonic ms, its wall clock `frame_ms` ahead) and a KeyState
// (given the wall time), and compares their payloads in the wall frame, then after a round trip.
void ExpectSameBytes(const Case& c, int64_t frame_ms) {
  SCOPED_TRACE(std::string(c.name) + ", frame moved by " + std::to_string(frame_ms));
  const std::vector<Limit> set = {c.limit};
  const bool leases = c.limit.algorithm == Algorithm::kConcurrency;
  ManualClock clock(5'000'000, 5'000'000 + frame_ms);
  auto wall = [&] { return clock.NowMs() + frame_ms; };
  Limiter limiter(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  KeyState state;
  bool changed = false;
  // Times 0, 700, 1400 ... ms and costs 1, 2, 3, 1, 2, 3: a state with a real time and counts
  // (a log with several runs, a window partly spent, a bucket that refilled part way).
  auto step = [&](int i, Limiter& l, KeyState& s) {
    const int64_t cost = 1 + i % 3;
    if (leases) {
      absl::StatusOr<Lease> a = l.Acquire("p", "k", set, 1);
      ASSERT_TRUE(a.ok()) << a.status();
      const std::string id = a->held() ? a->Detach() : "";
      ASSERT_TRUE(s.AcquireAs("p", "k", set, 1, wall(), id, &changed).ok());
      return;
    }
    auto a = l.Check("p", "k", set, cost);
    auto b = s.Check("p", set, cost, wall(), &changed);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->allowed, b->allowed) << "check " << i;
    EXPECT_EQ(a->remaining, b->remaining) << "check " << i;
  };
  for (int i = 0; i < 6; ++i) {
    step(i, limiter, state);
    clock.Advance(700);
  }
  const std::string payload = SnapshotPayload(limiter);
  EXPECT_EQ(payload, KeyStatePayload(state));

  // Read back by each side's reader and written again: the same bytes.
  std::string snapshot;
  ASSERT_TRUE(limiter.ExportState(&snapshot).ok());
  Limiter imported(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  ASSERT_TRUE(imported.ImportState(snapshot).ok());
  std::string encoded;
  state.Encode(&encoded);
  absl::StatusOr<KeyState> decoded = KeyState::Decode(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(SnapshotPayload(imported), payload);
  EXPECT_EQ(KeyStatePayload(*decoded), payload);

  // And what was read answers the next check as it would have, on both sides.
  clock.Advance(300);
  step(6, imported, *decoded);
  EXPECT_EQ(SnapshotPayload(imported), KeyStatePayload(*decoded));
}

TEST(PayloadCodec, SnapshotAndKeyStateWriteTheSameBytesInTheSameFrame) {
  for (const Case& c : Cases()) ExpectSameBytes(c, 0);
}

TEST(PayloadCodec, SnapshotMovesItsTimesIntoTheWallFrameAsKeyStateWritesThem) {
  constexpr int64_t kDay = 86'400'000;
  for (const Case& c : Cases()) {
    ExpectSameBytes(c, 3 * kDay);
    ExpectSameBytes(c, 20'000 * kDay);
  }
}

}  // namespace
}  // namespace rl

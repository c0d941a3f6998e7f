// The tables' memory (TableAlloc in store.h): a table that grows gives its old block back to the
// system, so the resident set grows by what the tables hold, not by that plus every block they
// outgrew left behind as heap fragments.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/config.h"
#include "gtest/gtest.h"
#include "rl/limiter.h"

namespace rl {
namespace {

int64_t RssBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

void* volatile sink;

TEST(TableMemoryTest, OutgrownBlocksLeaveTheResidentSet) {
#ifdef ABSL_HAVE_ADDRESS_SANITIZER
  GTEST_SKIP() << "under AddressSanitizer every table block comes from the heap";
#endif
  // Freeing a 16 MiB block that glibc mapped raises its mmap threshold to 16 MiB, as a server's
  // tables do for one another once the first of them outgrow their blocks: from then on blocks
  // below that come from the heap, where an outgrown block stays resident.
  sink = std::malloc(size_t{16} << 20);
  std::free(sink);
  ManualClock clock(0);
  const int64_t before = RssBytes();
  Limiter limiter(LimiterOptions{.shards = 1, .sweep_interval_ms = 0, .clock = &clock});
  const Limit limit{Algorithm::kTokenBucket, 100, 60000};
  for (int i = 0; i < 150000; ++i) {
    ASSERT_TRUE(limiter.Check("", "key" + std::to_string(i), {limit}).ok());
  }
  const int64_t grown = RssBytes() - before;
  const int64_t held = static_cast<int64_t>(limiter.Stats().memory_bytes);
  // One table of 262143 slots (7 MiB); the blocks it outgrew add up to as much again.
  EXPECT_LE(grown, held + held / 4 + (int64_t{1} << 20)) << "held " << held;
}

}  // namespace
}  // namespace rl

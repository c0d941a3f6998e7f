// libFuzzer target for rl-server's snapshot file reader; see snapshot_file_harness.h.
#include <cstddef>
#include <cstdint>

#include "snapshot_file_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rl::fuzz::RunSnapshotFile(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

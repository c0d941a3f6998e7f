// libFuzzer target for the engine's snapshot loader; see snapshot_import_harness.h.
#include <cstddef>
#include <cstdint>

#include "snapshot_import_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rl::fuzz::RunSnapshotImport(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

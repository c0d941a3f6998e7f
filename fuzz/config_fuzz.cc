// libFuzzer target for rl-server's TOML config loader; see config_harness.h.
#include <cstddef>
#include <cstdint>

#include "config_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rl::fuzz::RunConfig(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

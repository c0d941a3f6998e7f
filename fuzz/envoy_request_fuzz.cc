// libFuzzer target for ShouldRateLimit's request decoding and deciding; see
// envoy_request_harness.h.
#include <cstddef>
#include <cstdint>

#include "envoy_request_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rl::fuzz::RunEnvoyRequest(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

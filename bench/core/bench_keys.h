// What core_bench and check_icount share, so their figures describe the same workload: the
// 40-byte keys, the order they are visited in, and the bare map's value type.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace rl::bench {

// n keys shaped like "{tenant}:{route}:{scope}", cut or padded to 40 bytes. The cut drops the
// last digits of the longest keys, so a few of them coincide (BM_ImportState builds its own).
inline std::vector<std::string> MakeKeys(size_t n) {
  std::vector<std::string> keys;
  keys.reserve(n);
  char buf[64];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), "tenant-%06zu:route-/api/v1/orders:%08zu", i % 997, i);
    std::string k(buf);
    k.resize(40, '.');
    keys.push_back(std::move(k));
  }
  return keys;
}

// A visiting order that jumps around the key space (so neither side enjoys sequential locality)
// and gives thread t the indices congruent to t modulo the thread count.
inline size_t Index(size_t i, size_t n) { return (i * 2654435761u) % n; }

// The bare map's value: two words, like a token-bucket state.
struct BareState {
  int64_t a = 0;
  int64_t b = 0;
};

}  // namespace rl::bench

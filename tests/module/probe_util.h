// Helpers shared by the module tests: server options that load the probe module, the probe's
// INFO counters, Redis's DUMP checksum (to forge payloads that reach rdb_load), AOF files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "redis_harness.h"

namespace rl::test {

// Options that load tests/module's abi_probe.so (plus `extra` config lines).
RedisOptions ProbeOptions();

// One counter of INFO probe ("probe_<name>:N"), -1 when absent.
long long ProbeStat(RedisServer& server, const std::string& name);

// Redis's CRC-64 (Jones polynomial, reflected, initial value 0): the last 8 bytes of a DUMP
// payload are this checksum of everything before them, little-endian.
uint64_t Crc64(std::string_view bytes);
// `payload` with its 8-byte trailer recomputed, so RESTORE accepts the envelope and hands the
// (possibly tampered) body to the type's rdb_load.
std::string WithDumpChecksum(std::string payload);

// Everything under DIR/appendonlydir (manifest, base and incremental files), concatenated.
std::string ReadAofFiles(const std::string& dir);
// The current base file's name per the manifest ("appendonly.aof.2.base.rdb"), and its bytes
// (an RDB preamble or commands).
std::string AofBaseName(const std::string& dir);
std::string ReadAofBase(const std::string& dir);

}  // namespace rl::test

// Helpers shared by the module tests (see probe_util.h).
#include "probe_util.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "test_files.h"

namespace rl::test {
namespace {

std::vector<std::filesystem::path> AofFiles(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/appendonlydir", ec)) {
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

RedisOptions ProbeOptions() {
  RedisOptions options;
  options.LoadModule(RL_ABI_PROBE_PATH);
  return options;
}

long long ProbeStat(RedisServer& server, const std::string& name) {
  const std::string value = server.InfoField("probe", "probe_" + name);
  return value.empty() ? -1 : std::stoll(value);
}

uint64_t Crc64(std::string_view bytes) {
  constexpr uint64_t kReflectedPoly = 0x95AC9329AC4BC9B5ULL;  // 0xad93d23594c935a9 reflected
  uint64_t crc = 0;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ kReflectedPoly : crc >> 1;
  }
  return crc;
}

std::string WithDumpChecksum(std::string payload) {
  if (payload.size() < 10) return payload;
  uint64_t crc = Crc64(std::string_view(payload).substr(0, payload.size() - 8));
  for (size_t i = payload.size() - 8; i < payload.size(); ++i, crc >>= 8) {
    payload[i] = static_cast<char>(crc & 0xff);
  }
  return payload;
}

std::string ReadAofFiles(const std::string& dir) {
  std::string all;
  for (const auto& file : AofFiles(dir)) all += rl_test::ReadFile(file);
  return all;
}

std::string AofBaseName(const std::string& dir) {
  // Manifest lines: "file <name> seq <n> type <b|h|i>"; b = the current base.
  std::istringstream manifest(rl_test::ReadFile(dir + "/appendonlydir/appendonly.aof.manifest"));
  std::string line;
  while (std::getline(manifest, line)) {
    std::istringstream fields(line);
    std::string file, name, seq, n, type, kind;
    if (fields >> file >> name >> seq >> n >> type >> kind && kind == "b") return name;
  }
  return "";
}

std::string ReadAofBase(const std::string& dir) {
  const std::string name = AofBaseName(dir);
  return name.empty() ? "" : rl_test::ReadFile(dir + "/appendonlydir/" + name);
}

}  // namespace rl::test

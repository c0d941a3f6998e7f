// Test support: files and directories a test reads or leaves behind (a server's log or snapshot,
// a config it is given): reading a whole file, and a temporary directory removed with its
// contents when the test is done. Header-only.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rl_test {

// The whole file, bytes as they are; empty when it cannot be read (a test then fails on what it
// expected to find, not here).
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A fresh directory /tmp/PREFIX-XXXXXX (mkdtemp); empty if it could not be made.
inline std::string MakeTempDir(const std::string& prefix) {
  std::string name = "/tmp/" + prefix + "-XXXXXX";
  return ::mkdtemp(name.data()) != nullptr ? name : std::string();
}

// MakeTempDir's directory, removed with everything in it on destruction. path() is empty if it
// could not be made.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "rl-test") : path_(MakeTempDir(prefix)) {}
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }

  const std::string& path() const { return path_; }
  // Writes `content` to the file `name` inside the directory; returns its path.
  std::string Write(const std::string& name, const std::string& content) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary | std::ios::trunc) << content;
    return file;
  }

 private:
  std::string path_;
};

}  // namespace rl_test

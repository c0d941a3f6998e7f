// Durable file I/O of snapshots, apart from their format (snapshot_format.h) and from the server
// (snapshot.h): a write that survives a crash at any point, and a whole-file read-only mapping.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace rl::server {

// Writes `parts` to path.tmp, fsyncs, renames over `path`, fsyncs the directory, so a crash at
// any point leaves either the old file or the new one.
absl::Status WriteFileDurably(const std::string& path, const std::vector<std::string_view>& parts);

// A read-only mapping of a whole file: a 40 MB snapshot is read with one populating mmap
// instead of thousands of reads and page faults on a copy.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // NotFound when the file does not exist.
  absl::Status Open(const std::string& path);
  std::string_view data() const {
    return addr_ == nullptr ? std::string_view()
                            : std::string_view(static_cast<char*>(addr_), size_);
  }

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rl::server

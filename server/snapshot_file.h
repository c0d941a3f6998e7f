// Durable file I/O of snapshots, apart from their format (snapshot_format.h) and from the server
// (snapshot.h): a write that survives a crash at any point, and a whole-file read-only mapping.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace rl::server {

// Writes `parts` to a temp file of its own (path.tmp.XXXXXX, created exclusively: no other
// writer, in this process or another, ever shares it), fsyncs, renames over `path`, fsyncs the
// directory, so a crash at any point leaves either the old file or the new one.
absl::Status WriteFileDurably(const std::string& path, const std::vector<std::string_view>& parts);

// Removes the temp files a crashed writer of `path` left behind (path.tmp, path.tmp.XXXXXX). Only
// safe for the holder of the path's SnapshotLock. Returns how many it removed.
size_t RemoveStaleTempFiles(const std::string& path);

// An exclusive advisory lock (flock) on path.lock, held until destroyed, so that two servers
// never write one snapshot file. The holder's pid is written into the lock file, for the error
// the next one reports. The lock file stays after exit: removing it would race with a server
// that has just opened it.
class SnapshotLock {
 public:
  SnapshotLock() = default;
  SnapshotLock(const SnapshotLock&) = delete;
  SnapshotLock& operator=(const SnapshotLock&) = delete;
  ~SnapshotLock();

  // FailedPrecondition naming the holder (its pid) when another process holds the lock; another
  // error when the lock file cannot be created.
  absl::Status Acquire(const std::string& path);

 private:
  int fd_ = -1;
};

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

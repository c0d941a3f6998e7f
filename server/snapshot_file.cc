// Durable snapshot file writes and mapped reads; see snapshot_file.h.
#include "snapshot_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rl::server {
namespace {

std::string Errno(std::string_view what, const std::string& path) {
  return fmt::format("{} {}: {}", what, path, std::strerror(errno));
}

absl::Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InternalError(Errno("cannot write", path));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

absl::Status WriteFileDurably(const std::string& path, const std::vector<std::string_view>& parts) {
  // A name of its own, created with O_EXCL (which also refuses a planted symlink): a shared
  // FILE.tmp opened with O_TRUNC let two writers interleave into one file and rename it twice.
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return absl::InternalError(Errno("cannot create", tmp));
  ::fchmod(fd, 0600);
  absl::Status st;
  for (std::string_view part : parts) {
    st = WriteAll(fd, part, tmp);
    if (!st.ok()) break;
  }
  // The data must be on disk before the rename makes it the snapshot.
  if (st.ok() && ::fsync(fd) != 0) st = absl::InternalError(Errno("cannot fsync", tmp));
  if (::close(fd) != 0 && st.ok()) st = absl::InternalError(Errno("cannot close", tmp));
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = absl::InternalError(Errno("cannot rename over", path));
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  // And the rename itself must survive a power loss.
  const std::string dir = DirOf(path);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return absl::InternalError(Errno("cannot open directory", dir));
  int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) return absl::InternalError(Errno("cannot fsync directory", dir));
  return absl::OkStatus();
}

size_t RemoveStaleTempFiles(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = DirOf(path);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string prefix = base + ".tmp";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  size_t removed = 0;
  while (const dirent* e = ::readdir(d)) {
    std::string_view name(e->d_name);
    // FILE.tmp (older versions) or FILE.tmp.XXXXXX (mkostemp's six characters), nothing else.
    if (name.substr(0, prefix.size()) != prefix) continue;
    if (name.size() != prefix.size() &&
        (name.size() != prefix.size() + 7 || name[prefix.size()] != '.')) {
      continue;
    }
    removed += ::unlinkat(::dirfd(d), e->d_name, 0) == 0;
  }
  ::closedir(d);
  return removed;
}

SnapshotLock::~SnapshotLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

absl::Status SnapshotLock::Acquire(const std::string& path) {
  const std::string lock = path + ".lock";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return absl::InternalError(Errno("cannot open lock file", lock));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) {
      errno = err;
      return absl::InternalError(Errno("cannot lock", lock));
    }
    std::string holder(buf, n > 0 ? static_cast<size_t>(n) : 0);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return absl::FailedPreconditionError(fmt::format(
        "snapshot file {} is in use by another rl-server (pid {}, which holds {}): two servers "
        "must not share a snapshot file",
        path, holder.empty() ? "unknown" : holder, lock));
  }
  // Ours now: say who holds it.
  const std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds anyway; only the name in the next server's error is lost.
  }
  fd_ = fd;
  return absl::OkStatus();
}

MappedFile::~MappedFile() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
}

absl::Status MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(path);
    return absl::InternalError(Errno("cannot open", path));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    absl::Status err = absl::InternalError(Errno("cannot stat", path));
    ::close(fd);
    return err;
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* addr = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (addr == MAP_FAILED) {
      absl::Status err = absl::InternalError(Errno("cannot map", path));
      ::close(fd);
      return err;
    }
    addr_ = addr;
  }
  ::close(fd);
  return absl::OkStatus();
}

}  // namespace rl::server

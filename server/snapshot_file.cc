// Durable snapshot file writes and mapped reads; see snapshot_file.h.
#include "snapshot_file.h"

#include <fcntl.h>
#include <fmt/core.h>
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

}  // namespace

absl::Status WriteFileDurably(const std::string& path, const std::vector<std::string_view>& parts) {
  const std::string tmp = path + ".tmp";
  // O_NOFOLLOW: a planted symlink must not redirect the write elsewhere.
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return absl::InternalError(Errno("cannot create", tmp));
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
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return absl::InternalError(Errno("cannot open directory", dir));
  int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) return absl::InternalError(Errno("cannot fsync directory", dir));
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

// Snapshot container, durable file writes, load at start, the periodic save thread, INFO
// persistence and SAVE/BGSAVE/LASTSAVE; see snapshot.h.
#include "snapshot.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "command_table.h"
#include "rl/limit.h"
#include "rl/limiter.h"
#include "server.h"
#include "server_state.h"

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

// A read-only mapping of a whole file: a 40 MB snapshot is read with one populating mmap
// instead of thousands of reads and page faults on a copy.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (addr_ != nullptr) ::munmap(addr_, size_);
  }

  absl::Status Open(const std::string& path) {
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
  std::string_view data() const {
    return addr_ == nullptr ? std::string_view()
                            : std::string_view(static_cast<char*>(addr_), size_);
  }

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

// CPU time of the calling thread: load times that mean something on a shared machine.
int64_t ThreadCpuUs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000 + ts.tv_nsec / 1000;
}

int64_t WallMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
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

// ---- Snapshotter ----

Snapshotter::Snapshotter(ServerState* state) : state_(state) {
  absl::MutexLock lock(&stats_mu_);
  stats_.enabled = !state_->config.snapshot_file.empty();
}

Snapshotter::~Snapshotter() { Stop(); }

void Snapshotter::Log(std::string_view message) const {
  if (!state_->config.quiet) LogLine(message);
}

uint64_t Snapshotter::TotalCommands() const {
  uint64_t n = 0;
  for (const auto& ws : state_->worker_stats) n += ws->rl_commands();
  return n;
}

absl::Status Snapshotter::Load() {
  const std::string& path = state_->config.snapshot_file;
  if (path.empty()) return absl::OkStatus();
  // Say so now rather than at the first save: otherwise state is silently never persisted.
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::access(dir.c_str(), W_OK) != 0) {
    Log(fmt::format("warning: cannot write to {} ({}): snapshots will fail", dir,
                    std::strerror(errno)));
  }
  auto started = std::chrono::steady_clock::now();
  int64_t cpu_started = ThreadCpuUs();
  MappedFile file;
  absl::Status st = file.Open(path);
  if (absl::IsNotFound(st)) {
    Log(fmt::format("no snapshot at {} yet; starting empty", path));
    absl::MutexLock lock(&stats_mu_);
    stats_.load_status = "missing";
    return absl::OkStatus();
  }
  DecodedSnapshot snap;
  bool opened = st.ok();
  std::vector<rl::Policy> restore;
  if (st.ok()) st = ParseSnapshot(file.data(), state_->config.policies, &snap, &restore);
  int64_t read_us = MicrosSince(started);
  uint64_t in_file = 0;  // what the engine found, not what the header claims
  if (st.ok()) st = state_->limiter->ImportState(snap.state, &in_file);
  if (!st.ok()) {
    std::string message = fmt::format("cannot load snapshot {}: {}", path, ToStd(st.message()));
    {
      absl::MutexLock lock(&stats_mu_);
      stats_.load_status = "error";
      stats_.load_error = message;
    }
    if (state_->config.snapshot_strict) {
      return absl::DataLossError(fmt::format("{} (--snapshot-strict: refusing to start)", message));
    }
    // Keep the evidence: the next save would otherwise overwrite it.
    std::string aside = path + ".bad";
    bool moved = opened && ::rename(path.c_str(), aside.c_str()) == 0;
    Log(fmt::format("{}; starting empty{}", message,
                    moved ? fmt::format(" (the file was moved to {})", aside) : ""));
    return absl::OkStatus();
  }
  for (rl::Policy& policy : restore) {
    absl::Status ps = state_->policies.SetRuntime(std::move(policy));
    if (!ps.ok()) Log(fmt::format("snapshot policy skipped: {}", ToStd(ps.message())));
  }
  int64_t us = MicrosSince(started);
  int64_t cpu_us = ThreadCpuUs() - cpu_started;
  uint64_t kept = state_->limiter->KeyCount();
  Log(fmt::format(
      "loaded snapshot {}: {} of {} states (the rest had refilled), {} runtime "
      "policies, saved {} ms ago, in {} ms (read and verify {} ms, import {} ms; {} ms CPU)",
      path, kept, in_file, restore.size(), WallMs() - snap.saved_wall_ms, us / 1000, read_us / 1000,
      (us - read_us) / 1000, cpu_us / 1000));
  absl::MutexLock lock(&stats_mu_);
  // What is in memory now is what was saved then: LASTSAVE (and INFO's last save time) report
  // that save rather than "never", so a monitor of save age sees the true age after a restart.
  stats_.last_save_wall_ms = snap.saved_wall_ms;
  stats_.load_status = "ok";
  stats_.load_file_keys = in_file;
  stats_.load_keys = kept;
  stats_.load_policies = restore.size();
  stats_.load_duration_us = us;
  stats_.load_cpu_us = cpu_us;
  return absl::OkStatus();
}

absl::Status Snapshotter::Save() {
  const std::string& path = state_->config.snapshot_file;
  if (path.empty()) return absl::FailedPreconditionError("snapshots are off (no --snapshot FILE)");
  absl::MutexLock save_lock(&save_mu_);
  {
    absl::MutexLock lock(&stats_mu_);
    stats_.in_progress = true;
  }
  auto started = std::chrono::steady_clock::now();
  // Read before exporting: commands that run during the export are saved again next time.
  uint64_t commands = TotalCommands();
  std::vector<SavedPolicy> policies;
  for (const auto& p : state_->policies.List()) {
    policies.push_back({p->name, rl::FormatPolicy(*p), state_->policies.IsRuntime(p->name)});
  }
  // Counted by the export as it writes: a count taken before (or after) it disagrees with the
  // file by whatever checks ran meanwhile.
  uint64_t states = 0;
  std::string engine, prefix, suffix;
  absl::Status st = state_->limiter->ExportState(&engine, &states);
  if (st.ok()) {
    EncodeSnapshot(WallMs(), states, policies, engine, &prefix, &suffix);
    st = WriteFileDurably(path, {prefix, engine, suffix});
  }
  int64_t us = MicrosSince(started);
  absl::MutexLock lock(&stats_mu_);
  stats_.in_progress = false;
  stats_.last_save_ok = st.ok();
  if (!st.ok()) {
    ++stats_.save_errors;
    stats_.last_error = std::string(ToStd(st.message()));
    return st;
  }
  ++stats_.saves;
  stats_.last_save_wall_ms = WallMs();
  stats_.last_save_duration_us = us;
  stats_.last_save_keys = states;
  stats_.last_save_policies = policies.size();
  stats_.last_save_bytes = prefix.size() + engine.size() + suffix.size();
  commands_at_save_ = commands;
  return absl::OkStatus();
}

void Snapshotter::StartPeriodic() {
  if (state_->config.snapshot_file.empty() || thread_.joinable()) return;
  {
    absl::MutexLock lock(&stats_mu_);
    commands_at_save_ = TotalCommands();  // a fresh start with nothing loaded changes nothing
  }
  thread_ = std::thread([this] { Loop(); });
}

void Snapshotter::Loop() {
  const absl::Duration interval = absl::Milliseconds(state_->config.snapshot_interval_ms);
  bool failing = false;
  for (;;) {
    bool requested;
    {
      absl::MutexLock lock(&loop_mu_);
      loop_mu_.AwaitWithTimeout(absl::Condition(this, &Snapshotter::Woken), interval);
      if (stop_) return;
      requested = save_requested_;
      save_requested_ = false;
    }
    bool changed;
    {
      absl::MutexLock stats_lock(&stats_mu_);
      changed = TotalCommands() != commands_at_save_;
    }
    if (requested || changed) {
      absl::Status st = Save();
      // Once per failure streak (and when it recovers), not every interval.
      if (!st.ok() && !failing) Log(fmt::format("snapshot save failed: {}", ToStd(st.message())));
      if (st.ok() && failing) Log("snapshot saves work again");
      failing = !st.ok();
    }
  }
}

// absl::Mutex wakes the waiting thread itself when its condition turns true on unlock.
void Snapshotter::RequestSave() {
  absl::MutexLock lock(&loop_mu_);
  save_requested_ = true;
}

void Snapshotter::Stop() {
  {
    absl::MutexLock lock(&loop_mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

PersistenceStats Snapshotter::Stats() const {
  absl::MutexLock lock(&stats_mu_);
  PersistenceStats out = stats_;
  uint64_t now = TotalCommands();
  out.changes_since_save = now > commands_at_save_ ? now - commands_at_save_ : 0;
  return out;
}

std::string PersistenceInfo(const ServerState& state) {
  PersistenceStats s;
  if (state.snapshotter != nullptr) s = state.snapshotter->Stats();
  auto oneline = [](std::string text) {
    for (char& c : text) {
      if (c == '\r' || c == '\n') c = ' ';
    }
    return text;
  };
  // The rdb_* and loading fields keep Redis tooling (redis-cli --stat, exporters) working.
  return fmt::format(
      "# Persistence\r\nloading:0\r\nsnapshot_enabled:{}\r\nsnapshot_file:{}\r\n"
      "snapshot_interval_ms:{}\r\nsnapshot_in_progress:{}\r\nsnapshot_changes_since_last_save:{}"
      "\r\nsnapshot_saves:{}\r\nsnapshot_save_errors:{}\r\nsnapshot_last_save_time:{}\r\n"
      "snapshot_last_save_time_ms:{}\r\nsnapshot_last_save_duration_ms:{:.3f}\r\n"
      "snapshot_last_save_keys:{}\r\nsnapshot_last_save_policies:{}\r\n"
      "snapshot_last_save_bytes:{}\r\nsnapshot_last_save_status:{}\r\nsnapshot_last_error:{}\r\n"
      "snapshot_load_status:{}\r\nsnapshot_load_error:{}\r\nsnapshot_load_file_keys:{}\r\n"
      "snapshot_load_keys:{}\r\nsnapshot_load_policies:{}\r\nsnapshot_load_duration_ms:{:.3f}\r\n"
      "snapshot_load_cpu_ms:{:.3f}\r\n"
      "rdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\n"
      "rdb_last_bgsave_status:{}\r\n",
      s.enabled ? 1 : 0, state.config.snapshot_file, state.config.snapshot_interval_ms,
      s.in_progress ? 1 : 0, s.changes_since_save, s.saves, s.save_errors,
      s.last_save_wall_ms / 1000, s.last_save_wall_ms, s.last_save_duration_us / 1000.0,
      s.last_save_keys, s.last_save_policies, s.last_save_bytes, s.last_save_ok ? "ok" : "err",
      oneline(s.last_error), s.load_status, oneline(s.load_error), s.load_file_keys, s.load_keys,
      s.load_policies, s.load_duration_us / 1000.0, s.load_cpu_us / 1000.0, s.changes_since_save,
      s.in_progress ? 1 : 0, s.last_save_wall_ms / 1000, s.last_save_ok ? "ok" : "err");
}

// ---- SAVE, BGSAVE, LASTSAVE ----

namespace {

bool SnapshotsOff(CommandContext& ctx) {
  if (ctx.state.snapshotter != nullptr && !ctx.state.config.snapshot_file.empty()) return false;
  ctx.w.Error("ERR snapshots are off: start rl-server with --snapshot FILE");
  return true;
}

// Blocks this I/O thread for the save, as Redis's SAVE does; BGSAVE does not.
void SaveCmd(CommandContext& ctx) {
  if (SnapshotsOff(ctx)) return;
  absl::Status st = ctx.state.snapshotter->Save();
  if (!st.ok()) return ctx.w.Error(fmt::format("ERR snapshot failed: {}", ToStd(st.message())));
  ctx.w.SimpleString("OK");
}

void BgSaveCmd(CommandContext& ctx) {
  if (SnapshotsOff(ctx)) return;
  ctx.state.snapshotter->RequestSave();
  ctx.w.SimpleString("Background saving started");
}

void LastSaveCmd(CommandContext& ctx) {
  int64_t ms = ctx.state.snapshotter ? ctx.state.snapshotter->Stats().last_save_wall_ms : 0;
  ctx.w.Integer(ms / 1000);
}

CommandSpec Row(std::string name, uint32_t flags, Handler handler, std::string summary) {
  CommandSpec spec;
  spec.name = std::move(name);
  spec.arity = 1;
  spec.flags = flags;
  spec.handler = handler;
  spec.group = "server";
  spec.summary = std::move(summary);
  spec.since = "1.0.0";
  spec.complexity = "O(N) where N is the number of limiter states";
  return spec;
}

}  // namespace

void AddPersistenceCommands(std::vector<CommandSpec>* rows) {
  rows->push_back(Row("save", kCmdAdmin, SaveCmd,
                      "Writes the snapshot (limiter state and runtime policies) now and waits."));
  rows->push_back(
      Row("bgsave", kCmdAdmin, BgSaveCmd, "Asks the snapshot thread to write the snapshot now."));
  rows->push_back(Row("lastsave", kCmdFast | kCmdLoading | kCmdStale, LastSaveCmd,
                      "Unix time of the last successful snapshot save (0 = never)."));
}

}  // namespace rl::server

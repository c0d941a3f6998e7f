// The Snapshotter: load at start, saves (on demand and from the periodic thread); see
// snapshot.h. The file's format is in snapshot_format.cc, its durable I/O in snapshot_file.cc.
#include "snapshot.h"

#include <fmt/core.h>
#include <time.h>

#include <chrono>
#include <cstdio>

#include "rl/limit.h"
#include "rl/limiter.h"
#include "server.h"
#include "server_state.h"
#include "snapshot_file.h"

namespace rl::server {
namespace {

// CPU time of the calling thread: load times that mean something on a shared machine.
int64_t ThreadCpuUs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000 + ts.tv_nsec / 1000;
}

int64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace

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

// Before reading or writing anything: a second server on the same file refuses to start
// rather than interleave its saves with ours.
absl::Status Snapshotter::PrepareToLoad(const std::string& path) {
  // A lock file that cannot be created (a read-only directory) only warns: saves there fail
  // anyway, so no second server can write the file either.
  if (absl::Status locked = file_lock_.Acquire(path); absl::IsFailedPrecondition(locked)) {
    return locked;
  } else if (!locked.ok()) {
    Log(fmt::format("warning: {}", ToStd(locked.message())));
  }
  if (size_t stale = RemoveStaleTempFiles(path); stale > 0) {
    Log(fmt::format("removed {} temp file(s) of {} left by an interrupted save", stale, path));
  }
  // Say so now rather than at the first save: otherwise state is silently never persisted.
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::access(dir.c_str(), W_OK) != 0) {
    Log(fmt::format("warning: cannot write to {} ({}): snapshots will fail", dir,
                    std::strerror(errno)));
  }
  return absl::OkStatus();
}

// A snapshot that cannot be loaded: start empty (its file moved aside), or refuse to start with
// --snapshot-strict.
absl::Status Snapshotter::LoadFailed(const std::string& path, const absl::Status& st, bool opened) {
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

absl::Status Snapshotter::Load() {
  const std::string& path = state_->config.snapshot_file;
  if (path.empty()) return absl::OkStatus();
  if (absl::Status ready = PrepareToLoad(path); !ready.ok()) return ready;
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
  if (!st.ok()) return LoadFailed(path, st, opened);
  for (rl::Policy& policy : restore) {
    absl::Status ps = state_->policies.SetRuntime(std::move(policy));
    if (!ps.ok()) Log(fmt::format("snapshot policy skipped: {}", ToStd(ps.message())));
  }
  // A file policy whose window changed while the server was down: its states follow it.
  std::vector<rl::Policy> saved_file_versions;
  for (const SavedPolicy& p : snap.policies) {
    if (p.runtime) continue;
    auto policy = rl::ParsePolicy(p.name, std::string_view(p.spec));
    if (policy.ok()) saved_file_versions.push_back(std::move(*policy));
  }
  state_->policies.LinkSavedVersions(std::move(saved_file_versions));
  int64_t us = MicrosSince(started);
  int64_t cpu_us = ThreadCpuUs() - cpu_started;
  uint64_t kept = state_->limiter->KeyCount();
  if (const int64_t ahead = snap.saved_wall_ms - state_->clock->WallMs(); ahead > 1000) {
    // The engine then takes the save's time as now (Limiter::ImportState): say why no waits shrank.
    Log(
        fmt::format("snapshot {} was saved {} ms ahead of this wall clock (set back since, or "
                    "ahead at the save): loaded as if saved just now",
                    path, ahead));
  }
  Log(fmt::format(
      "loaded snapshot {}: {} of {} states (the rest had refilled), {} runtime "
      "policies, saved {} ms ago, in {} ms (read and verify {} ms, import {} ms; {} ms CPU)",
      path, kept, in_file, restore.size(), state_->clock->WallMs() - snap.saved_wall_ms, us / 1000,
      read_us / 1000, (us - read_us) / 1000, cpu_us / 1000));
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
    EncodeSnapshot(state_->clock->WallMs(), states, policies, engine, &prefix, &suffix);
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
  stats_.last_save_wall_ms = state_->clock->WallMs();
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
  const std::chrono::milliseconds interval(state_->config.snapshot_interval_ms);
  bool failing = false;
  for (;;) {
    bool requested;
    {
      std::unique_lock lock(loop_mu_);
      loop_cv_.wait_for(lock, interval, [this] { return stop_ || save_requested_; });
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

void Snapshotter::RequestSave() {
  {
    std::lock_guard lock(loop_mu_);
    save_requested_ = true;
  }
  loop_cv_.notify_one();
}

void Snapshotter::Stop() {
  {
    std::lock_guard lock(loop_mu_);
    stop_ = true;
  }
  loop_cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

PersistenceStats Snapshotter::Stats() const {
  absl::MutexLock lock(&stats_mu_);
  PersistenceStats out = stats_;
  uint64_t now = TotalCommands();
  out.changes_since_save = now > commands_at_save_ ? now - commands_at_save_ : 0;
  return out;
}

}  // namespace rl::server

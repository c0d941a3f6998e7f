// Snapshots of rl-server: all limiter state plus the runtime policies (RL.POLICY SET), saved to
// one file periodically on a thread of its own and on SIGTERM/SIGINT, and loaded at start, so a
// restart does not hand every client a fresh burst.
//
// The file's format is in snapshot_format.h, its durable I/O (FILE.tmp, fsync, rename, fsync of
// the directory: a crash leaves the last good snapshot) in snapshot_file.h, and SAVE, BGSAVE,
// LASTSAVE and INFO persistence in persistence_commands.h.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "snapshot_file.h"
#include "snapshot_format.h"

namespace rl::server {

struct ServerState;

// What INFO persistence and /metrics show.
struct PersistenceStats {
  bool enabled = false;
  bool in_progress = false;
  uint64_t saves = 0;
  uint64_t save_errors = 0;
  int64_t last_save_wall_ms = 0;  // 0 = never
  int64_t last_save_duration_us = 0;
  uint64_t last_save_keys = 0;
  uint64_t last_save_policies = 0;
  uint64_t last_save_bytes = 0;
  bool last_save_ok = true;
  std::string last_error;
  uint64_t changes_since_save = 0;   // RL.* / CL.THROTTLE commands since the last save
  std::string load_status = "none";  // none | missing | ok | error
  std::string load_error;
  uint64_t load_file_keys = 0;  // states in the file
  uint64_t load_keys = 0;       // states kept (the rest had refilled by load time)
  uint64_t load_policies = 0;
  int64_t load_duration_us = 0;
  int64_t load_cpu_us = 0;  // CPU time of the load (wall time includes waiting)
};

class Snapshotter {
 public:
  explicit Snapshotter(ServerState* state);
  ~Snapshotter();  // stops the thread; does not save
  Snapshotter(const Snapshotter&) = delete;
  Snapshotter& operator=(const Snapshotter&) = delete;

  // Locks --snapshot (FILE.lock; another server holding it is an error naming its pid: the
  // server refuses to start), removes temp files a crash left, then loads the file into the
  // empty limiter and the policy store. A missing file is a clean start; a bad one is logged, moved
  // aside to FILE.bad and the server starts empty — unless
  // --snapshot-strict, which returns the error (the server then refuses to start).
  absl::Status Load();
  // Starts the periodic save thread: every interval, when RL.* or CL.THROTTLE commands ran since
  // the last save (nothing else changes state or policies).
  void StartPeriodic();
  // Stops the thread (a save in progress finishes first).
  void Stop();
  // Saves now on the calling thread, serialized with every other save.
  absl::Status Save() ABSL_LOCKS_EXCLUDED(save_mu_, stats_mu_);
  // BGSAVE: asks the thread to save at once.
  void RequestSave();

  PersistenceStats Stats() const ABSL_LOCKS_EXCLUDED(stats_mu_);

 private:
  void Loop();
  uint64_t TotalCommands() const;
  void Log(std::string_view message) const;
  // Load's steps: the lock and leftovers before reading, and what a failed load does.
  absl::Status PrepareToLoad(const std::string& path);
  absl::Status LoadFailed(const std::string& path, const absl::Status& st, bool opened);

  ServerState* state_;
  SnapshotLock file_lock_;  // held from Load until destroyed
  // Lock order: save_mu_ before stats_mu_ (a save updates the stats); loop_mu_ is never held
  // with another.
  absl::Mutex save_mu_ ABSL_ACQUIRED_BEFORE(stats_mu_);  // one save at a time
  mutable absl::Mutex stats_mu_;
  PersistenceStats stats_ ABSL_GUARDED_BY(stats_mu_);
  uint64_t commands_at_save_ ABSL_GUARDED_BY(stats_mu_) = 0;

  // The periodic thread waits on loop_cv_ for a stop or a BGSAVE. std::condition_variable rather
  // than absl::Mutex::AwaitWithTimeout: this abseil times its waits on the wall clock
  // (CLOCK_REALTIME), so a step of the wall clock back while the thread waits (an NTP step) would
  // stop saves for as long as the step; the standard one waits on the steady clock.
  std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  bool stop_ = false;            // guarded by loop_mu_
  bool save_requested_ = false;  // guarded by loop_mu_
  std::thread thread_;
};

}  // namespace rl::server

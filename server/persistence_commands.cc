// The persistence commands (SAVE, BGSAVE, LASTSAVE) and INFO's persistence section: the
// command side of snapshots, over the Snapshotter (snapshot.h).
#include "persistence_commands.h"

#include <fmt/core.h>

#include "command_table.h"
#include "server_state.h"
#include "snapshot.h"

namespace rl::server {

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

CommandSpec SaveRow(std::string name, uint32_t flags, Handler handler, std::string summary) {
  CommandSpec spec = Row("server", std::move(name), 1, flags, handler, std::move(summary), "1.0.0");
  spec.complexity = "O(N) where N is the number of limiter states";
  return spec;
}

}  // namespace

void AddPersistenceCommands(std::vector<CommandSpec>* rows) {
  rows->push_back(
      SaveRow("save", kCmdAdmin, SaveCmd,
              "Writes the snapshot (limiter state and runtime policies) now and waits."));
  rows->push_back(SaveRow("bgsave", kCmdAdmin, BgSaveCmd,
                          "Asks the snapshot thread to write the snapshot now."));
  rows->push_back(SaveRow("lastsave", kCmdFast | kCmdLoading | kCmdStale, LastSaveCmd,
                          "Unix time of the last successful snapshot save (0 = never)."));
}

}  // namespace rl::server

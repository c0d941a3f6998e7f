// For tests that prove a call writes nothing to the engine's tables: the table blocks mapped from
// the kernel are tracked (TableAlloc's test hook), and a call runs in a forked child with all of
// them read-only, so a write kills the child with SIGSEGV.
#pragma once

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace rl::table_test {

// The live table blocks mapped from the kernel (a block of 4 KiB or more is; see TableAlloc).
inline std::vector<std::pair<void*, size_t>>& Blocks() {
  static std::vector<std::pair<void*, size_t>> blocks;
  return blocks;
}
// The hook to pass to internal::SetTableMapHookForTesting.
inline void Track(void* block, size_t bytes, bool mapped) {
  if (mapped) {
    Blocks().emplace_back(block, bytes);
  } else {
    std::erase(Blocks(), std::make_pair(block, bytes));
  }
}

// Runs `f` (returning an exit status, 0-255) in a child process whose table blocks are all
// read-only: f's status when it returned, minus the signal that ended the child otherwise
// (-SIGSEGV: it wrote to a table).
template <typename F>
int InChildWithTablesReadOnly(F f) {
  const pid_t pid = fork();
  if (pid == 0) {
    for (auto [block, bytes] : Blocks()) mprotect(block, bytes, PROT_READ);
    _exit(f());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace rl::table_test

// Every connected client, for CLIENT LIST: it must show the clients of every I/O thread, and a
// connection lives on one thread and is never locked. A connection's session joins the registry
// when the connection starts and leaves first thing in its destructor. The registry's mutex
// guards the session fields that change after that and are not atomics (name, lib-name, lib-ver,
// protocol): their owner thread writes them under it (rarely: SETNAME, HELLO, SETINFO, RESET)
// and may read them without it; any other thread reads them only inside ForEach.
#pragma once

#include <list>

#include "absl/synchronization/mutex.h"
#include "command_table.h"

namespace rl::server {

class ClientRegistry {
 public:
  void Add(ClientSession* session) {
    absl::MutexLock lock(&mu_);
    sessions_.push_back(session);
    session->registry_pos = std::prev(sessions_.end());
  }
  void Remove(ClientSession* session) {
    absl::MutexLock lock(&mu_);
    sessions_.erase(session->registry_pos);
  }
  // Calls fn(const ClientSession&) for every client, oldest first, under the lock.
  template <typename Fn>
  void ForEach(Fn fn) const {
    absl::MutexLock lock(&mu_);
    for (const ClientSession* s : sessions_) fn(*s);
  }
  // For the owner thread: changes the shared fields of its own session under the lock.
  template <typename Fn>
  void Update(ClientSession& session, Fn fn) {
    absl::MutexLock lock(&mu_);
    fn(session);
  }

 private:
  mutable absl::Mutex mu_;
  std::list<ClientSession*> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rl::server

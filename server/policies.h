// Named policies as the server sees them: the config file's [policies] plus those defined at
// runtime with RL.POLICY SET. On SIGHUP the file is authoritative for the names it defines
// (its version replaces a runtime SET of the same name, and a file policy deleted at runtime
// comes back); policies created at runtime under names the file does not use survive reloads.
// Limiter state is never touched: a policy's state lives under its name, so an unchanged policy
// keeps counting across a reload, and one whose window changed is linked to its old version
// (rl::Policy::carried_from) so each key's state follows at its next check.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "rl/limit.h"
#include "rl/policy_registry.h"

namespace rl::server {

class PolicyStore {
 public:
  // Parses every (name, spec) and replaces the file-defined set, keeping runtime-only policies.
  // All or nothing: on any error nothing changes and the error names the bad policy.
  absl::Status LoadFromConfig(const std::vector<std::pair<std::string, std::string>>& specs);
  // At start, with the versions of the file's policies a snapshot saved: each whose spec the file
  // has changed since is linked to its saved version, so its keys' states follow a changed
  // window as after a reload (rl::Policy::carried_from). Runtime policies are left alone.
  void LinkSavedVersions(std::vector<rl::Policy> saved);
  // RL.POLICY SET / DEL.
  absl::Status SetRuntime(rl::Policy policy);
  bool Delete(std::string_view name);
  // Called (from whichever thread removed it, after the removal) with the name of every policy
  // that RL.POLICY DEL or a reload removes, so what is kept per policy can go with it. Set once,
  // before any connection exists.
  void set_on_removed(std::function<void(const std::string&)> on_removed) {
    on_removed_ = std::move(on_removed);
  }

  std::shared_ptr<const rl::Policy> Get(std::string_view name) const { return registry_.Get(name); }
  uint64_t version() const { return registry_.version(); }
  std::vector<std::shared_ptr<const rl::Policy>> List() const { return registry_.List(); }
  size_t size() const { return registry_.size(); }
  // Whether `name` was defined by RL.POLICY SET rather than the config file (snapshots keep
  // runtime policies; the file's own come back from the file).
  bool IsRuntime(std::string_view name) const {
    absl::MutexLock lock(&mu_);
    return runtime_names_.contains(absl::string_view(name.data(), name.size()));
  }

 private:
  rl::PolicyRegistry registry_;
  std::function<void(const std::string&)> on_removed_;
  // Serializes SET/DEL against reloads so a reload never loses a concurrent SET.
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> runtime_names_ ABSL_GUARDED_BY(mu_);
};

// One connection's copies of the policies it has looked up, kept while the store's version is
// unchanged, so a check by policy name takes no lock and writes no shared reference count: the
// store's reader lock and the shared_ptr copy of every lookup were global writes per check,
// which every I/O thread contends on. Not thread-safe: one per connection.
class PolicyCache {
 public:
  // Policies kept at most; past that the cache starts over (a connection rarely uses more).
  static constexpr size_t kMaxEntries = 16;

  // The policy `name` of `store`, or null. The pointer it holds does not own the policy: the
  // cache does, until its next Find (a command's one lookup stays valid for the command).
  std::shared_ptr<const rl::Policy> Find(const PolicyStore& store, std::string_view name);

 private:
  uint64_t version_ = UINT64_MAX;  // the store's version the entries were read at
  std::vector<std::shared_ptr<const rl::Policy>> entries_;
};

}  // namespace rl::server

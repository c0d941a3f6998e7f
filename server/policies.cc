// Reload rules for named policies; see policies.h.
#include "policies.h"

#include <fmt/core.h>

#include "command_table.h"

namespace rl::server {

absl::Status PolicyStore::LoadFromConfig(
    const std::vector<std::pair<std::string, std::string>>& specs) {
  std::vector<rl::Policy> next;
  absl::flat_hash_set<std::string> file_names;
  for (const auto& [name, spec] : specs) {
    auto policy = rl::ParsePolicy(name, spec);
    if (!policy.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("policy '{}': {}", name, ToStd(policy.status().message())));
    }
    file_names.insert(name);
    next.push_back(std::move(*policy));
  }
  std::vector<std::string> removed;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = runtime_names_.begin(); it != runtime_names_.end();) {
      auto current = it;
      ++it;
      if (file_names.contains(*current)) {
        runtime_names_.erase(current);  // the file wins for names it defines
        continue;
      }
      if (auto policy = registry_.Get(*current)) next.push_back(*policy);
    }
    absl::flat_hash_set<std::string> kept;
    for (const rl::Policy& p : next) kept.insert(p.name);
    for (const auto& p : registry_.List()) {
      if (!kept.contains(p->name)) removed.push_back(p->name);
    }
    registry_.ReplaceAll(std::move(next));
  }
  if (on_removed_) {
    for (const std::string& name : removed) on_removed_(name);
  }
  return absl::OkStatus();
}

void PolicyStore::LinkSavedVersions(std::vector<rl::Policy> saved) {
  absl::MutexLock lock(&mu_);
  for (rl::Policy& old : saved) {
    std::shared_ptr<const rl::Policy> current = registry_.Get(old.name);
    if (current == nullptr || runtime_names_.contains(old.name)) continue;
    if (rl::FormatPolicy(old) == rl::FormatPolicy(*current)) continue;
    // Setting the saved version and then the file's again links them, as a reload would.
    rl::Policy now = *current;
    if (registry_.Set(std::move(old)).ok()) registry_.Set(std::move(now)).IgnoreError();
  }
}

absl::Status PolicyStore::SetRuntime(rl::Policy policy) {
  absl::MutexLock lock(&mu_);
  std::string name = policy.name;
  absl::Status st = registry_.Set(std::move(policy));
  if (st.ok()) runtime_names_.insert(std::move(name));
  return st;
}

bool PolicyStore::Delete(std::string_view name) {
  bool existed;
  {
    absl::MutexLock lock(&mu_);
    runtime_names_.erase(absl::string_view(name.data(), name.size()));
    existed = registry_.Delete(name);
  }
  if (existed && on_removed_) on_removed_(std::string(name));
  return existed;
}

std::shared_ptr<const rl::Policy> PolicyCache::Find(const PolicyStore& store,
                                                    std::string_view name) {
  // Read before the lookup below: a change made in between is then seen by the next Find.
  const uint64_t version = store.version();
  if (version != version_) {
    entries_.clear();
    version_ = version;
  }
  const rl::Policy* found = nullptr;
  for (const auto& p : entries_) {
    if (p->name == name) {
      found = p.get();
      break;
    }
  }
  if (found == nullptr) {
    std::shared_ptr<const rl::Policy> p = store.Get(name);
    if (p == nullptr) return nullptr;  // unknown names are not kept: they are errors anyway
    if (entries_.size() >= kMaxEntries) entries_.clear();
    found = p.get();
    entries_.push_back(std::move(p));
  }
  // The aliasing constructor over an empty owner: a pointer without a reference count.
  return std::shared_ptr<const rl::Policy>(std::shared_ptr<const rl::Policy>(), found);
}

}  // namespace rl::server

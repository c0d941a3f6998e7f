// Named policies shared by every connection. Each policy is an immutable shared_ptr snapshot:
// a check that fetched a policy keeps using it even if RL.POLICY SET or a reload replaces it
// midway, and readers only hold the lock long enough to copy a pointer.
#include "rl/policy_registry.h"

#include <functional>
#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace rl {

// std::map with std::less<> gives sorted List() for free and lookups by std::string_view without
// building a std::string (Debian's abseil has its own string_view, so flat_hash_map's
// heterogeneous lookup would not take a std::string_view). Policy sets are small and read far
// more often than written, so the tree costs nothing that matters.
using PolicyMap = std::map<std::string, std::shared_ptr<const Policy>, std::less<>>;

class PolicyRegistry::Impl {
 public:
  absl::Status Set(Policy policy) {
    if (absl::Status status = ValidatePolicy(policy); !status.ok()) return status;
    auto snapshot = std::make_shared<const Policy>(std::move(policy));
    std::shared_ptr<const Policy> old;  // released after the lock, not under it
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = policies_.try_emplace(snapshot->name, snapshot);
    if (!inserted) {
      old = std::move(it->second);
      it->second = std::move(snapshot);
    }
    return absl::OkStatus();
  }

  bool Delete(std::string_view name) {
    std::shared_ptr<const Policy> old;
    absl::MutexLock lock(&mu_);
    auto it = policies_.find(name);
    if (it == policies_.end()) return false;
    old = std::move(it->second);
    policies_.erase(it);
    return true;
  }

  std::shared_ptr<const Policy> Get(std::string_view name) const {
    absl::ReaderMutexLock lock(&mu_);
    auto it = policies_.find(name);
    return it == policies_.end() ? nullptr : it->second;
  }

  std::vector<std::shared_ptr<const Policy>> List() const {
    std::vector<std::shared_ptr<const Policy>> out;
    absl::ReaderMutexLock lock(&mu_);
    out.reserve(policies_.size());
    for (const auto& [name, policy] : policies_) out.push_back(policy);
    return out;
  }

  // Swaps in a fully built map, so a reader sees either the old set or the new one.
  void Swap(PolicyMap* replacement) {
    absl::MutexLock lock(&mu_);
    policies_.swap(*replacement);
  }

  size_t size() const {
    absl::ReaderMutexLock lock(&mu_);
    return policies_.size();
  }

 private:
  mutable absl::Mutex mu_;
  PolicyMap policies_ ABSL_GUARDED_BY(mu_);
};

PolicyRegistry::PolicyRegistry() : impl_(std::make_unique<Impl>()) {}
PolicyRegistry::~PolicyRegistry() = default;

absl::Status PolicyRegistry::Set(Policy policy) { return impl_->Set(std::move(policy)); }

bool PolicyRegistry::Delete(std::string_view name) { return impl_->Delete(name); }

std::shared_ptr<const Policy> PolicyRegistry::Get(std::string_view name) const {
  return impl_->Get(name);
}

std::vector<std::shared_ptr<const Policy>> PolicyRegistry::List() const { return impl_->List(); }

void PolicyRegistry::ReplaceAll(std::vector<Policy> policies) {
  PolicyMap replacement;
  for (Policy& policy : policies) {
    if (!ValidatePolicy(policy).ok()) continue;
    std::string name = policy.name;
    replacement[std::move(name)] = std::make_shared<const Policy>(std::move(policy));
  }
  impl_->Swap(&replacement);
  // `replacement` now holds the old set and is released here, outside the lock.
}

absl::Status PolicyRegistry::ReplaceAllValidated(std::vector<Policy> policies) {
  PolicyMap replacement;
  for (Policy& policy : policies) {
    if (absl::Status status = ValidatePolicy(policy); !status.ok()) {
      if (ValidatePolicyName(policy.name).ok()) {
        return absl::InvalidArgumentError("policy '" + policy.name +
                                          "': " + std::string(status.message()));
      }
      return status;
    }
    std::string name = policy.name;
    auto [it, inserted] = replacement.try_emplace(std::move(name), nullptr);
    if (!inserted) {
      return absl::InvalidArgumentError("policy '" + policy.name + "' is defined twice");
    }
    it->second = std::make_shared<const Policy>(std::move(policy));
  }
  impl_->Swap(&replacement);
  return absl::OkStatus();
}

size_t PolicyRegistry::size() const { return impl_->size(); }

}  // namespace rl

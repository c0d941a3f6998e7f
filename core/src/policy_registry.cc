// Named policies shared by every connection. Each policy is an immutable shared_ptr snapshot:
// a check that fetched a policy keeps using it even if RL.POLICY SET or a reload replaces it
// midway, and readers only hold the lock long enough to copy a pointer.
#include "rl/policy_registry.h"

#include <atomic>
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

namespace {

// Whether two limits' states are one (see Limit and the state keys: algorithm and window; a
// CONCURRENCY limit's leases whatever their ttl).
bool SameState(const Limit& a, const Limit& b) {
  return a.algorithm == b.algorithm &&
         (a.algorithm == Algorithm::kConcurrency || a.window_ms == b.window_ms);
}

// How many older limits one limit carries from at most: each costs its checks a lookup.
constexpr size_t kMaxCarriedPerLimit = 4;

}  // namespace

void LinkPreviousPolicy(const Policy& previous, Policy* next) {
  next->carried_from.clear();
  const std::vector<Limit>& old = previous.limits;
  const std::vector<Limit>& now = next->limits;
  std::vector<bool> used(old.size(), false);  // old states the new policy still has
  std::vector<bool> kept(now.size(), false);
  auto inherit = [&](size_t from_old, size_t to_new) {
    size_t n = 0;
    for (const auto& [k, limit] : next->carried_from) n += k == to_new;
    for (const auto& [k, limit] : previous.carried_from) {
      if (k != from_old || SameState(limit, now[to_new]) || n >= kMaxCarriedPerLimit) continue;
      next->carried_from.emplace_back(to_new, limit);
      ++n;
    }
  };
  for (size_t i = 0; i < now.size(); ++i) {
    for (size_t j = 0; j < old.size(); ++j) {
      if (!SameState(now[i], old[j])) continue;
      used[j] = kept[i] = true;
      inherit(j, i);
    }
  }
  for (size_t i = 0; i < now.size(); ++i) {
    if (kept[i]) continue;
    // The old limit at the same position first, else the first unused one of the algorithm.
    size_t pick = old.size();
    if (i < old.size() && !used[i] && old[i].algorithm == now[i].algorithm) pick = i;
    for (size_t j = 0; pick == old.size() && j < old.size(); ++j) {
      if (!used[j] && old[j].algorithm == now[i].algorithm) pick = j;
    }
    if (pick == old.size()) continue;
    used[pick] = true;
    next->carried_from.emplace_back(i, old[pick]);
    inherit(pick, i);
  }
}

class PolicyRegistry::Impl {
 public:
  absl::Status Set(Policy policy) {
    if (absl::Status status = ValidatePolicy(policy); !status.ok()) return status;
    std::shared_ptr<const Policy> old;  // released after the lock, not under it
    absl::MutexLock lock(&mu_);
    auto it = policies_.find(policy.name);
    if (it == policies_.end()) {
      std::string name = policy.name;
      policies_.emplace(std::move(name), std::make_shared<const Policy>(std::move(policy)));
      Changed();
      return absl::OkStatus();
    }
    LinkPreviousPolicy(*it->second, &policy);
    old = std::move(it->second);
    it->second = std::make_shared<const Policy>(std::move(policy));
    Changed();
    return absl::OkStatus();
  }

  bool Delete(std::string_view name) {
    std::shared_ptr<const Policy> old;
    absl::MutexLock lock(&mu_);
    auto it = policies_.find(name);
    if (it == policies_.end()) return false;
    old = std::move(it->second);
    policies_.erase(it);
    Changed();
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
    Changed();
  }

  uint64_t version() const { return version_.load(std::memory_order_acquire); }

  size_t size() const {
    absl::ReaderMutexLock lock(&mu_);
    return policies_.size();
  }

 private:
  // Under mu_, after the map changed: a reader that sees the new version finds the change.
  void Changed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    version_.fetch_add(1, std::memory_order_release);
  }

  mutable absl::Mutex mu_;
  PolicyMap policies_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> version_{0};
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
    if (auto old = impl_->Get(policy.name)) LinkPreviousPolicy(*old, &policy);
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
    if (auto old = impl_->Get(policy.name)) LinkPreviousPolicy(*old, &policy);
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

uint64_t PolicyRegistry::version() const { return impl_->version(); }

}  // namespace rl

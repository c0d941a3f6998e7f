// Named policies, shared by every connection: RL.POLICY SET/GET/DEL/LIST and config (re)loads.
// Readers get an immutable snapshot of a policy, so a reload never changes a check midway.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "rl/limit.h"

namespace rl {

class PolicyRegistry {
 public:
  PolicyRegistry();
  ~PolicyRegistry();

  // Defines or replaces a policy. Fails for an invalid name or limit set.
  absl::Status Set(Policy policy);
  // Removes a policy; false when there was none.
  bool Delete(std::string_view name);
  // The policy, or null.
  std::shared_ptr<const Policy> Get(std::string_view name) const;
  // All policies sorted by name.
  std::vector<std::shared_ptr<const Policy>> List() const;
  // Replaces the whole set at once (config reload). Limiter state is untouched. Policies that
  // fail ValidatePolicy are skipped; of several with one name the last wins.
  void ReplaceAll(std::vector<Policy> policies);
  // Like ReplaceAll, but all or nothing: when any policy is invalid or a name repeats, returns
  // the error (naming the policy) and the current set stays as it was.
  absl::Status ReplaceAllValidated(std::vector<Policy> policies);
  size_t size() const;
  // Changes with every Set, Delete and replacement (after the change is visible to Get): a reader
  // that kept policies from Get may use them while the version it read them at is current. One
  // atomic load, no lock: what a per-connection or per-thread cache checks on every lookup.
  uint64_t version() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rl

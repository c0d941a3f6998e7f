// rl.so's named policies: one whole set per node, versioned so that every node of a cluster ends
// with the same one (policy_sync.h carries it over the cluster bus).
//
// The set starts as the POLICIES file given at load, unversioned (version 0). Every change a
// client makes (RL.POLICY SET, DEL, RELOAD) publishes the node's whole resulting set as a new
// version: counter = max(this node's counter + 1, any counter seen from a peer + 1, the wall
// clock in ms), with this node's cluster id. Versions are ordered by (counter, node id), then by
// the set's digest; the highest wins everywhere, so concurrent changes on two nodes end in one
// agreed set: the later version, whole (the other change is lost, not merged). The wall clock in
// the counter keeps a node that restarted without its data from publishing under a counter it
// already used. An unversioned set never spreads: it stays the node's own until a version exists.
//
// Replicas and the AOF receive the whole versioned set (RL.POLICYSET, which an upstream replays
// as sent); the RDB carries it as the type's aux data, so after a restart the stored versioned
// set replaces the POLICIES file's. Definitions stored or replicated by earlier versions (runtime
// definitions over the file's, RL.POLICY SET/DEL as sent) still load, unversioned.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "redis_module_api.h"
#include "rl/limit.h"

namespace rl::module {

// Which set a node holds: (counter, node) in Lamport order, 0 = never published.
struct SetVersion {
  uint64_t counter = 0;
  std::string node;  // the publishing node's cluster id; "" outside a cluster
  friend bool operator==(const SetVersion& a, const SetVersion& b) {
    return a.counter == b.counter && a.node == b.node;
  }
  friend bool operator<(const SetVersion& a, const SetVersion& b) {
    return a.counter != b.counter ? a.counter < b.counter : a.node < b.node;
  }
  // "<counter>-<node>", or "0" when never published.
  std::string ToString() const;
};

// The command layer's Registry (rl/command/commands.h) over the module's policies.
class ModulePolicies {
 public:
  // Reads `path`'s [policies] table; all or nothing. At load: the unversioned set; remembered
  // for Reload.
  absl::Status LoadFile(const std::string& path);
  // RL.POLICY RELOAD: the file given at load, read again, becomes the whole set, published.
  absl::Status Reload(const std::string& my_node);

  // A client's change, published as a new version by `my_node`.
  absl::Status Set(Policy policy, const std::string& my_node);
  bool Delete(std::string_view name, const std::string& my_node);
  // What an earlier rl.so replicated (RL.POLICY SET/DEL as sent): applied, the version kept.
  absl::Status SetUnversioned(Policy policy);
  bool DeleteUnversioned(std::string_view name);

  std::shared_ptr<const Policy> Get(std::string_view name);
  std::vector<std::shared_ptr<const Policy>> List();

  const SetVersion& version() const;
  uint64_t digest() const;  // of the names and canonical specs
  // True when (version, digest) would replace this node's set.
  bool Newer(const SetVersion& version, uint64_t digest) const;
  // A counter a peer announced: the next version published here goes beyond it.
  void SeeCounter(uint64_t counter);

  // The versioned whole set as one byte string (the cluster message and RL.POLICYSET's
  // argument), and its installation: all or nothing; `force` (from upstream) installs whatever
  // version it holds, otherwise only a newer one. True when installed.
  std::string Encode() const;
  absl::StatusOr<bool> Install(std::string_view encoded, bool force);

  // RDB aux data: the runtime definitions (name, spec) in order; a versioned set adds one entry
  // no policy can be named (its version) and is then the whole set.
  void AuxSave(RedisModuleIO* rdb);
  int AuxLoad(RedisModuleIO* rdb);
};

ModulePolicies& Policies();

// The type's aux_save / aux_load callbacks (before the keyspace).
void PoliciesAuxSave(RedisModuleIO* rdb, int when);
int PoliciesAuxLoad(RedisModuleIO* rdb, int encver, int when);

}  // namespace rl::module

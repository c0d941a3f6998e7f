// Policies that reach every node of a Redis Cluster: the versioned set of policies.h carried over
// the cluster bus, and the commands around it.
//
// A client's change on a master (RL.POLICY SET, DEL, RELOAD) publishes a new version: the master
// replicates the whole set to its replicas and AOF (RL.POLICYSET) and sends it to every connected
// node at once. Cluster-bus messages reach connected nodes only, so every node also announces
// its version and digest every kAnnounceMs; a master that hears a peer master announce an older
// set sends it its own. A master that receives a newer set installs it and replicates it
// (RL.POLICYSET) to its replicas and AOF; replicas take sets from their master only, never from
// the bus, so a replica always mirrors its master. A node that was down, or joins, announces
// what it has and is sent the newest set within one period; with no operator involved.
//
// The announces also tell each node which nodes hold its version: RL.POLICY VERSION and INFO rl
// show this node's version and digest, how many of the cluster's nodes hold the same (heard
// from in the last few seconds) and whether that is all of them.
//
//   RL.POLICY VERSION  -> version, digest, nodes, agreeing, agreed (a map under RESP3)
//   RL.POLICY RELOAD   -> OK: the POLICIES file, read again, published as the whole set
//   RL.POLICYSET <set> internal: installs a whole versioned set (what replicas and the AOF get)
#pragma once

#include <string>
#include <vector>

#include "redis_module_api.h"
#include "rl/command/docs.h"

namespace rl::module {

// Registers RL.POLICYSET, RL.POLICY VERSION and RELOAD (after the RL.POLICY row exists) and, in
// cluster mode, the bus receiver and the announce timer. Call once from OnLoad.
bool RegisterPolicySync(RedisModuleCtx* ctx);

// The docs of RL.POLICY VERSION and RELOAD, the subcommands only rl.so has: COMMAND DOCS and
// RL.POLICY HELP list them beside the shared rows.
const std::vector<command::CommandDoc>& PolicySyncDocs();

// After a client's change published a version here: replicates the whole set and sends it to
// every connected node.
void PublishedHere(RedisModuleCtx* ctx);

// This node's cluster id; "" outside cluster mode.
std::string MyNodeId();

// INFO rl: policies_version, policies_digest, policies_nodes, policies_agreeing,
// policies_agreed.
void AddPolicySyncInfo(RedisModuleInfoCtx* ctx);

}  // namespace rl::module

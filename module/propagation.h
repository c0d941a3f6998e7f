// Whether a state change has anyone downstream to reach. Replicating RL.SETSTATE costs an
// encoding of the state plus, inside RedisModule_Replicate, a command-table lookup and a handful
// of allocations: a large share of an RL.CHECK's cost. Redis itself drops a propagated
// command unseen when nothing can receive it (server.c, shouldPropagate: no AOF, and no replica
// and no replication backlog, or this node is a replica), so rl.so builds the effect only when
// something may receive it; otherwise it calls RedisModule_ReplicateVerbatim, which only counts
// the write (server.dirty, for `save` points) since Redis drops its propagation.
//
// The AOF is read from the context flags on every call. Replicas and the backlog are not in the
// flags, so the module keeps a "downstream" flag: set at load, at every fork, when a replica
// comes online or goes and when the role changes (a promoted replica keeps its backlog);
// cleared only by the cron hook (hz times a second) when INFO replication shows a master with
// no replica and no backlog. A replica's full sync creates the backlog at SYNC/PSYNC but starts
// its stream at a fork: writes before the fork are in the snapshot it loads, and the fork event
// runs before the next command, so the stream it receives has every effect. Nothing reads the
// backlog from before that fork (its replication id is new at creation and first announced with
// the fork's offset). A replica that reconnects within repl-backlog-ttl finds the backlog still
// active, so the flag was never cleared.
#pragma once

#include "redis_module_api.h"

namespace rl::module {

// Subscribes to the server events above. Call once from OnLoad.
bool WatchDownstream(RedisModuleCtx* ctx);

// Whether a state change must be replicated, given the command's RedisModule_GetContextFlags.
bool MustPropagate(int ctx_flags);

// For INFO rl: 1 while writes are replicated because something downstream may need them.
bool DownstreamActive();

// Whether the command replays what came from upstream (the replication link, or an AOF being
// loaded), given its RedisModule_GetContextFlags: such a write is applied as sent, is not held
// to a client's rules (permissions, this node's clock ending a state), and was already decided.
inline bool FromUpstream(int ctx_flags) {
  return (ctx_flags & (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING)) != 0;
}

}  // namespace rl::module

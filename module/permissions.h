// Who may run RL.SETSTATE, RL.APPLY and RL.PUT. RL.SETSTATE overwrites a key's states as RESTORE
// does (an empty state resets an exhausted limit), so it needs what RESTORE needs: a user refused
// RESTORE on the key (for instance by -@dangerous, which Redis 7.0 cannot apply to a module
// command: module commands have no ACL categories there) is refused RL.SETSTATE with NOPERM. A
// master's stream and the AOF carry no ACL user and are always applied. RL.APPLY (a replayed call
// at a time the caller names) and RL.PUT (a whole state) can reset a limit as surely, so they are
// held to the same rule.
#pragma once

#include "redis_module_api.h"

namespace rl::module {

// The RL.SETSTATE handler: the permission check, then SetStateCommand (put.h).
int GuardedSetStateCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);
// The RL.APPLY handler: the same check, then ApplyCommand (apply.h).
int GuardedApplyCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);
// The RL.PUT handler: the same check, then PutCommand (put.h).
int GuardedPutCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);

}  // namespace rl::module

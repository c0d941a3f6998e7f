// RL.SETSTATE's permission check (see permissions.h).
#include "permissions.h"

#include <cerrno>

#include "state_type.h"

namespace rl::module {
namespace {

// Whether the caller may run `RESTORE key 0 payload`.
bool MayRestore(RedisModuleCtx* ctx, RedisModuleString** argv) {
  RedisModuleString* name = RedisModule_GetClientUserNameById(ctx, RedisModule_GetClientId(ctx));
  // No ACL user: the master's link (root), or a module's own RM_Call without "C" (root as well;
  // with "C" Redis checked the user for RL.SETSTATE itself). Scripts cannot call RL.SETSTATE
  // ("deny-script"), so an unlinked client is never a user's script here.
  if (name == nullptr) return true;
  RedisModuleUser* user = RedisModule_GetModuleUserFromUserName(name);
  RedisModule_FreeString(ctx, name);
  if (user == nullptr) return false;  // the user was deleted meanwhile
  RedisModuleString* restore = RedisModule_CreateString(ctx, "RESTORE", 7);
  RedisModuleString* ttl = RedisModule_CreateString(ctx, "0", 1);
  RedisModuleString* args[] = {restore, argv[1], ttl, argv[2]};
  const bool allowed = RedisModule_ACLCheckCommandPermissions(user, args, 4) == REDISMODULE_OK;
  RedisModule_FreeString(ctx, restore);
  RedisModule_FreeString(ctx, ttl);
  RedisModule_FreeModuleUser(user);
  return allowed;
}

}  // namespace

int GuardedSetStateCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  const int flags = RedisModule_GetContextFlags(ctx);
  const bool trusted = flags & (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING);
  if (!trusted && !MayRestore(ctx, argv)) {
    return RedisModule_ReplyWithError(
        ctx,
        "NOPERM this user has no permissions to run the 'rl.setstate' command (it needs the "
        "permission to RESTORE the key)");
  }
  return SetStateCommand(ctx, argv, argc);
}

}  // namespace rl::module

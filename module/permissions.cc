// The permission check of RL.SETSTATE, RL.APPLY and RL.PUT (see permissions.h).
#include "permissions.h"

#include <cerrno>
#include <string>

#include "apply.h"
#include "propagation.h"
#include "put.h"

namespace rl::module {
namespace {

// Whether the caller may run `RESTORE key 0 payload` (the payload's bytes do not matter to ACLs).
bool MayRestore(RedisModuleCtx* ctx, RedisModuleString* key) {
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
  RedisModuleString* args[] = {restore, key, ttl, ttl};
  const bool allowed = RedisModule_ACLCheckCommandPermissions(user, args, 4) == REDISMODULE_OK;
  RedisModule_FreeString(ctx, restore);
  RedisModule_FreeString(ctx, ttl);
  RedisModule_FreeModuleUser(user);
  return allowed;
}

// Redis's own NOPERM words for `command`, with what it needs: the internal writers overwrite a
// key as RESTORE does.
int NoPermission(RedisModuleCtx* ctx, const char* command) {
  const std::string message = std::string("NOPERM this user has no permissions to run the '") +
                              command + "' command (it needs the permission to RESTORE the key)";
  return RedisModule_ReplyWithError(ctx, message.c_str());
}

}  // namespace

// A master's stream and the AOF are trusted; a client needs RESTORE's permission on the key.
// `ctx_flags`: RedisModule_GetContextFlags(ctx), read once per command and passed on.
bool Permitted(RedisModuleCtx* ctx, int ctx_flags, RedisModuleString* key) {
  return FromUpstream(ctx_flags) || MayRestore(ctx, key);
}

int GuardedSetStateCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3 && argc != 4) return RedisModule_WrongArity(ctx);
  const int flags = RedisModule_GetContextFlags(ctx);
  if (!Permitted(ctx, flags, argv[1])) return NoPermission(ctx, "rl.setstate");
  return SetStateCommand(ctx, argv, argc, flags);
}

int GuardedApplyCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 2) return RedisModule_WrongArity(ctx);
  if (!Permitted(ctx, RedisModule_GetContextFlags(ctx), argv[1])) {
    return NoPermission(ctx, "rl.apply");
  }
  return ApplyCommand(ctx, argv, argc);
}

int GuardedPutCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  const int flags = RedisModule_GetContextFlags(ctx);
  if (!Permitted(ctx, flags, argv[1])) return NoPermission(ctx, "rl.put");
  return PutCommand(ctx, argv, argc, flags);
}

}  // namespace rl::module

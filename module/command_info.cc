// Converts command::CommandDoc rows into RedisModuleCommandInfo (see command_info.h).
#include "command_info.h"

#include <deque>
#include <string>
#include <vector>

namespace rl::module {
namespace {

// Storage the server may point into for the life of the process: strings, argument arrays,
// key specs and infos are never freed (a module is not unloaded while commands exist).
struct Storage {
  std::deque<std::string> strings;
  std::deque<std::vector<RedisModuleCommandArg>> args;
  std::deque<std::vector<RedisModuleCommandKeySpec>> key_specs;
  std::deque<RedisModuleCommandInfo> infos;
};
Storage& Store() {
  static Storage* storage = new Storage();
  return *storage;
}

const char* Keep(const std::string& s) {
  if (s.empty()) return nullptr;
  return Store().strings.emplace_back(s).c_str();
}

RedisModuleCommandArgType TypeOf(const std::string& type) {
  if (type == "key") return REDISMODULE_ARG_TYPE_KEY;
  if (type == "integer") return REDISMODULE_ARG_TYPE_INTEGER;
  if (type == "pure-token") return REDISMODULE_ARG_TYPE_PURE_TOKEN;
  if (type == "oneof") return REDISMODULE_ARG_TYPE_ONEOF;
  if (type == "block") return REDISMODULE_ARG_TYPE_BLOCK;
  return REDISMODULE_ARG_TYPE_STRING;
}

// A zero-terminated argument array for `docs`.
RedisModuleCommandArg* Args(const std::vector<command::ArgDoc>& docs) {
  if (docs.empty()) return nullptr;
  std::vector<RedisModuleCommandArg>& out = Store().args.emplace_back(docs.size() + 1);
  for (size_t i = 0; i < docs.size(); ++i) {
    const command::ArgDoc& doc = docs[i];
    RedisModuleCommandArg& arg = out[i];
    arg.name = Keep(doc.name);
    arg.type = TypeOf(doc.type);
    arg.key_spec_index = arg.type == REDISMODULE_ARG_TYPE_KEY ? 0 : -1;
    arg.token = Keep(doc.token);
    arg.flags = ((doc.flags & command::kArgOptional) ? REDISMODULE_CMD_ARG_OPTIONAL : 0) |
                ((doc.flags & command::kArgMultiple) ? REDISMODULE_CMD_ARG_MULTIPLE : 0);
    arg.subargs = Args(doc.arguments);
  }
  return out.data();
}

}  // namespace

bool SetCommandInfo(RedisModuleCommand* command, const command::CommandDoc& doc) {
  if (command == nullptr) return false;
  RedisModuleCommandInfo& info = Store().infos.emplace_back();
  info.version = REDISMODULE_COMMAND_INFO_VERSION;
  info.summary = Keep(doc.summary);
  info.complexity = Keep(doc.complexity);
  info.since = Keep(doc.since);
  info.arity = doc.arity;
  if (doc.first_key > 0) {
    // One key at argv[first_key]: read and updated by writers, only read by RL.PEEK.
    std::vector<RedisModuleCommandKeySpec>& specs = Store().key_specs.emplace_back(2);
    RedisModuleCommandKeySpec& spec = specs[0];
    spec.flags = (doc.flags & command::kDocWrite)
                     ? REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_UPDATE
                     : REDISMODULE_CMD_KEY_RO | REDISMODULE_CMD_KEY_ACCESS;
    spec.begin_search_type = REDISMODULE_KSPEC_BS_INDEX;
    spec.bs.index.pos = doc.first_key;
    spec.find_keys_type = REDISMODULE_KSPEC_FK_RANGE;
    spec.fk.range = {0, 1, 0};
    info.key_specs = specs.data();
  }
  info.args = Args(doc.arguments);
  return RedisModule_SetCommandInfo(command, &info) == REDISMODULE_OK;
}

}  // namespace rl::module

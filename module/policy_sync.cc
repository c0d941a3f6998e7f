// See policy_sync.h: the versioned policy set over the cluster bus.
#include "policy_sync.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <string_view>

#include "command_info.h"
#include "glue.h"
#include "policies.h"

namespace rl::module {
namespace {

// Message types on the bus (rl.so's own: the module name scopes them).
constexpr uint8_t kAnnounce = 1;  // "<counter>|<node>|<digest>|<role M or R>"
constexpr uint8_t kSet = 2;       // ModulePolicies::Encode()
constexpr long long kAnnounceMs = 250;
// A peer counts as agreeing when its last announce, this recent, showed our version.
constexpr int64_t kFreshMs = 2000;

struct Peer {
  SetVersion version;
  uint64_t digest = 0;
  bool master = false;
  int64_t seen_ms = 0;  // node clock
};

// Bus callbacks, timers and commands all run on the main thread.
struct SyncState {
  std::map<std::string, Peer, std::less<>> peers;
  // The last agreement count (the timer's, or a command's); INFO reads it.
  size_t nodes = 1, agreeing = 1;
};

SyncState& Sync() {
  static SyncState* state = new SyncState();
  return *state;
}

bool InCluster(RedisModuleCtx* ctx) {
  return (RedisModule_GetContextFlags(ctx) & REDISMODULE_CTX_FLAGS_CLUSTER) != 0;
}
bool IsMaster(RedisModuleCtx* ctx) {
  return (RedisModule_GetContextFlags(ctx) & REDISMODULE_CTX_FLAGS_MASTER) != 0;
}

std::string DigestText(uint64_t digest) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, digest);
  return buf;
}

// Counts the cluster's nodes and those holding this node's version and digest (itself included).
void CountAgreement(RedisModuleCtx* ctx) {
  SyncState& s = Sync();
  s.nodes = s.agreeing = 1;
  if (!InCluster(ctx)) return;
  size_t n = 0;
  char** ids = RedisModule_GetClusterNodesList(ctx, &n);
  if (ids == nullptr) return;
  const std::string me = MyNodeId();
  const int64_t now = Clock().NowMs();
  s.nodes = n;
  s.agreeing = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string id(ids[i], REDISMODULE_NODE_ID_LEN);
    if (id == me) {
      ++s.agreeing;
      continue;
    }
    auto it = s.peers.find(id);
    if (it != s.peers.end() && now - it->second.seen_ms <= kFreshMs &&
        it->second.version == Policies().version() && it->second.digest == Policies().digest()) {
      ++s.agreeing;
    }
  }
  RedisModule_FreeClusterNodesList(ids);
}

void Send(RedisModuleCtx* ctx, const char* target, uint8_t type, const std::string& payload) {
  RedisModule_SendClusterMessage(ctx, target, type, payload.data(),
                                 static_cast<uint32_t>(payload.size()));
}

void OnAnnounce(RedisModuleCtx* ctx, const std::string& sender, std::string_view text) {
  // counter|node|digest|role
  Peer peer;
  size_t a = text.find('|'), b = text.find('|', a + 1), c = text.find('|', b + 1);
  if (a == std::string_view::npos || b == std::string_view::npos || c == std::string_view::npos) {
    return;
  }
  unsigned long long counter = 0, digest = 0;
  if (std::sscanf(std::string(text.substr(0, a)).c_str(), "%llu", &counter) != 1 ||
      std::sscanf(std::string(text.substr(b + 1, c - b - 1)).c_str(), "%llx", &digest) != 1) {
    return;
  }
  peer.version = SetVersion{counter, std::string(text.substr(a + 1, b - a - 1))};
  peer.digest = digest;
  peer.master = text.substr(c + 1) == "M";
  peer.seen_ms = Clock().NowMs();
  Policies().SeeCounter(counter);
  // A peer master behind this one gets the whole set; a replica waits for its own master.
  const ModulePolicies& mine = Policies();
  const bool ahead = mine.version().counter > 0 &&
                     (peer.version < mine.version() ||
                      (peer.version == mine.version() && peer.digest < mine.digest()));
  if (ahead && peer.master && IsMaster(ctx)) Send(ctx, sender.c_str(), kSet, mine.Encode());
  Sync().peers[sender] = std::move(peer);
}

// A newer set installed by a master reaches its replicas and its AOF as RL.POLICYSET.
void OnSet(RedisModuleCtx* ctx, std::string_view encoded) {
  if (!IsMaster(ctx)) return;
  absl::StatusOr<bool> installed = Policies().Install(encoded, /*force=*/false);
  if (!installed.ok()) {
    RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING, "rl: refused a policy set from a peer: %s",
                    std::string(installed.status().message()).c_str());
    return;
  }
  if (!*installed) return;
  RedisModule_Replicate(ctx, "rl.policyset", "b", encoded.data(), encoded.size());
  RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_NOTICE, "rl: policy set %s installed from a peer",
                  Policies().version().ToString().c_str());
}

void OnMessage(RedisModuleCtx* ctx, const char* sender_id, uint8_t type,
               const unsigned char* payload, uint32_t len) {
  const std::string sender(sender_id, REDISMODULE_NODE_ID_LEN);
  const std::string_view body(reinterpret_cast<const char*>(payload), len);
  if (type == kAnnounce) OnAnnounce(ctx, sender, body);
  if (type == kSet) OnSet(ctx, body);
}

void OnTimer(RedisModuleCtx* ctx, void*) {
  const ModulePolicies& p = Policies();
  const std::string text = std::to_string(p.version().counter) + "|" + p.version().node + "|" +
                           DigestText(p.digest()) + "|" + (IsMaster(ctx) ? "M" : "R");
  Send(ctx, nullptr, kAnnounce, text);
  CountAgreement(ctx);
  RedisModule_CreateTimer(ctx, kAnnounceMs, OnTimer, nullptr);
}

// RL.POLICYSET <set>: from upstream (the master's stream, the AOF) installed as sent, so a
// replica mirrors its master; from a client only when newer.
int PolicySetCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  const int flags = RedisModule_GetContextFlags(ctx);
  const bool upstream =
      (flags & (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING)) != 0;
  size_t len = 0;
  const char* p = RedisModule_StringPtrLen(argv[1], &len);
  absl::StatusOr<bool> installed = Policies().Install(std::string_view(p, len), upstream);
  if (!installed.ok()) {
    return RedisModule_ReplyWithError(ctx,
                                      ("ERR " + std::string(installed.status().message())).c_str());
  }
  if (*installed) {
    RedisModule_ReplicateVerbatim(ctx);
    if (!upstream && InCluster(ctx)) Send(ctx, nullptr, kSet, Policies().Encode());
  }
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

int PolicyVersion(RedisModuleCtx* ctx, RedisModuleString**, int) {
  CountAgreement(ctx);
  const SyncState& s = Sync();
  ModuleSink w(ctx);
  w.MapHeader(5);
  w.Bulk("version");
  w.Bulk(Policies().version().ToString());
  w.Bulk("digest");
  w.Bulk(DigestText(Policies().digest()));
  w.Bulk("nodes");
  w.Integer(static_cast<int64_t>(s.nodes));
  w.Bulk("agreeing");
  w.Integer(static_cast<int64_t>(s.agreeing));
  w.Bulk("agreed");
  w.Integer(s.agreeing == s.nodes ? 1 : 0);
  return REDISMODULE_OK;
}

int PolicyReload(RedisModuleCtx* ctx, RedisModuleString**, int) {
  if (absl::Status s = Policies().Reload(MyNodeId()); !s.ok()) {
    return RedisModule_ReplyWithError(ctx, ("ERR " + std::string(s.message())).c_str());
  }
  PublishedHere(ctx);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

bool AddSubcommand(RedisModuleCtx* ctx, RedisModuleCommand* parent, const command::CommandDoc& doc,
                   RedisModuleCmdFunc handler, const char* flags) {
  const std::string name = doc.name.substr(doc.name.find('|') + 1);
  if (RedisModule_CreateSubcommand(parent, name.c_str(), handler, flags, 0, 0, 0) ==
      REDISMODULE_ERR) {
    return false;
  }
  return SetCommandInfo(RedisModule_GetCommand(ctx, doc.name.c_str()), doc);
}

command::CommandDoc SyncDoc(const char* name, const char* summary) {
  command::CommandDoc doc;
  doc.name = name;
  doc.arity = 2;
  doc.summary = summary;
  doc.since = "0.3.0";
  doc.complexity = "O(N) where N is the number of policies";
  return doc;
}

}  // namespace

const std::vector<command::CommandDoc>& PolicySyncDocs() {
  static const std::vector<command::CommandDoc> docs = {
      SyncDoc("rl.policy|version",
              "This node's policy set version, digest and how many nodes hold it."),
      SyncDoc("rl.policy|reload",
              "Reads the POLICIES file again and publishes it as the whole policy set.")};
  return docs;
}

std::string MyNodeId() {
  const char* id = RedisModule_GetMyClusterID();
  return id == nullptr ? std::string() : std::string(id, REDISMODULE_NODE_ID_LEN);
}

void PublishedHere(RedisModuleCtx* ctx) {
  const std::string encoded = Policies().Encode();
  RedisModule_Replicate(ctx, "rl.policyset", "b", encoded.data(), encoded.size());
  if (InCluster(ctx)) {
    Send(ctx, nullptr, kSet, encoded);
    CountAgreement(ctx);  // until the peers confirm, only this node holds it
  }
}

bool RegisterPolicySync(RedisModuleCtx* ctx) {
  // "admin": kept out of MONITOR; not "deny-oom": what a master sends must apply.
  if (RedisModule_CreateCommand(ctx, "rl.policyset", PolicySetCommand, "write admin deny-script", 0,
                                0, 0) == REDISMODULE_ERR) {
    return false;
  }
  RedisModuleCommand* parent = RedisModule_GetCommand(ctx, "rl.policy");
  const std::vector<command::CommandDoc>& docs = PolicySyncDocs();
  if (parent == nullptr || !AddSubcommand(ctx, parent, docs[0], PolicyVersion, "readonly fast") ||
      !AddSubcommand(ctx, parent, docs[1], PolicyReload, "write deny-oom")) {
    return false;
  }
  if (InCluster(ctx)) {
    RedisModule_RegisterClusterMessageReceiver(ctx, kAnnounce, OnMessage);
    RedisModule_RegisterClusterMessageReceiver(ctx, kSet, OnMessage);
    RedisModule_CreateTimer(ctx, kAnnounceMs, OnTimer, nullptr);
  }
  return true;
}

void AddPolicySyncInfo(RedisModuleInfoCtx* ctx) {
  const SyncState& s = Sync();
  RedisModule_InfoAddFieldCString(ctx, "policies_version", Policies().version().ToString().c_str());
  RedisModule_InfoAddFieldCString(ctx, "policies_digest", DigestText(Policies().digest()).c_str());
  RedisModule_InfoAddFieldLongLong(ctx, "policies_nodes", static_cast<long long>(s.nodes));
  RedisModule_InfoAddFieldLongLong(ctx, "policies_agreeing", static_cast<long long>(s.agreeing));
  RedisModule_InfoAddFieldLongLong(ctx, "policies_agreed", s.agreeing == s.nodes ? 1 : 0);
}

}  // namespace rl::module

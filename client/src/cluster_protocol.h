// What rl::RemoteLimiter needs to know of Redis Cluster, with no I/O: the hash slot of a key
// (CRC16 with the {hash tag} rule), node addresses, the CLUSTER SLOTS reply turned into slot
// ranges, the MOVED / ASK redirections, and the error replies that mean "this node cannot answer
// now" rather than "the request was wrong". Replies come from the network: nothing here trusts
// their shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "resp/reply_parser.h"

namespace rl::client_internal {

inline constexpr int kClusterSlots = 16384;

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum Redis Cluster hashes
// keys with.
uint16_t Crc16(std::string_view data);

// The slot of `key`: CRC16 of the whole key mod 16384, unless the key has a hash tag: the bytes
// between the first '{' and the first '}' after it, when there is at least one byte between
// them ("{user1}:a" and "{user1}:b" share a slot; "{}x" hashes whole).
int KeySlot(std::string_view key);

// A node as clients reach it. The host is a name or an IP address (IPv6 without brackets).
struct NodeAddress {
  std::string host;
  uint16_t port = 0;

  std::string ToString() const;  // "host:port", IPv6 as "[::1]:7000"
  friend bool operator==(const NodeAddress&, const NodeAddress&) = default;
};

// "host:port" or "[v6]:port" -> NodeAddress; InvalidArgument for anything else (no port, port
// 0 or > 65535, empty host).
absl::StatusOr<NodeAddress> ParseNodeAddress(std::string_view text);

// One range of slots and the master serving it.
struct SlotRange {
  int first = 0;
  int last = 0;  // inclusive
  NodeAddress master;
};

// The reply to CLUSTER SLOTS (RESP2 or RESP3, with or without the node id and metadata that
// Redis 7 adds) -> its ranges. A master announced with a NULL, empty or "?" endpoint is reached
// on `asked_host` (the node that answered), as the command's documentation says. Error replies,
// a malformed reply or ranges outside 0..16383 -> an error status; an empty array (a node not
// yet in a cluster) -> no ranges.
absl::StatusOr<std::vector<SlotRange>> ParseClusterSlots(const resp::Value& reply,
                                                         std::string_view asked_host);

// "-MOVED <slot> <host>:<port>" (the slot has moved for good: update the map) or "-ASK <slot>
// <host>:<port>" (this one command goes there, preceded by ASKING). An empty host means the
// host of the node that redirected (`from_host`).
struct Redirect {
  enum class Kind { kMoved, kAsk };
  Kind kind = Kind::kMoved;
  int slot = 0;
  NodeAddress to;
};
// nullopt when `reply` is not a well-formed MOVED / ASK error.
std::optional<Redirect> ParseRedirect(const resp::Value& reply, std::string_view from_host);

// Error replies that say the node cannot serve the key right now (the cluster is down or
// reconfiguring, the node is loading or is a replica, a master is down, a master with
// min-replicas-to-write has too few replicas in reach): CLUSTERDOWN, TRYAGAIN, LOADING,
// MASTERDOWN, READONLY, BUSY, NOREPLICAS. The request itself was fine, so the fallback or the
// policy's FailureMode decides, as for a node that is unreachable (in both modes).
bool IsNodeUnavailableError(const resp::Value& reply);

}  // namespace rl::client_internal

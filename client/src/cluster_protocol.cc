// Redis Cluster's slots, addresses and redirections: see cluster_protocol.h.
#include "cluster_protocol.h"

#include <array>
#include <charconv>

#include "absl/strings/str_cat.h"

namespace rl::client_internal {
namespace {

// The CRC16-XMODEM table, built at compile time (one byte at a time, MSB first).
constexpr std::array<uint16_t, 256> MakeCrcTable() {
  std::array<uint16_t, 256> table{};
  for (int byte = 0; byte < 256; ++byte) {
    uint16_t crc = static_cast<uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
    }
    table[byte] = crc;
  }
  return table;
}
constexpr std::array<uint16_t, 256> kCrcTable = MakeCrcTable();

bool ParseInt(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParsePort(std::string_view text, uint16_t* port) {
  int64_t value = 0;
  if (!ParseInt(text, &value) || value < 1 || value > 65535) return false;
  *port = static_cast<uint16_t>(value);
  return true;
}

bool IsText(const resp::Value& v) {
  return v.type == resp::Value::Type::kBulk || v.type == resp::Value::Type::kSimpleString ||
         v.type == resp::Value::Type::kVerbatim;
}

// The endpoint of one node entry of CLUSTER SLOTS: [host, port, (id), (metadata)].
absl::StatusOr<NodeAddress> ParseNodeEntry(const resp::Value& entry, std::string_view asked_host) {
  if (entry.type != resp::Value::Type::kArray || entry.elements.size() < 2) {
    return absl::InternalError("CLUSTER SLOTS: a node entry is not [host, port, ...]");
  }
  const resp::Value& host = entry.elements[0];
  const resp::Value& port = entry.elements[1];
  NodeAddress address;
  if (host.type == resp::Value::Type::kNull || (IsText(host) && host.text.empty()) ||
      (IsText(host) && host.text == "?")) {
    address.host = std::string(asked_host);  // "unknown endpoint": the node we asked
  } else if (IsText(host)) {
    address.host = host.text;
  } else {
    return absl::InternalError("CLUSTER SLOTS: a node's host is not a string");
  }
  if (port.type != resp::Value::Type::kInteger || port.integer < 1 || port.integer > 65535) {
    return absl::InternalError("CLUSTER SLOTS: a node's port is not in 1..65535");
  }
  address.port = static_cast<uint16_t>(port.integer);
  return address;
}

}  // namespace

uint16_t Crc16(std::string_view data) {
  uint16_t crc = 0;
  for (const char c : data) {
    crc = static_cast<uint16_t>((crc << 8) ^
                                kCrcTable[((crc >> 8) ^ static_cast<uint8_t>(c)) & 0xff]);
  }
  return crc;
}

int KeySlot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return Crc16(key) & (kClusterSlots - 1);
}

std::string NodeAddress::ToString() const {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<NodeAddress> ParseNodeAddress(std::string_view text) {
  const size_t colon = text.rfind(':');
  NodeAddress address;
  if (colon == std::string_view::npos || !ParsePort(text.substr(colon + 1), &address.port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad node address '", std::string(text), "' (want host:port)"));
  }
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad node address '", std::string(text), "' (no host)"));
  }
  address.host = std::string(host);
  return address;
}

absl::StatusOr<std::vector<SlotRange>> ParseClusterSlots(const resp::Value& reply,
                                                         std::string_view asked_host) {
  if (reply.type == resp::Value::Type::kError) {
    return absl::UnavailableError(absl::StrCat("CLUSTER SLOTS: ", reply.text));
  }
  if (reply.type != resp::Value::Type::kArray) {
    return absl::InternalError("CLUSTER SLOTS: the reply is not an array");
  }
  std::vector<SlotRange> ranges;
  ranges.reserve(reply.elements.size());
  for (const resp::Value& range : reply.elements) {
    // [first, last, master, replica...]
    if (range.type != resp::Value::Type::kArray || range.elements.size() < 3) {
      return absl::InternalError("CLUSTER SLOTS: a range is not [first, last, master, ...]");
    }
    const resp::Value& first = range.elements[0];
    const resp::Value& last = range.elements[1];
    if (first.type != resp::Value::Type::kInteger || last.type != resp::Value::Type::kInteger ||
        first.integer < 0 || last.integer < first.integer || last.integer >= kClusterSlots) {
      return absl::InternalError("CLUSTER SLOTS: a range is not within 0..16383");
    }
    absl::StatusOr<NodeAddress> master = ParseNodeEntry(range.elements[2], asked_host);
    if (!master.ok()) return master.status();
    ranges.push_back(SlotRange{static_cast<int>(first.integer), static_cast<int>(last.integer),
                               *std::move(master)});
  }
  return ranges;
}

std::optional<Redirect> ParseRedirect(const resp::Value& reply, std::string_view from_host) {
  if (reply.type != resp::Value::Type::kError) return std::nullopt;
  std::string_view text = reply.text;
  Redirect redirect;
  if (text.starts_with("MOVED ")) {
    redirect.kind = Redirect::Kind::kMoved;
    text.remove_prefix(6);
  } else if (text.starts_with("ASK ")) {
    redirect.kind = Redirect::Kind::kAsk;
    text.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const size_t space = text.find(' ');
  int64_t slot = 0;
  if (space == std::string_view::npos || !ParseInt(text.substr(0, space), &slot) || slot < 0 ||
      slot >= kClusterSlots) {
    return std::nullopt;
  }
  redirect.slot = static_cast<int>(slot);
  // "host:port", ":port" (unknown endpoint: the node that answered), IPv6 as "::1:7000".
  const std::string_view where = text.substr(space + 1);
  const size_t colon = where.rfind(':');
  if (colon == std::string_view::npos || !ParsePort(where.substr(colon + 1), &redirect.to.port)) {
    return std::nullopt;
  }
  std::string_view host = where.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  redirect.to.host = std::string(host.empty() || host == "?" ? from_host : host);
  if (redirect.to.host.empty()) return std::nullopt;
  return redirect;
}

bool IsNodeUnavailableError(const resp::Value& reply) {
  if (reply.type != resp::Value::Type::kError) return false;
  for (std::string_view code :
       {"CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN", "READONLY", "BUSY ", "NOREPLICAS"}) {
    if (std::string_view(reply.text).starts_with(code)) return true;
  }
  return false;
}

}  // namespace rl::client_internal

// The contract's replies, shaped once for every front end. A Sink is anything with resp::Writer's
// reply calls (protocol(), ArrayHeader, MapHeader, Integer, Bulk, Null, Error, SimpleString):
// rl-server passes its resp::Writer, rl.so an adapter over the module reply API. Templates, so
// the server's hot path pays no virtual call per reply element.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "rl/command/request.h"
#include "rl/decision.h"
#include "rl/headers.h"

namespace rl::command {

// An error reply from a Status: kFailedPrecondition messages carry their own Redis error code
// ("WRONGTYPE ...", "NOPERM ..."); every other message follows "ERR ". The sink replaces CR/LF.
template <class Sink>
void WriteError(Sink& w, const absl::Status& status) {
  const std::string_view msg(status.message().data(), status.message().size());
  if (status.code() == absl::StatusCode::kFailedPrecondition) {
    w.Error(msg);
    return;
  }
  std::string line = "ERR ";
  line.append(msg);
  w.Error(line);
}

// LIMITS: one entry per limit of the check, in the order the limits were given, each a map
// (RESP2: a flat name, value array) of name (as the header fields name it), allowed, limit,
// window_ms, remaining, retry_after_ms, reset_after_ms, binding (1 for the limit the five
// fields describe) and concurrency (1 for a CONCURRENCY limit, whose window_ms is a lease's ttl
// and whose RateLimit-Policy entry has no w). What a client needs to rebuild the whole Decision,
// header values included.
template <class Sink>
void WriteLimits(Sink& w, const Decision& d, const Request& r) {
  const size_t count = std::min<size_t>(d.count, d.limits.size());
  w.ArrayHeader(count);
  for (size_t i = 0; i < count; ++i) {
    const LimitResult& l = d.limits[i];
    w.MapHeader(9);
    w.Bulk("name");
    w.Bulk(HeaderEntryName(d, i, r.policy_name));
    w.Bulk("allowed");
    w.Integer(l.allowed ? 1 : 0);
    w.Bulk("limit");
    w.Integer(l.limit);
    w.Bulk("window_ms");
    w.Integer(l.window_ms);
    w.Bulk("remaining");
    w.Integer(l.remaining);
    w.Bulk("retry_after_ms");
    w.Integer(l.retry_after_ms);
    w.Bulk("reset_after_ms");
    w.Integer(l.reset_after_ms);
    w.Bulk("binding");
    w.Integer(i == d.binding ? 1 : 0);
    w.Bulk("concurrency");
    w.Integer((d.leases >> i & 1) != 0 ? 1 : 0);
  }
}

// RL.CHECK / RL.PEEK (and RL.REFUND / RL.CHARGE / RL.ACQUIRE): RESP2 an array of five integers
// (+ the headers as a flat array), RESP3 a map (allowed, limit, remaining, retry_after_ms,
// reset_after_ms[, headers][, lease][, limits][, shadow_denied]). `wall_now_ms` (Unix ms) dates
// X-RateLimit-Reset. With `lease` (RL.ACQUIRE) the lease id follows, a bulk string or nil when
// `*lease` is empty (RESP3: a "lease" field). With LIMITS (r.limits_detail) every limit's result
// comes last (WriteLimits; RESP3: a "limits" field).
template <class Sink>
void WriteDecision(Sink& w, const Decision& d, const Request& r, int64_t wall_now_ms,
                   const std::string* lease = nullptr) {
  const size_t fields =
      5 + (r.headers ? 1 : 0) + (lease != nullptr ? 1 : 0) + (r.limits_detail ? 1 : 0);
  // The common reply (RESP2, five integers) in one append when the sink can (rl-server's writer).
  if constexpr (requires(std::span<const int64_t> v) { w.IntegerArray(v); }) {
    if (fields == 5 && w.protocol() < 3) {
      const int64_t values[5] = {d.allowed ? 1 : 0, d.limit, d.remaining, d.retry_after_ms,
                                 d.reset_after_ms};
      w.IntegerArray(values);
      return;
    }
  }
  std::vector<HeaderField> headers;
  if (r.headers) headers = HeaderValues(d, r.policy_name, wall_now_ms);
  auto write_lease = [&] {
    if (lease->empty()) {
      w.Null();
    } else {
      w.Bulk(*lease);
    }
  };
  if (w.protocol() >= 3) {
    w.MapHeader(fields + (d.shadow_denied ? 1 : 0));
    w.Bulk("allowed");
    w.Integer(d.allowed ? 1 : 0);
    w.Bulk("limit");
    w.Integer(d.limit);
    w.Bulk("remaining");
    w.Integer(d.remaining);
    w.Bulk("retry_after_ms");
    w.Integer(d.retry_after_ms);
    w.Bulk("reset_after_ms");
    w.Integer(d.reset_after_ms);
    if (r.headers) w.Bulk("headers");
  } else {
    w.ArrayHeader(fields);
    w.Integer(d.allowed ? 1 : 0);
    w.Integer(d.limit);
    w.Integer(d.remaining);
    w.Integer(d.retry_after_ms);
    w.Integer(d.reset_after_ms);
  }
  if (r.headers) {
    w.MapHeader(headers.size());  // RESP2: a flat name, value array
    for (const HeaderField& h : headers) {
      w.Bulk(h.name);
      w.Bulk(h.value);
    }
  }
  if (lease != nullptr) {
    if (w.protocol() >= 3) w.Bulk("lease");
    write_lease();
  }
  if (r.limits_detail) {
    if (w.protocol() >= 3) w.Bulk("limits");
    WriteLimits(w, d, r);
  }
  if (d.shadow_denied && w.protocol() >= 3) {
    w.Bulk("shadow_denied");
    w.Integer(1);
  }
}

inline int64_t CeilSeconds(int64_t ms) { return ms <= 0 ? 0 : ms / 1000 + (ms % 1000 != 0); }

// CL.THROTTLE as redis-cell: [limited, limit, remaining, retry_after s (-1 when allowed),
// reset_after s], partial seconds rounded up.
template <class Sink>
void WriteThrottle(Sink& w, const Decision& d, const ThrottleRequest& t) {
  w.ArrayHeader(5);
  w.Integer(d.allowed ? 0 : 1);
  w.Integer(t.limit.capacity());
  w.Integer(d.remaining);
  w.Integer(d.allowed || d.retry_after_ms < 0 ? -1 : CeilSeconds(d.retry_after_ms));
  w.Integer(CeilSeconds(d.reset_after_ms));
}

}  // namespace rl::command

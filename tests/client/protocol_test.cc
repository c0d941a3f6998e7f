// RemoteLimiter's wire protocol without a socket: the exact commands for a policy in each mode
// (one policy name and key -> one server-side state; RL.ACQUIRE, RL.REFUND, RL.CHARGE, BLOCK and
// CONCURRENCY limits included, and RL.RELEASE), the HELLO 3 handshake, and replies (RESP3 maps
// with shadow_denied and lease ids, RESP2 arrays, errors, garbage) turned into Decisions, leases
// or Statuses.
#include "protocol.h"

#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "resp/reply_parser.h"
#include "resp/writer.h"
#include "rl/command/commands.h"
#include "rl/headers.h"
#include "rl/limit.h"
#include "rl/limiter.h"

namespace rl::client_internal {
namespace {

Policy MakePolicy(const std::string& name, const std::string& spec) {
  absl::StatusOr<Policy> policy = ParsePolicy(name, std::string_view(spec));
  EXPECT_TRUE(policy.ok()) << policy.status();
  return *policy;
}

// The RESP array of bulk strings for `args`, written out by hand (independent of resp::Writer).
std::string Multibulk(const std::vector<std::string>& args) {
  std::string out;
  out.append("*").append(std::to_string(args.size())).append("\r\n");
  for (const std::string& a : args) {
    out.append("$").append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
  }
  return out;
}

resp::Value Parse(std::string_view bytes) {
  resp::ReplyParser parser;
  resp::Value value;
  size_t consumed = 0;
  EXPECT_EQ(parser.Parse(bytes, &consumed, &value), resp::ReplyStatus::kValue) << parser.error();
  EXPECT_EQ(consumed, bytes.size());
  return value;
}

std::string Encode(std::string_view verb, PolicyMode mode, const Policy& policy,
                   std::string_view key, const int64_t* cost) {
  std::string out;
  absl::Status status = AppendPolicyCommand(verb, mode, policy, key, cost, &out);
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

TEST(ProtocolTest, InlineModeSendsThePolicyNameWithItsLimits) {
  // Not "<policy>:<key>" with bare limits (a state of its own): the policy's state, as
  // `RL.CHECK t1 POLICY api` and Limiter::Check(api, "t1") use.
  const Policy api = MakePolicy("api", "GCRA 2 1m TOKEN_BUCKET 10 1s BURST 20 SHADOW");
  const int64_t cost = 3;
  EXPECT_EQ(Encode("RL.CHECK", PolicyMode::kInline, api, "t1", &cost),
            Multibulk({"RL.CHECK", "t1", "POLICY", "api", "GCRA", "2", "1m", "TOKEN_BUCKET", "10",
                       "1s", "BURST", "20", "COST", "3", "LIMITS"}));
  EXPECT_EQ(Encode("RL.PEEK", PolicyMode::kInline, api, "t1", &cost),
            Multibulk({"RL.PEEK", "t1", "POLICY", "api", "GCRA", "2", "1m", "TOKEN_BUCKET", "10",
                       "1s", "BURST", "20", "COST", "3", "LIMITS"}));
  EXPECT_EQ(Encode("RL.RESET", PolicyMode::kInline, api, "t1", nullptr),
            Multibulk({"RL.RESET", "t1", "POLICY", "api", "GCRA", "2", "1m", "TOKEN_BUCKET", "10",
                       "1s", "BURST", "20"}));
}

TEST(ProtocolTest, ServerPolicyModeSendsTheNameOnly) {
  const Policy api = MakePolicy("api", "GCRA 2 1m");
  const int64_t cost = 1;
  EXPECT_EQ(Encode("RL.CHECK", PolicyMode::kServerPolicy, api, "t1", &cost),
            Multibulk({"RL.CHECK", "t1", "POLICY", "api", "COST", "1", "LIMITS"}));
  EXPECT_EQ(Encode("RL.RESET", PolicyMode::kServerPolicy, api, "t1", nullptr),
            Multibulk({"RL.RESET", "t1", "POLICY", "api"}));
  // The server's definition applies, so a name alone is enough.
  Policy name_only;
  name_only.name = "api";
  EXPECT_EQ(Encode("RL.CHECK", PolicyMode::kServerPolicy, name_only, "t1", &cost),
            Multibulk({"RL.CHECK", "t1", "POLICY", "api", "COST", "1", "LIMITS"}));
}

// Issue 16's commands take the same shapes: the policy's name with its limits (BLOCK and
// CONCURRENCY ... LEASE written canonically) or the name alone, and the amount as COST.
TEST(ProtocolTest, AcquireRefundChargeAndReleaseCommands) {
  const Policy exports = MakePolicy("exports", "CONCURRENCY 3 LEASE 10m FIXED_WINDOW 20 1h");
  const Policy login = MakePolicy("login", "FIXED_WINDOW 5 15m BLOCK 1h");
  const int64_t one = 1;
  const int64_t amount = 1400;
  EXPECT_EQ(Encode("RL.ACQUIRE", PolicyMode::kInline, exports, "tenant:7", &one),
            Multibulk({"RL.ACQUIRE", "tenant:7", "POLICY", "exports", "CONCURRENCY", "3", "LEASE",
                       "10m", "FIXED_WINDOW", "20", "1h", "COST", "1", "LIMITS"}));
  EXPECT_EQ(Encode("RL.ACQUIRE", PolicyMode::kServerPolicy, exports, "tenant:7", &one),
            Multibulk({"RL.ACQUIRE", "tenant:7", "POLICY", "exports", "COST", "1", "LIMITS"}));
  EXPECT_EQ(Encode("RL.CHECK", PolicyMode::kInline, login, "alice", &one),
            Multibulk({"RL.CHECK", "alice", "POLICY", "login", "FIXED_WINDOW", "5", "15m", "BLOCK",
                       "1h", "COST", "1"}));
  EXPECT_EQ(Encode("RL.REFUND", PolicyMode::kInline, login, "alice", &amount),
            Multibulk({"RL.REFUND", "alice", "POLICY", "login", "FIXED_WINDOW", "5", "15m", "BLOCK",
                       "1h", "COST", "1400"}));
  EXPECT_EQ(Encode("RL.CHARGE", PolicyMode::kServerPolicy, login, "alice", &amount),
            Multibulk({"RL.CHARGE", "alice", "POLICY", "login", "COST", "1400", "LIMITS"}));
  std::string out;
  AppendRelease("tenant:7", "62ddead909b5e64a3f1360a0d7920ca1a1dc7cd9", &out);
  EXPECT_EQ(out, Multibulk({"RL.RELEASE", "tenant:7", "62ddead909b5e64a3f1360a0d7920ca1a1dc7cd9"}));
}

TEST(ProtocolTest, AcquireRepliesCarryTheLeaseIdOrNil) {
  const Policy exports = MakePolicy("exports", "CONCURRENCY 3 LEASE 10m");
  const std::string id = "531673dddd042ee63f1360a0d7920ca18810856c";
  // RESP3: the "lease" field.
  absl::StatusOr<Acquired> a =
      ToAcquired(Parse("%6\r\n$7\r\nallowed\r\n:1\r\n$5\r\nlimit\r\n:3\r\n$9\r\nremaining\r\n:2\r\n"
                       "$14\r\nretry_after_ms\r\n:0\r\n$14\r\nreset_after_ms\r\n:600000\r\n"
                       "$5\r\nlease\r\n$40\r\n" +
                       id + "\r\n"),
                 exports);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->decision.allowed);
  EXPECT_EQ(a->decision.remaining, 2);
  EXPECT_EQ(a->lease_id, id);
  // Denied: nil (RESP3 null, RESP2 nil bulk), no lease.
  a = ToAcquired(Parse("%6\r\n$7\r\nallowed\r\n:0\r\n$5\r\nlimit\r\n:3\r\n$9\r\nremaining\r\n"
                       ":0\r\n$14\r\nretry_after_ms\r\n:599886\r\n$14\r\nreset_after_ms\r\n:599968"
                       "\r\n$5\r\nlease\r\n_\r\n"),
                 exports);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->decision.allowed);
  EXPECT_EQ(a->decision.retry_after_ms, 599886);
  EXPECT_TRUE(a->lease_id.empty());
  // RESP2: the sixth element.
  a = ToAcquired(Parse("*6\r\n:1\r\n:3\r\n:2\r\n:0\r\n:600000\r\n$40\r\n" + id + "\r\n"), exports);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->lease_id, id);
  a = ToAcquired(Parse("*6\r\n:0\r\n:3\r\n:0\r\n:5\r\n:600000\r\n$-1\r\n"), exports);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->lease_id.empty());
  // Errors stay the server's; a reply without the id, a malformed id, or a lease handed out
  // with a denial is a broken reply.
  EXPECT_TRUE(absl::IsInvalidArgument(
      ToAcquired(Parse("-ERR RL.ACQUIRE needs a CONCURRENCY limit\r\n"), exports).status()));
  for (const std::string& bad : std::vector<std::string>{
           std::string("*5\r\n:1\r\n:3\r\n:2\r\n:0\r\n:600000\r\n"),
           "*6\r\n:1\r\n:3\r\n:2\r\n:0\r\n:600000\r\n:7\r\n",
           "*6\r\n:1\r\n:3\r\n:2\r\n:0\r\n:600000\r\n$0\r\n\r\n",
           "*6\r\n:1\r\n:3\r\n:2\r\n:0\r\n:600000\r\n$3\r\na b\r\n",
           "*6\r\n:1\r\n:3\r\n:2\r\n:0\r\n:600000\r\n$129\r\n" + std::string(129, 'a') + "\r\n",
           "*6\r\n:0\r\n:3\r\n:0\r\n:5\r\n:600000\r\n$40\r\n" + id + "\r\n"}) {
    EXPECT_TRUE(absl::IsInternal(ToAcquired(Parse(bad), exports).status())) << bad;
  }
}

TEST(ProtocolTest, ReleaseRepliesAreOneOrZero) {
  absl::StatusOr<bool> held = ToReleased(Parse(":1\r\n"));
  ASSERT_TRUE(held.ok());
  EXPECT_TRUE(*held);
  held = ToReleased(Parse(":0\r\n"));
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(*held);
  EXPECT_TRUE(absl::IsInvalidArgument(
      ToReleased(Parse("-ERR lease id was issued for another key\r\n")).status()));
  EXPECT_TRUE(
      absl::IsPermissionDenied(ToReleased(Parse("-NOAUTH Authentication required.\r\n")).status()));
  for (const char* bad : {":2\r\n", ":-1\r\n", "+OK\r\n", "_\r\n"}) {
    EXPECT_TRUE(absl::IsInternal(ToReleased(Parse(bad)).status())) << bad;
  }
}

TEST(ProtocolTest, KeysAreBinarySafeAndInvalidRequestsWriteNothing) {
  const Policy api = MakePolicy("api", "GCRA 2 1m");
  const int64_t cost = 1;
  EXPECT_EQ(
      Encode("RL.CHECK", PolicyMode::kServerPolicy, api, std::string("a\r\n\0b", 5), &cost),
      Multibulk({"RL.CHECK", std::string("a\r\n\0b", 5), "POLICY", "api", "COST", "1", "LIMITS"}));
  std::string out;
  const int64_t negative = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(
      AppendPolicyCommand("RL.CHECK", PolicyMode::kInline, api, "k", &negative, &out)));
  Policy unnamed = api;
  unnamed.name = "has space";
  EXPECT_TRUE(absl::IsInvalidArgument(
      AppendPolicyCommand("RL.CHECK", PolicyMode::kServerPolicy, unnamed, "k", &cost, &out)));
  Policy empty;
  empty.name = "empty";
  EXPECT_TRUE(absl::IsInvalidArgument(
      AppendPolicyCommand("RL.CHECK", PolicyMode::kInline, empty, "k", &cost, &out)));
  EXPECT_EQ(out, "");
}

TEST(ProtocolTest, HelloNegotiatesResp3AndAuthenticates) {
  std::string out;
  AppendHello("", &out);
  EXPECT_EQ(out, Multibulk({"HELLO", "3"}));
  out.clear();
  AppendHello("s3cret", &out);
  EXPECT_EQ(out, Multibulk({"HELLO", "3", "AUTH", "default", "s3cret"}));

  EXPECT_TRUE(CheckHelloReply(Parse("%1\r\n$5\r\nproto\r\n:3\r\n")).ok());
  EXPECT_TRUE(absl::IsPermissionDenied(CheckHelloReply(Parse("-WRONGPASS invalid\r\n"))));
  EXPECT_TRUE(absl::IsPermissionDenied(CheckHelloReply(Parse("-NOAUTH HELLO must...\r\n"))));
  EXPECT_TRUE(absl::IsUnavailable(CheckHelloReply(Parse("-NOPROTO unsupported\r\n"))));
  EXPECT_TRUE(absl::IsUnavailable(CheckHelloReply(Parse("-ERR unknown command 'HELLO'\r\n"))));
  EXPECT_TRUE(absl::IsUnavailable(CheckHelloReply(Parse("+OK\r\n"))));
}

TEST(ProtocolTest, Resp3MapBecomesADecisionWithShadowDenied) {
  const Policy api = MakePolicy("api", "SLIDING_LOG 100 1h GCRA 2 1m");
  const resp::Value reply = Parse(
      "%6\r\n$7\r\nallowed\r\n:1\r\n$5\r\nlimit\r\n:2\r\n$9\r\nremaining\r\n:0\r\n"
      "$14\r\nretry_after_ms\r\n:0\r\n$14\r\nreset_after_ms\r\n:60000\r\n"
      "$13\r\nshadow_denied\r\n:1\r\n");
  absl::StatusOr<Decision> d = ToDecision(reply, api);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  EXPECT_TRUE(d->shadow_denied);
  EXPECT_EQ(d->decided_by, DecidedBy::kLimiter);
  EXPECT_EQ(d->limit, 2);
  EXPECT_EQ(d->reset_after_ms, 60000);
  EXPECT_EQ(d->count, 1);
  EXPECT_EQ(d->limits[0].window_ms, 60'000);  // the binding limit's window, found by its limit

  // Without the field (and with HEADERS' nested map in between) nothing was shadowed.
  d = ToDecision(Parse("%6\r\n$7\r\nallowed\r\n:0\r\n$5\r\nlimit\r\n:100\r\n$9\r\nremaining\r\n"
                       ":0\r\n$14\r\nretry_after_ms\r\n:1500\r\n$14\r\nreset_after_ms\r\n:9\r\n"
                       "$7\r\nheaders\r\n%1\r\n$11\r\nRetry-After\r\n$1\r\n2\r\n"),
                 api);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->allowed);
  EXPECT_FALSE(d->shadow_denied);
  EXPECT_EQ(d->retry_after_ms, 1500);
  EXPECT_EQ(d->limits[0].window_ms, 3'600'000);
}

TEST(ProtocolTest, Resp2ArrayIsReadByPosition) {
  const Policy api = MakePolicy("api", "GCRA 2 1m");
  absl::StatusOr<Decision> d =
      ToDecision(Parse("*5\r\n:0\r\n:2\r\n:0\r\n:30000\r\n:60000\r\n"), api);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->retry_after_ms, 30000);
  EXPECT_FALSE(d->shadow_denied);
}

TEST(ProtocolTest, ErrorsAndGarbageAreStatuses) {
  const Policy api = MakePolicy("api", "GCRA 2 1m");
  EXPECT_TRUE(
      absl::IsInvalidArgument(ToDecision(Parse("-ERR no such policy 'api'\r\n"), api).status()));
  EXPECT_TRUE(absl::IsPermissionDenied(
      ToDecision(Parse("-NOAUTH Authentication required.\r\n"), api).status()));
  for (const char* bad : {"+OK\r\n", "*2\r\n:1\r\n:2\r\n", "*5\r\n:1\r\n:2\r\n+x\r\n:0\r\n:0\r\n",
                          "%1\r\n$7\r\nallowed\r\n:1\r\n", "_\r\n"}) {
    EXPECT_TRUE(absl::IsInternal(ToDecision(Parse(bad), api).status())) << bad;
  }
}

// LIMITS: the server's reply (the contract's writer over a Limiter, as rl-server runs it) read
// back into a Decision equal to the one an in-process Limiter gives for the same calls, so the
// header values are equal too: every limit's entry, not only the binding one.
TEST(ProtocolTest, LimitsReplyRebuildsTheLocalDecision) {
  for (const std::string spec :
       {"SLIDING_WINDOW 3 1m FIXED_WINDOW 20 1h", "TOKEN_BUCKET 4 1m BURST 3 SLIDING_LOG 2 1m",
        "GCRA 2 1s LEAKY_BUCKET 5 1h", "FIXED_WINDOW 3 1m"}) {
    SCOPED_TRACE(spec);
    const Policy reports = MakePolicy("reports", spec);
    ManualClock clock(1000);
    LimiterOptions options;
    options.clock = &clock;
    Limiter local(options), server(options);
    command::LimiterEngine engine(server);
    std::vector<std::string> args{"RL.CHECK", "k", "POLICY", "reports"};
    const std::string limits = FormatPolicy(reports);
    for (std::string_view token : SplitSpec(limits)) args.emplace_back(token);
    args.emplace_back("LIMITS");
    const std::vector<std::string_view> views(args.begin(), args.end());
    for (int call = 0; call < 5; ++call) {
      absl::StatusOr<Decision> want = local.Check(reports, "k");
      ASSERT_TRUE(want.ok()) << want.status();
      std::string bytes;
      resp::Writer w(&bytes, 3);
      command::RunCheck(engine, w, command::Verb::kCheck, absl::MakeConstSpan(views), nullptr);
      absl::StatusOr<Decision> got = ToDecision(Parse(bytes), reports);
      ASSERT_TRUE(got.ok()) << got.status() << " " << bytes;
      EXPECT_EQ(got->allowed, want->allowed);
      ASSERT_EQ(got->count, want->count);
      EXPECT_EQ(got->binding, want->binding);
      for (size_t i = 0; i < want->count; ++i) {
        const LimitResult& g = got->limits[i];
        const LimitResult& l = want->limits[i];
        EXPECT_EQ(std::tie(g.allowed, g.limit, g.window_ms, g.remaining, g.retry_after_ms,
                           g.reset_after_ms),
                  std::tie(l.allowed, l.limit, l.window_ms, l.remaining, l.retry_after_ms,
                           l.reset_after_ms))
            << "call " << call << ", limit " << i;
      }
      std::vector<HeaderField> gh = HeaderValues(*got, "reports", clock.WallMs());
      std::vector<HeaderField> wh = HeaderValues(*want, "reports", clock.WallMs());
      ASSERT_EQ(gh.size(), wh.size());
      for (size_t i = 0; i < wh.size(); ++i) {
        EXPECT_EQ(gh[i].name, wh[i].name);
        EXPECT_EQ(gh[i].value, wh[i].value) << gh[i].name;
      }
      clock.Advance(700);
    }
  }
  // The issue's two-limit policy: one RateLimit-Policy entry per limit, remotely too.
  const resp::Value reply = Parse(
      "%6\r\n$7\r\nallowed\r\n:1\r\n$5\r\nlimit\r\n:3\r\n$9\r\nremaining\r\n:2\r\n"
      "$14\r\nretry_after_ms\r\n:0\r\n$14\r\nreset_after_ms\r\n:60000\r\n$6\r\nlimits\r\n*2\r\n"
      "%8\r\n$4\r\nname\r\n$10\r\nreports-1m\r\n$7\r\nallowed\r\n:1\r\n$5\r\nlimit\r\n:3\r\n"
      "$9\r\nwindow_ms\r\n:60000\r\n$9\r\nremaining\r\n:2\r\n$14\r\nretry_after_ms\r\n:0\r\n"
      "$14\r\nreset_after_ms\r\n:60000\r\n$7\r\nbinding\r\n:1\r\n"
      "%8\r\n$4\r\nname\r\n$10\r\nreports-1h\r\n$7\r\nallowed\r\n:1\r\n$5\r\nlimit\r\n:20\r\n"
      "$9\r\nwindow_ms\r\n:3600000\r\n$9\r\nremaining\r\n:19\r\n$14\r\nretry_after_ms\r\n:0\r\n"
      "$14\r\nreset_after_ms\r\n:3600000\r\n$7\r\nbinding\r\n:0\r\n");
  absl::StatusOr<Decision> d = ToDecision(reply, Policy{});
  ASSERT_TRUE(d.ok()) << d.status();
  const std::vector<HeaderField> headers = HeaderValues(*d, "reports", 0);
  ASSERT_GE(headers.size(), 5u);
  EXPECT_EQ(headers[3].value, R"("reports-1m";q=3;w=60, "reports-1h";q=20;w=3600)");
  EXPECT_EQ(headers[4].value, R"("reports-1m";r=2;t=60)");
  // A broken entry is a broken reply, not a guess.
  EXPECT_TRUE(absl::IsInternal(
      ToDecision(Parse("%6\r\n$7\r\nallowed\r\n:1\r\n$5\r\nlimit\r\n:3\r\n$9\r\nremaining\r\n:2\r\n"
                       "$14\r\nretry_after_ms\r\n:0\r\n$14\r\nreset_after_ms\r\n:6\r\n"
                       "$6\r\nlimits\r\n*1\r\n%1\r\n$5\r\nlimit\r\n:3\r\n"),
                 Policy{})
          .status()));
}

// One text per mistake: what the server answers arrives without the protocol's "ERR " code, and
// what the server would refuse is refused before sending with the text the in-process Limiter
// gives, so an invalid hand-built policy is an error, never a FailureMode decision.
TEST(ProtocolTest, ErrorsAreTheLocalLimitersTexts) {
  const absl::Status server =
      ErrorStatus(Parse("-ERR limit must be between 1 and 1099511627776\r\n"));
  EXPECT_TRUE(absl::IsInvalidArgument(server));
  EXPECT_EQ(server.message(), "limit must be between 1 and 1099511627776");
  EXPECT_EQ(ErrorStatus(Parse("-WRONGTYPE Operation against a key\r\n")).message(),
            "WRONGTYPE Operation against a key");

  Limiter local;
  Policy bad = MakePolicy("api", "GCRA 2 1m");
  bad.limits[0].limit = 0;
  const absl::Status want = local.Check(bad, "k").status();
  ASSERT_FALSE(want.ok());
  const int64_t one = 1;
  std::string out;
  EXPECT_EQ(AppendPolicyCommand("RL.CHECK", PolicyMode::kInline, bad, "k", &one, &out), want);
  EXPECT_EQ(out, "");
  const Policy exports = MakePolicy("exports", "CONCURRENCY 3 LEASE 10m");
  EXPECT_EQ(AppendPolicyCommand("RL.CHECK", PolicyMode::kInline, exports, "k", &one, &out),
            local.Check(exports, "k").status());
  const Policy api = MakePolicy("api", "GCRA 2 1m");
  EXPECT_EQ(AppendPolicyCommand("RL.ACQUIRE", PolicyMode::kInline, api, "k", &one, &out),
            local.Acquire(api, "k").status());
  EXPECT_EQ(AppendPolicyCommand("RL.CHARGE", PolicyMode::kInline, exports, "k", &one, &out),
            local.Charge(exports, "k", 1).status());
  // Server-policy mode: the server's definition decides the limits, but a bad cost or amount is
  // the same mistake with the same text.
  const int64_t negative = -1;
  const int64_t too_much = (int64_t{1} << 40) + 1;
  EXPECT_EQ(AppendPolicyCommand("RL.CHECK", PolicyMode::kServerPolicy, api, "k", &negative, &out),
            local.Check(api, "k", -1).status());
  EXPECT_EQ(AppendPolicyCommand("RL.REFUND", PolicyMode::kServerPolicy, api, "k", &negative, &out),
            local.Refund(api, "k", -1).status());
  EXPECT_EQ(AppendPolicyCommand("RL.CHARGE", PolicyMode::kServerPolicy, api, "k", &too_much, &out),
            local.Charge(api, "k", too_much).status());
  EXPECT_EQ(AppendPolicyCommand("RL.ACQUIRE", PolicyMode::kServerPolicy, api, "k", &negative, &out),
            local.Acquire(exports, "k", -1).status());
  // C++ callers are told the C++ calls (and the commands, for the same mistake sent over RESP).
  EXPECT_NE(local.Check(exports, "k").status().message().find("Acquire"), std::string::npos);
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace rl::client_internal

// rl-server from Node.js with ioredis 6, including the outage path.
//
//     RL_PORT=6380 node ioredis.mjs CLIENT ROUTE...        e.g.  alice search login
//
// Each ROUTE is checked once for CLIENT and printed as an HTTP status:
//     search 200 remaining=1 | search 429 retry-after=30 | search 200 limiter=down | login 503 ...
// A limiter that cannot be reached (refused, reset, no reply within RL_TIMEOUT_MS, wrong
// password) is not the client's fault: a fail-open route lets the request through without
// rate-limit headers, a fail-closed one answers 503 with a short Retry-After. An error *reply* (a
// bad limit, an unknown policy) is a bug in the request and is thrown, not hidden behind the
// failure mode.
//
// ioredis 6 speaks RESP3 (HELLO 3) by default and, unless `replyMapping: "resp3"`, hands a map
// over as a flat [name, value, ...] array: RL.CHECK's reply is ["allowed", 1, "limit", 2, ...],
// not [1, 2, ...]. decisionOf() reads every shape.
import Redis from "ioredis";

// route -> what RL.CHECK checks, fail open? ["POLICY", "api"] names a policy of rl.toml instead.
const ROUTES = {
  search: { limits: ["TOKEN_BUCKET", "2", "1m"], failOpen: true },
  login: { limits: ["SLIDING_LOG", "2", "1m"], failOpen: false },
};

const timeoutMs = Number(process.env.RL_TIMEOUT_MS ?? 50);
const redis = new Redis({
  host: process.env.RL_HOST ?? "127.0.0.1",
  port: Number(process.env.RL_PORT ?? 6380),
  password: process.env.RL_PASSWORD,
  connectTimeout: timeoutMs,
  commandTimeout: timeoutMs, // a check never waits longer than this
  enableOfflineQueue: false, // while the limiter is down, fail at once instead of queueing
  maxRetriesPerRequest: 0,
  // Reconnects in the background forever (the default strategy, 50 ms steps up to 2 s).
});
redis.on("error", () => {}); // reported by rateLimit(), once per outage

// { allowed, headers } from a RESP3 map (object or flat pairs) or a RESP2 array.
function decisionOf(reply) {
  const pairs = (flat) => Object.fromEntries(flat.flatMap((v, i) => (i % 2 ? [] : [[v, flat[i + 1]]])));
  if (!Array.isArray(reply)) return { allowed: reply.allowed, headers: reply.headers ?? {} };
  if (typeof reply[0] === "string") {
    const map = pairs(reply);
    return { allowed: map.allowed, headers: Array.isArray(map.headers) ? pairs(map.headers) : map.headers ?? {} };
  }
  return { allowed: reply[0], headers: reply[5] ? pairs(reply[5]) : {} };
}

let limiterDown = false; // log once per outage, not once per request

// Returns { status, headers to copy onto the response, down: decided by the failure mode }.
export async function rateLimit(route, client) {
  const { limits, failOpen } = ROUTES[route];
  let reply;
  try {
    reply = await redis.call("RL.CHECK", `${route}:${client}`, ...limits, "HEADERS");
  } catch (err) {
    if (err instanceof Redis.ReplyError) throw err; // the request is wrong, not the limiter down
    if (!limiterDown) {
      console.error(`rate limiter unreachable (${err.message}): fail-open routes allow, fail-closed routes answer 503`);
      limiterDown = true;
    }
    return failOpen ? { status: 200, headers: {}, down: true } : { status: 503, headers: { "Retry-After": "1" }, down: true };
  }
  if (limiterDown) {
    console.error("rate limiter reachable again");
    limiterDown = false;
  }
  const { allowed, headers } = decisionOf(reply);
  return { status: allowed ? 200 : 429, headers, down: false };
}

// At startup, give the first connection a moment; a limiter that is down does not stop the
// service from starting (its routes apply their failure mode until it is back).
await Promise.race([
  new Promise((resolve) => redis.once("ready", resolve)),
  // unref: the timer must not keep the process alive once the work is done.
  new Promise((resolve) => setTimeout(resolve, Number(process.env.RL_STARTUP_WAIT_MS ?? 1000)).unref()),
]);
const [client, ...routes] = process.argv.slice(2);
for (const route of routes) {
  const { status, headers, down } = await rateLimit(route, client);
  let line = `${route} ${status}`;
  if (headers["Retry-After"]) line += ` retry-after=${headers["Retry-After"]}`;
  else if (headers["X-RateLimit-Remaining"]) line += ` remaining=${headers["X-RateLimit-Remaining"]}`;
  console.log(line + (down ? " limiter=down" : ""));
}
redis.disconnect();

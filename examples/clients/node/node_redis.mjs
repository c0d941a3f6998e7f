// rl-server from Node.js with node-redis 6 (the `redis` package), including the outage path.
//
//     RL_PORT=6380 node node_redis.mjs CLIENT ROUTE...     e.g.  alice search login
//
// Each ROUTE is checked once for CLIENT and printed as an HTTP status:
//     search 200 remaining=1 | search 429 retry-after=30 | search 200 limiter=down | login 503 ...
// A limiter that cannot be reached (refused, reset, no reply within RL_TIMEOUT_MS, wrong
// password) is not the client's fault: a fail-open route lets the request through without
// rate-limit headers, a fail-closed one answers 503 with a short Retry-After. An error *reply* (a
// bad limit, an unknown policy) is a bug in the request and is thrown, not hidden behind the
// failure mode.
//
// node-redis 6 speaks RESP3 (HELLO 3) by default: RL.CHECK's reply is an object
// { allowed, limit, remaining, retry_after_ms, reset_after_ms, headers: { name: value } },
// not an array. With `RESP: 2` it is the RESP2 array; decisionOf() reads both.
import { createClient, ErrorReply } from "redis";

// route -> what RL.CHECK checks, fail open? ["POLICY", "api"] names a policy of rl.toml instead.
const ROUTES = {
  search: { limits: ["TOKEN_BUCKET", "2", "1m"], failOpen: true },
  login: { limits: ["SLIDING_LOG", "2", "1m"], failOpen: false },
};

const timeoutMs = Number(process.env.RL_TIMEOUT_MS ?? 50);
const redis = createClient({
  socket: {
    host: process.env.RL_HOST ?? "127.0.0.1",
    port: Number(process.env.RL_PORT ?? 6380),
    connectTimeout: timeoutMs,
    reconnectStrategy: (retries) => Math.min(50 * 2 ** retries, 2000), // forever, in the background
  },
  password: process.env.RL_PASSWORD,
  disableOfflineQueue: true, // while the limiter is down, fail at once instead of queueing
});
redis.on("error", () => {}); // required (an unhandled 'error' ends the process); see rateLimit()
// connect() settles only once connected: never await it without a bound.
const connected = redis.connect().catch(() => {});

// { allowed, headers } from the RESP3 object or the RESP2 array.
function decisionOf(reply) {
  if (!Array.isArray(reply)) return { allowed: reply.allowed, headers: reply.headers ?? {} };
  const flat = reply[5] ?? [];
  const headers = Object.fromEntries(flat.flatMap((v, i) => (i % 2 ? [] : [[v, flat[i + 1]]])));
  return { allowed: reply[0], headers };
}

let limiterDown = false; // log once per outage, not once per request

// Returns { status, headers to copy onto the response, down: decided by the failure mode }.
export async function rateLimit(route, client) {
  const { limits, failOpen } = ROUTES[route];
  let reply;
  try {
    reply = await redis.sendCommand(["RL.CHECK", `${route}:${client}`, ...limits, "HEADERS"], {
      timeout: timeoutMs,
    });
  } catch (err) {
    if (err instanceof ErrorReply) throw err; // the request is wrong, not the limiter down
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
  connected,
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
redis.destroy();

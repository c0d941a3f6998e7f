// rl for express-rate-limit: a Store whose every decision is one RL.CHECK on rl-server or on Redis
// with rl.so (atomic on the server), and a wrapper that puts the server's header values on the
// response (RL.CHECK ... HEADERS) instead of values express-rate-limit derives itself.
//
// express-rate-limit decides `totalHits > limit` itself and builds its headers from `totalHits`
// and `resetTime`. The store answers with the hits the window would hold with this request (above
// the limit exactly when rl denied; nothing is consumed then), and with `resetTime` at the
// server's X-RateLimit-Reset, so express-rate-limit's own comparison repeats rl's decision.
// The client is any Redis client through `sendCommand(...args)`: ioredis (`client.call(...)`) or
// node-redis (`client.sendCommand(args)`), RESP2 or RESP3 replies.

const ALGORITHMS = new Set(["SLIDING_LOG", "FIXED_WINDOW"]);

// A RESP3 map as ioredis 6 hands it over by default (flat name, value, ...), a Map, or an object.
function fields(reply) {
  if (reply instanceof Map) return Object.fromEntries(reply);
  if (Array.isArray(reply)) {
    const out = {};
    for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = reply[i + 1];
    return out;
  }
  return reply ?? {};
}

/** One RL.CHECK / RL.PEEK / RL.REFUND reply (docs/replies.md) as the server computed it. */
export function parseDecision(reply) {
  let f;
  if (Array.isArray(reply) && typeof reply[0] === "number") {
    const [allowed, limit, remaining, retryAfterMs, resetAfterMs, headers] = reply;
    f = { allowed, limit, remaining, retry_after_ms: retryAfterMs, reset_after_ms: resetAfterMs };
    f.headers = headers;
  } else {
    f = fields(reply);
  }
  return {
    allowed: Number(f.allowed) === 1,
    limit: Number(f.limit),
    remaining: Number(f.remaining),
    retryAfterMs: Number(f.retry_after_ms),
    resetAfterMs: Number(f.reset_after_ms),
    // [name, value] pairs in the server's order, ready to copy onto a response.
    headers: Object.entries(fields(f.headers)).map(([n, v]) => [n, String(v)]),
  };
}

export class RlStore {
  /**
   * @param {object} o
   * @param {(...args: string[]) => Promise<any>} o.sendCommand  runs one command on the client
   * @param {"SLIDING_LOG"|"FIXED_WINDOW"} [o.algorithm]  SLIDING_LOG (default): exact, no trailing
   *   window holds more than the limit; FIXED_WINDOW: express-rate-limit's own window, which starts
   *   at the first hit
   * @param {string} [o.prefix]  put before every key ("erl:" by default)
   * @param {number} [o.limit]  the limit, when express-rate-limit's `limit` is a function
   */
  constructor({ sendCommand, algorithm = "SLIDING_LOG", prefix = "erl:", limit } = {}) {
    if (typeof sendCommand !== "function") throw new TypeError("RlStore needs sendCommand");
    if (!ALGORITHMS.has(algorithm)) throw new TypeError(`RlStore: no algorithm ${algorithm}`);
    this.sendCommand = sendCommand;
    this.algorithm = algorithm;
    this.prefix = prefix;
    this.limit = limit;
    this.localKeys = false;
  }

  init(options) {
    this.windowMs = options.windowMs;
    if (this.limit === undefined) this.limit = options.limit;
    // rl decides with the limit, so it has to be known here, not per request.
    if (!Number.isInteger(this.limit)) {
      throw new TypeError("RlStore needs a numeric limit (pass `limit` to RlStore)");
    }
  }

  async run(command, key, ...rest) {
    const args = [command, this.prefix + key, this.algorithm, String(this.limit)];
    const reply = await this.sendCommand(...args, `${this.windowMs}ms`, ...rest);
    return parseDecision(reply);
  }

  info(d, cost) {
    const reset = d.headers.find(([n]) => n === "X-RateLimit-Reset");
    const resetTime = new Date(reset ? Number(reset[1]) * 1000 : Date.now() + d.resetAfterMs);
    // The whole decision rides along for rateLimitWithServerHeaders (one per request, no map).
    Object.defineProperty(resetTime, "rl", { value: d });
    return { totalHits: d.limit - d.remaining + (d.allowed ? 0 : cost), resetTime };
  }

  async increment(key) {
    return this.info(await this.run("RL.CHECK", key, "COST", "1", "HEADERS"), 1);
  }

  async get(key) {
    const d = await this.run("RL.PEEK", key, "COST", "0", "HEADERS");
    return this.info(d, 0);
  }

  async decrement(key) {
    await this.run("RL.REFUND", key, "COST", "1");
  }

  async resetKey(key) {
    const args = ["RL.RESET", this.prefix + key, this.algorithm, String(this.limit)];
    await this.sendCommand(...args, `${this.windowMs}ms`);
  }
}

function copyServerHeaders(request, response, property) {
  const d = request[property]?.resetTime?.rl;
  if (!d || response.headersSent) return;
  for (const [name, value] of d.headers) response.setHeader(name, value);
}

/**
 * express-rate-limit's `rateLimit(options)` with `options.store` an RlStore, answering with the
 * header values rl computed for this request: X-RateLimit-Limit, X-RateLimit-Remaining,
 * X-RateLimit-Reset, RateLimit-Policy, RateLimit, and Retry-After when denied. express-rate-limit's
 * own headers are turned off; the 429 is its handler's (or yours).
 */
export function rateLimitWithServerHeaders(rateLimit, options) {
  if (!(options.store instanceof RlStore)) throw new TypeError("options.store must be an RlStore");
  // With these express-rate-limit copies resetTime, and the decision with it is lost.
  if (options.skipFailedRequests || options.skipSuccessfulRequests) {
    throw new TypeError("server headers need skipFailedRequests / skipSuccessfulRequests off");
  }
  const property = options.requestPropertyName ?? "rateLimit";
  const handler = options.handler;
  const limiter = rateLimit({
    ...options,
    legacyHeaders: false,
    standardHeaders: false,
    async handler(request, response, next, used) {
      copyServerHeaders(request, response, property);
      if (handler) return handler(request, response, next, used);
      // express-rate-limit's default handler.
      response.status(used.statusCode);
      const { message } = used;
      const body = typeof message === "function" ? await message(request, response) : message;
      if (!response.writableEnded) response.send(body);
    },
  });
  const middleware = (request, response, next) =>
    limiter(request, response, (error) => {
      if (!error) copyServerHeaders(request, response, property);
      next(error);
    });
  middleware.resetKey = limiter.resetKey;
  middleware.getKey = limiter.getKey;
  return middleware;
}

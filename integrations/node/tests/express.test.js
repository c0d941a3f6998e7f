// express-rate-limit with the rl store in an Express app, requests over real HTTP, against the
// server in RL_HOST / RL_PORT (rl-server or Redis with rl.so; integrations/with_servers.sh starts
// both), through ioredis 6 and node-redis 6 (both RESP3 by default). Checks limits, 429s, header
// values, refunds, resets, and that the decisions are rl's (its state holds them).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, test } from "node:test";

import express from "express";
import { rateLimit } from "express-rate-limit";
import Redis from "ioredis";
import { createClient } from "redis";

import { RlStore, rateLimitWithServerHeaders } from "../index.js";

const host = process.env.RL_HOST ?? "127.0.0.1";
const port = Number(process.env.RL_PORT);

const ioredis = new Redis({ host, port, commandTimeout: 5000 });
const nodeRedis = await createClient({ socket: { host, port } }).connect();
const clients = {
  ioredis: (...args) => ioredis.call(...args),
  "node-redis": (...args) => nodeRedis.sendCommand(args),
};
after(() => {
  ioredis.disconnect();
  nodeRedis.destroy();
});

// An app on a free port with `limiter` on GET /r (and /fail, which answers 500).
async function serve(limiter) {
  const app = express();
  app.get("/r", limiter, (_req, res) => res.send("ok"));
  app.get("/fail", limiter, (_req, res) => res.status(500).send("failed"));
  const server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  after(() => server.close());
  const base = `http://127.0.0.1:${server.address().port}`;
  return (path = "/r", who = "alice") => fetch(base + path, { headers: { "x-client": who } });
}

const options = (store, extra = {}) => ({
  windowMs: 60_000,
  limit: 3,
  store,
  keyGenerator: (req) => req.get("x-client"),
  ...extra,
});

for (const [name, sendCommand] of Object.entries(clients)) {
  describe(`through ${name}`, () => {
    for (const algorithm of ["SLIDING_LOG", "FIXED_WINDOW"]) {
      test(`${algorithm}: server headers, 429, another client`, async () => {
        const prefix = `${randomUUID()}:`;
        const store = new RlStore({ sendCommand, algorithm, prefix });
        const get = await serve(rateLimitWithServerHeaders(rateLimit, options(store)));
        const got = [];
        for (let i = 0; i < 4; i++) got.push(await get());
        assert.deepEqual(got.map((r) => r.status), [200, 200, 200, 429]);
        const h = (r, n) => r.headers.get(n);
        assert.deepEqual(got.map((r) => h(r, "x-ratelimit-remaining")), ["2", "1", "0", "0"]);
        for (const r of got) {
          assert.equal(h(r, "x-ratelimit-limit"), "3");
          assert.equal(h(r, "ratelimit-policy"), '"default";q=3;w=60');
        }
        // Retry-After only on the denial, as the server sent it; RateLimit's t is the same.
        assert.equal(h(got[0], "retry-after"), null);
        const retry = Number(h(got[3], "retry-after"));
        assert.ok(retry >= 55 && retry <= 60, `retry-after ${retry}`);
        assert.equal(h(got[3], "ratelimit"), `"default";r=0;t=${retry}`);
        assert.equal(await got[3].text(), "Too many requests, please try again later.");
        const other = await get("/r", "bob");
        assert.equal(other.status, 200);
        assert.equal(h(other, "x-ratelimit-remaining"), "2");
        // The state is rl's: peeked on the server, alice has nothing left.
        const reply = await ioredis.call("RL.PEEK", `${prefix}alice`, algorithm, "3", "60000ms", "COST", "0");
        assert.equal(reply[reply.indexOf("remaining") + 1], 0);
      });
    }

    test("express-rate-limit's own headers from the store's values", async () => {
      const store = new RlStore({ sendCommand, prefix: `${randomUUID()}:` });
      const get = await serve(rateLimit(options(store, { legacyHeaders: true })));
      const got = [];
      for (let i = 0; i < 4; i++) got.push(await get());
      assert.deepEqual(got.map((r) => r.status), [200, 200, 200, 429]);
      assert.deepEqual(got.map((r) => r.headers.get("x-ratelimit-remaining")), ["2", "1", "0", "0"]);
      // The reset is the server's X-RateLimit-Reset (whole seconds, rounded up).
      const reset = Number(got[0].headers.get("x-ratelimit-reset"));
      assert.ok(Math.abs(reset - (Date.now() / 1000 + 60)) < 10, `reset ${reset}`);
    });

    test("skipFailedRequests gives the hit back (RL.REFUND); resetKey clears (RL.RESET)", async () => {
      const store = new RlStore({ sendCommand, prefix: `${randomUUID()}:` });
      const limiter = rateLimit(options(store, { skipFailedRequests: true }));
      const get = await serve(limiter);
      for (let i = 0; i < 5; i++) assert.equal((await get("/fail")).status, 500);
      // Refunds run after the response is sent: wait until all five have come back.
      for (let i = 0; i < 200 && (await store.get("alice")).totalHits > 0; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.equal((await store.get("alice")).totalHits, 0);
      const codes = [];
      for (let i = 0; i < 4; i++) codes.push((await get()).status);
      assert.deepEqual(codes, [200, 200, 200, 429]);
      await limiter.resetKey("alice");
      assert.equal((await get()).status, 200);
    });

    test("limit 5, 8 parallel requests: exactly 5 pass", async () => {
      const store = new RlStore({ sendCommand, prefix: `${randomUUID()}:` });
      const get = await serve(rateLimitWithServerHeaders(rateLimit, options(store, { limit: 5 })));
      const codes = (await Promise.all(Array.from({ length: 8 }, () => get()))).map((r) => r.status);
      assert.deepEqual(codes.sort(), [200, 200, 200, 200, 200, 429, 429, 429]);
    });
  });
}

test("a function limit needs the store's own limit", () => {
  const store = new RlStore({ sendCommand: clients.ioredis });
  assert.throws(() => store.init({ windowMs: 1000, limit: () => 3 }), /numeric limit/);
});

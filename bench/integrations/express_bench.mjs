// express-rate-limit side by side: rate-limit-redis (its Redis store) vs the rl store
// (integrations/node).
//
//     node express_bench.mjs STORE PORT WORKERS SECONDS SCENARIO LIMIT [KEYS]
//
// STORE: "redis" (rate-limit-redis, express-rate-limit's own headers), "rl-fixed" or "rl-sliding"
// (RlStore FIXED_WINDOW / SLIDING_LOG with rateLimitWithServerHeaders). WORKERS processes each
// run an Express app (LIMIT per hour, so no window ends during the run) and request it over HTTP
// with 4 requests in flight for SECONDS: SCENARIO "hot" as one client, "many" spread over KEYS
// clients. Prints one JSON line: decisions per second, requests admitted beyond the limit and the
// commands sent per decision.
import { fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const nodeDir = path.join(here, "..", "..", "integrations", "node");
// The packages are the adapter's (tools/setup installs them there).
const require = createRequire(path.join(nodeDir, "package.json"));
const [storeKind, port, workers, seconds, scenario, limit, keysArg] = process.argv.slice(2);
const keys = scenario === "many" ? Number(keysArg) : 1;
const IN_FLIGHT = 4;

async function worker(prefix) {
  const express = require("express");
  const { rateLimit } = require("express-rate-limit");
  const Redis = require("ioredis");
  const { RlStore, rateLimitWithServerHeaders } = await import(path.join(nodeDir, "index.js"));
  const client = new Redis({ host: "127.0.0.1", port: Number(port), commandTimeout: 5000 });
  // Every command either store sends goes through here: counted, each a round trip.
  let sent = 0;
  const sendCommand = (...args) => {
    sent++;
    return client.call(...args);
  };
  const options = {
    windowMs: 3_600_000,
    limit: Number(limit),
    keyGenerator: (req) => req.get("x-client"),
  };
  let limiter;
  if (storeKind === "redis") {
    const { RedisStore } = require("rate-limit-redis");
    const store = new RedisStore({ sendCommand, prefix });
    limiter = rateLimit({ ...options, store, standardHeaders: "draft-7", legacyHeaders: true });
  } else {
    const algorithm = storeKind === "rl-fixed" ? "FIXED_WINDOW" : "SLIDING_LOG";
    const store = new RlStore({ sendCommand, algorithm, prefix });
    limiter = rateLimitWithServerHeaders(rateLimit, { ...options, store });
  }
  const app = express();
  app.get("/r", limiter, (_req, res) => res.send("ok"));
  const server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  // node:http with keep-alive: fetch costs several times more per request on this side.
  const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  const get = (who) => new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port: server.address().port, path: "/r", agent,
      headers: { "x-client": who } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode));
    });
    req.on("error", reject);
  });
  process.send({ ready: true });
  await new Promise((resolve) => process.once("message", resolve));
  sent = 0;
  const admitted = {};
  let requests = 0;
  const deadline = Date.now() + Number(seconds) * 1000;
  const loop = async () => {
    while (Date.now() < deadline) {
      const who = `c${Math.floor(Math.random() * keys)}`;
      const status = await get(who);
      requests++;
      if (status === 200) admitted[who] = (admitted[who] ?? 0) + 1;
      else if (status !== 429) throw new Error(`status ${status}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, loop));
  process.send({ requests, admitted, sent });
  agent.destroy();
  server.close();
  client.disconnect();
}

async function main() {
  const prefix = `${randomUUID()}:`; // a fresh state per run
  const children = Array.from({ length: Number(workers) }, () =>
    fork(fileURLToPath(import.meta.url), process.argv.slice(2), { env: { ...process.env, BENCH_PREFIX: prefix } }));
  const next = (c) => new Promise((resolve, reject) => {
    c.once("message", resolve);
    c.once("exit", (code) => reject(new Error(`worker exited ${code}`)));
  });
  await Promise.all(children.map(next));
  const t0 = performance.now();
  const done = children.map(next);
  for (const c of children) c.send("go");
  const results = await Promise.all(done);
  const elapsed = (performance.now() - t0) / 1000;
  const perKey = {};
  for (const { admitted } of results) {
    for (const [k, n] of Object.entries(admitted)) perKey[k] = (perKey[k] ?? 0) + n;
  }
  const total = results.reduce((a, r) => a + r.requests, 0);
  const counts = Object.values(perKey);
  console.log(JSON.stringify({
    store: storeKind, scenario, workers: Number(workers), requests: total,
    decisions_per_s: Math.round(total / elapsed),
    admitted: counts.reduce((a, n) => a + n, 0), keys_seen: counts.length,
    beyond_limit: counts.reduce((a, n) => a + Math.max(0, n - Number(limit)), 0),
    commands_per_decision: Math.round((results.reduce((a, r) => a + r.sent, 0) / total) * 100) / 100,
  }));
}

if (process.env.BENCH_PREFIX) await worker(process.env.BENCH_PREFIX);
else await main();

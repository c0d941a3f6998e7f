// RateLimiterRl (rate-limiter-flexible's interface) against the server in RL_HOST / RL_PORT
// (rl-server or Redis with rl.so), through ioredis, and inside rate-limiter-flexible's own
// RateLimiterUnion: consume / penalty / reward / get / delete, blockDuration, and the seed
// scenario from parallel callers.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, test } from "node:test";

import Redis from "ioredis";
import flexible from "rate-limiter-flexible";

import { RateLimiterRl } from "../flexible.js";

const { RateLimiterRes, RateLimiterUnion } = flexible;
const redis = new Redis({ host: process.env.RL_HOST ?? "127.0.0.1", port: Number(process.env.RL_PORT), commandTimeout: 5000 });
after(() => redis.disconnect());
const sendCommand = (...args) => redis.call(...args);
const limiter = (o = {}) => new RateLimiterRl({ sendCommand, keyPrefix: randomUUID(), points: 3, duration: 60, ...o });

async function denied(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof RateLimiterRes, `rejected with ${e}`);
    return e;
  }
  assert.fail("consume was not rejected");
}

for (const algorithm of ["FIXED_WINDOW", "SLIDING_LOG"]) {
  test(`${algorithm}: consume, the denial, the server's headers`, async () => {
    const rl = limiter({ algorithm });
    const got = [];
    for (let i = 0; i < 3; i++) got.push(await rl.consume("u"));
    assert.deepEqual(got.map((r) => [r.remainingPoints, r.consumedPoints]), [[2, 1], [1, 2], [0, 3]]);
    assert.equal(got[0].isFirstInDuration, true);
    assert.equal(got[1].isFirstInDuration, false);
    const no = await denied(rl.consume("u"));
    assert.equal(no.remainingPoints, 0);
    assert.equal(no.consumedPoints, 4);
    assert.ok(no.msBeforeNext > 50_000 && no.msBeforeNext <= 60_000, `${no.msBeforeNext}`);
    assert.equal(no.headers["X-RateLimit-Limit"], "3");
    assert.equal(no.headers["Retry-After"], String(Math.ceil(no.msBeforeNext / 1000)));
    assert.equal(got[0].headers["Retry-After"], undefined);
    // The state is rl's: a peek of the same limit on the server has nothing left.
    const peek = await redis.call("RL.PEEK", rl.getKey("u"), algorithm, "3", "60000ms", "COST", "0");
    assert.equal(peek[peek.indexOf("remaining") + 1], 0);
  });
}

test("cost, reward (RL.REFUND), penalty (RL.CHARGE), get, delete (RL.RESET)", async () => {
  const rl = limiter();
  assert.equal(await rl.get("k"), null);
  assert.equal((await rl.consume("k", 2)).remainingPoints, 1);
  assert.equal((await denied(rl.consume("k", 2))).remainingPoints, 1);
  assert.equal((await rl.reward("k", 1)).remainingPoints, 2);
  assert.equal((await rl.get("k")).consumedPoints, 1);
  const charged = await rl.penalty("k", 5); // into debt: denied until it is repaid
  assert.equal(charged.remainingPoints, 0);
  await denied(rl.consume("k"));
  assert.equal(await rl.delete("k"), true);
  assert.equal(await rl.delete("k"), false);
  assert.equal((await rl.consume("k")).remainingPoints, 2);
});

test("blockDuration: a denial blocks the key (rl's BLOCK)", async () => {
  const rl = limiter({ points: 1, duration: 1, blockDuration: 120 });
  await rl.consume("b");
  const no = await denied(rl.consume("b"));
  assert.ok(no.msBeforeNext > 100_000, `blocked for ${no.msBeforeNext} ms`);
});

test("limit 5, 8 parallel consumes: exactly 5 pass", async () => {
  const rl = limiter({ points: 5 });
  const results = await Promise.allSettled(Array.from({ length: 8 }, () => rl.consume("p")));
  assert.equal(results.filter((r) => r.status === "fulfilled").length, 5);
  for (const r of results.filter((x) => x.status === "rejected")) {
    assert.ok(r.reason instanceof RateLimiterRes && r.reason.msBeforeNext > 0);
  }
});

test("inside rate-limiter-flexible's RateLimiterUnion", async () => {
  const union = new RateLimiterUnion(limiter({ points: 2, keyPrefix: `${randomUUID()}a` }),
    limiter({ points: 5, keyPrefix: `${randomUUID()}b` }));
  await union.consume("x");
  await union.consume("x");
  const rejected = await union.consume("x").then(() => null, (e) => e);
  assert.ok(rejected && Object.values(rejected).some((r) => r instanceof RateLimiterRes));
});

test("set and block are refused, not emulated", async () => {
  const rl = limiter();
  await assert.rejects(rl.set("k", 1, 1), /not supported/);
  await assert.rejects(rl.block("k", 1), /not supported/);
  assert.throws(() => new RateLimiterRl({ sendCommand, duration: 0 }), /duration > 0/);
});

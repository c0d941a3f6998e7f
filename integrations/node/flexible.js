// rl for rate-limiter-flexible: a limiter with its interface (consume, penalty, reward, get,
// delete) whose every call is one command on rl-server or Redis with rl.so. It implements
// RateLimiterCompatibleAbstract, the interface rate-limiter-flexible's wrappers (RateLimiterUnion,
// RLWrapperTimeouts, insurance limiters) accept, so nothing is counted or compared in Node:
// consume resolves with a RateLimiterRes when rl allowed and rejects with one when rl denied, as
// rate-limiter-flexible's own limiters do. Each RateLimiterRes also carries `headers`, the
// server's HTTP header values for that decision (RL.CHECK ... HEADERS).
import flexible from "rate-limiter-flexible";

import { parseDecision } from "./index.js";

const { RateLimiterCompatibleAbstract, RateLimiterRes } = flexible;
const ALGORITHMS = new Set(["FIXED_WINDOW", "SLIDING_LOG"]);

export class RateLimiterRl extends RateLimiterCompatibleAbstract {
  /**
   * @param {object} o
   * @param {(...args: string[]) => Promise<any>} o.sendCommand  runs one command on the client
   * @param {number} [o.points]  the limit per duration (4, as rate-limiter-flexible's default)
   * @param {number} [o.duration]  seconds (1); rl's windows always end, so 0 is refused
   * @param {number} [o.blockDuration]  seconds a denial blocks the key (rl's BLOCK), 0 = none
   * @param {"FIXED_WINDOW"|"SLIDING_LOG"} [o.algorithm]  FIXED_WINDOW (default) counts as
   *   rate-limiter-flexible's stores do, from the first consume; SLIDING_LOG is exact over any
   *   trailing window
   * @param {string} [o.keyPrefix]  "rlflx", as rate-limiter-flexible's
   */
  constructor({ sendCommand, points = 4, duration = 1, blockDuration = 0,
    algorithm = "FIXED_WINDOW", keyPrefix = "rlflx" } = {}) {
    super();
    if (typeof sendCommand !== "function") throw new TypeError("RateLimiterRl needs sendCommand");
    if (!ALGORITHMS.has(algorithm)) {
      throw new TypeError(`RateLimiterRl: no algorithm ${algorithm}`);
    }
    if (!(Number.isInteger(points) && points > 0)) throw new TypeError("points must be > 0");
    if (!(duration > 0)) throw new TypeError("RateLimiterRl needs a duration > 0 (seconds)");
    this.sendCommand = sendCommand;
    this.points = points;
    this.duration = duration;
    this.algorithm = algorithm;
    this._keyPrefix = keyPrefix;
    this.blockDuration = blockDuration;
  }

  get keyPrefix() {
    return this._keyPrefix;
  }

  get blockDuration() {
    return this._blockDuration;
  }

  set blockDuration(value) {
    if (!(value >= 0)) throw new TypeError("blockDuration must be >= 0 (seconds)");
    this._blockDuration = value;
  }

  get execEvenly() {
    return false;
  }

  set execEvenly(value) {
    // Spreading calls out is a wait in the caller; rl answers at once.
    if (value) throw new Error("RateLimiterRl: execEvenly is not supported");
  }

  getKey(key) {
    return this._keyPrefix ? `${this._keyPrefix}:${key}` : String(key);
  }

  limitArgs(options = {}) {
    const seconds = options.customDuration > 0 ? options.customDuration : this.duration;
    const args = [this.algorithm, String(this.points), `${Math.round(seconds * 1000)}ms`];
    if (this._blockDuration > 0) args.push("BLOCK", `${Math.round(this._blockDuration * 1000)}ms`);
    return args;
  }

  async run(command, key, options, ...rest) {
    const limit = this.limitArgs(options);
    return parseDecision(await this.sendCommand(command, this.getKey(key), ...limit, ...rest));
  }

  // A RateLimiterRes from rl's reply. consumedPoints: what the window holds, and for a denial
  // what it would hold with this call (rl consumed nothing); msBeforeNext: rl's retry-after when
  // denied, its reset when allowed (what rate-limiter-flexible's stores report).
  static result(d, points) {
    const consumed = d.limit - d.remaining + (d.allowed ? 0 : points);
    const res = new RateLimiterRes(d.remaining, d.allowed ? d.resetAfterMs : d.retryAfterMs,
      consumed, points > 0 && consumed === points);
    res.headers = Object.fromEntries(d.headers);
    return res;
  }

  async consume(key, points = 1, options = {}) {
    const d = await this.run("RL.CHECK", key, options, "COST", String(points), "HEADERS");
    const res = RateLimiterRl.result(d, points);
    if (!d.allowed) throw res;
    return res;
  }

  /** Consumes even past the limit (RL.CHARGE); resolves with the state after it. */
  async penalty(key, points = 1, options = {}) {
    const d = await this.run("RL.CHARGE", key, options, "COST", String(points), "HEADERS");
    return RateLimiterRl.result(d, 0);
  }

  /** Gives points back (RL.REFUND, never above the limit); resolves with the state after it. */
  async reward(key, points = 1, options = {}) {
    const d = await this.run("RL.REFUND", key, options, "COST", String(points), "HEADERS");
    return RateLimiterRl.result(d, 0);
  }

  /** The current state (RL.PEEK COST 0), null when nothing is consumed. */
  async get(key, options = {}) {
    const d = await this.run("RL.PEEK", key, options, "COST", "0", "HEADERS");
    if (d.allowed && d.remaining === d.limit && d.resetAfterMs === 0) return null;
    return RateLimiterRl.result(d, 0);
  }

  /** RL.RESET: true when there was a state to remove. */
  async delete(key, options = {}) {
    const limit = this.limitArgs(options);
    return Number(await this.sendCommand("RL.RESET", this.getKey(key), ...limit)) > 0;
  }

  async set() {
    throw new Error("RateLimiterRl: set is not supported (rl computes the state: penalty, reward)");
  }

  async block() {
    throw new Error("RateLimiterRl: block is not supported (the blockDuration option: rl's BLOCK)");
  }
}

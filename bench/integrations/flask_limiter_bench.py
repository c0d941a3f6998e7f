#!/usr/bin/python3
"""Flask-Limiter side by side: its Redis storage vs the rl storage (integrations/python).

    flask_limiter_bench.py STORAGE_URI STRATEGY WORKERS SECONDS SCENARIO LIMIT [KEYS]

WORKERS processes each run a Flask app with one limited route (LIMIT per hour, so no window
ends during the run) and request it through Flask's test client as fast as they can for SECONDS:
SCENARIO "hot" on one client address, "many" spread over KEYS addresses. Prints one JSON line:
decisions per second, how many requests were admitted beyond the limit (per key, summed) and the
commands sent per decision.
STRATEGY "rl-moving-window" / "rl-fixed-window" come with rl_limits.flask.server_headers; limits'
own strategies with Flask-Limiter's own headers (both answer with rate-limit headers)."""
import json
import multiprocessing as mp
import os
import random
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "integrations", "python"))

import flask  # noqa: E402
import redis  # noqa: E402
from flask_limiter import Limiter  # noqa: E402
from flask_limiter.util import get_remote_address  # noqa: E402

import rl_limits.flask  # noqa: E402


def count_commands():
    """Counts the commands this process sends (each a round trip: no pipelines here), a script's
    EVALSHA as one (the commands it runs inside Redis are not round trips)."""
    sent = [0]
    send = redis.Redis.execute_command

    def counted(self, *args, **options):
        sent[0] += 1
        return send(self, *args, **options)

    redis.Redis.execute_command = counted
    return sent


def worker(uri, strategy, prefix, limit, seconds, keys, start, out):
    sent = count_commands()
    app = flask.Flask("bench")
    rl = strategy.startswith("rl-")
    app.config["RATELIMIT_HEADERS_ENABLED"] = not rl
    limiter = Limiter(get_remote_address, app=app, storage_uri=uri, strategy=strategy,
                      key_prefix=prefix)

    @app.route("/r")
    @limiter.limit(f"{limit}/hour")
    def route():
        return "ok"

    if rl:
        rl_limits.flask.server_headers(app, limiter)
    client = app.test_client()
    admitted, requests = {}, 0
    rnd = random.Random(os.getpid())
    start.wait()
    sent[0] = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        k = rnd.randrange(keys)
        addr = f"10.0.{k // 250}.{k % 250}"
        r = client.get("/r", environ_base={"REMOTE_ADDR": addr})
        requests += 1
        if r.status_code == 200:
            admitted[addr] = admitted.get(addr, 0) + 1
        elif r.status_code != 429:
            raise SystemExit(f"status {r.status_code}")
    out.put((requests, admitted, sent[0]))


def main():
    uri, strategy, workers, seconds, scenario, limit = sys.argv[1:7]
    workers, seconds, limit = int(workers), float(seconds), int(limit)
    keys = int(sys.argv[7]) if scenario == "many" else 1
    prefix = uuid.uuid4().hex  # a fresh state per run
    ctx = mp.get_context("fork")
    start, out = ctx.Barrier(workers + 1), ctx.Queue()
    procs = [ctx.Process(target=worker,
                         args=(uri, strategy, prefix, limit, seconds, keys, start, out))
             for _ in range(workers)]
    for p in procs:
        p.start()
    start.wait()
    t0 = time.monotonic()
    results = [out.get(timeout=seconds + 120) for _ in procs]
    elapsed = time.monotonic() - t0
    for p in procs:
        p.join()
    total = sum(r[0] for r in results)
    per_key = {}
    for _, admitted, _ in results:
        for k, n in admitted.items():
            per_key[k] = per_key.get(k, 0) + n
    print(json.dumps({
        "uri": uri.split(":")[0], "strategy": strategy, "scenario": scenario,
        "workers": workers, "requests": total, "decisions_per_s": round(total / elapsed),
        "admitted": sum(per_key.values()), "keys_seen": len(per_key),
        "beyond_limit": sum(max(0, n - limit) for n in per_key.values()),
        "commands_per_decision": round(sum(r[2] for r in results) / total, 2)}))


if __name__ == "__main__":
    main()

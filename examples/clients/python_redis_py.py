#!/usr/bin/python3
"""rl-server from Python with redis-py (Debian's python3-redis), including the outage path.

    RL_PORT=6380 /usr/bin/python3 python_redis_py.py CLIENT ROUTE...   e.g.  alice search login

Each ROUTE is checked once for CLIENT and printed as an HTTP status:
    search 200 remaining=1 | search 429 retry-after=30 | search 200 limiter=down | login 503 ...
A limiter that cannot be reached (refused, reset, no reply within RL_TIMEOUT_MS, wrong password)
is not the client's fault: a fail-open route lets the request through without rate-limit
headers, a fail-closed one answers 503 with a short Retry-After. An error *reply* (a bad limit,
an unknown policy) is a bug in the request and is raised, not hidden behind the failure mode.
"""
import os
import sys

import redis

# route -> (what RL.CHECK checks, fail open?). ["POLICY", "api"] names a policy of rl.toml instead.
ROUTES = {
    "search": (["TOKEN_BUCKET", "2", "1m"], True),
    "login": (["SLIDING_LOG", "2", "1m"], False),
}

_limiter_down = False  # log once per outage, not once per request


def rate_limit(r, route, client):
    """Returns (status, headers to copy onto the response, decided by the failure mode?)."""
    global _limiter_down
    limits, fail_open = ROUTES[route]
    try:
        reply = r.execute_command("RL.CHECK", f"{route}:{client}", *limits, "HEADERS")
    except (redis.ConnectionError, redis.TimeoutError) as e:  # AuthenticationError included
        if not _limiter_down:
            print(f"rate limiter unreachable ({e}): fail-open routes allow, fail-closed routes "
                  "answer 503", file=sys.stderr)
            _limiter_down = True
        return (200, {}, True) if fail_open else (503, {"Retry-After": "1"}, True)
    if _limiter_down:
        print("rate limiter reachable again", file=sys.stderr)
        _limiter_down = False
    # RESP2 (redis-py 4, the default of 5): [allowed, limit, remaining, retry_ms, reset_ms,
    # [name, value, ...]]. redis-py 5 with protocol=3: a dict with those names.
    if isinstance(reply, dict):
        allowed, headers = reply["allowed"], reply["headers"]
    else:
        allowed, headers = reply[0], dict(zip(reply[5][::2], reply[5][1::2]))
    return (200 if allowed else 429), headers, False


def main():
    r = redis.Redis(
        host=os.environ.get("RL_HOST", "127.0.0.1"),
        port=int(os.environ.get("RL_PORT", "6380")),
        password=os.environ.get("RL_PASSWORD"),
        decode_responses=True,  # header names and values as str, not bytes
        socket_connect_timeout=int(os.environ.get("RL_TIMEOUT_MS", "50")) / 1000,
        socket_timeout=int(os.environ.get("RL_TIMEOUT_MS", "50")) / 1000,
    )
    client = sys.argv[1]
    for route in sys.argv[2:]:
        status, headers, down = rate_limit(r, route, client)
        line = f"{route} {status}"
        if "Retry-After" in headers:
            line += f" retry-after={headers['Retry-After']}"
        elif "X-RateLimit-Remaining" in headers:
            line += f" remaining={headers['X-RateLimit-Remaining']}"
        print(line + (" limiter=down" if down else ""))


if __name__ == "__main__":
    main()

"""redis-py (Debian's python3-redis) against redis-server with rl.so (port in argv[1]): the seed
scenario from parallel clients, pipelines, errors, policies, HEADERS, WRONGTYPE, INFO rl, and a
RESP3 connection (HELLO 3) over a raw socket."""
import socket
import sys
import threading

import redis

port = int(sys.argv[1])
r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
assert r.ping() is True

# Seed scenario from 8 threads: exactly 5 of 8 pass.
results = []
lock = threading.Lock()


def worker():
    c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
    reply = c.execute_command("RL.CHECK", "py:seed", "SLIDING_LOG", 5, "1s")
    with lock:
        results.append(reply)


threads = [threading.Thread(target=worker) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert sum(1 for x in results if x[0] == 1) == 5, results
assert all(x[3] > 0 for x in results if x[0] == 0), results

# Pipelines keep order, with and without MULTI/EXEC.
for transaction in (False, True):
    pipe = r.pipeline(transaction=transaction)
    for _ in range(10):
        pipe.execute_command("RL.CHECK", "py:pipe:%s" % transaction, "FIXED_WINDOW", 7, "1m")
    out = pipe.execute()
    assert [x[0] for x in out] == [1] * 7 + [0] * 3, out

# Errors surface as ResponseError with rl's text and leave the connection usable.
for args, text in [
    (("RL.CHECK", "py:k", "TOKEN_BUCKET", 5, "1s", "COST", -1), "COST must not be negative"),
    (("RL.CHECK", "py:k", "POLICY", "nope"), "no such policy 'nope'"),
    (("RL.POLICY", "GET"), "wrong number of arguments for 'rl.policy|get' command"),
]:
    try:
        r.execute_command(*args)
        raise SystemExit("accepted: %r" % (args,))
    except redis.ResponseError as e:
        assert str(e) == text, (str(e), text)
r.set("py:string", "x")
try:
    r.execute_command("RL.CHECK", "py:string", "GCRA", 5, "1s")
    raise SystemExit("WRONGTYPE not raised")
except redis.ResponseError as e:
    assert str(e).startswith("WRONGTYPE"), str(e)

assert r.execute_command("CL.THROTTLE", "py:user123", 15, 30, 60) == [0, 16, 15, -1, 2]
assert r.execute_command("RL.POLICY", "SET", "py-pol", "GCRA", 3, "1s") in (b"OK", "OK", True)
assert r.execute_command("RL.CHECK", "py:u", "POLICY", "py-pol")[:3] == [1, 3, 2]
*_, headers = r.execute_command("RL.CHECK", "py:h", "FIXED_WINDOW", 1, "1m", "HEADERS")
headers = dict(zip(headers[::2], headers[1::2]))
assert headers[b"X-RateLimit-Limit"] == b"1", headers
assert r.type("py:u") == b"ratelimit"
assert r.info("rl")["rl_checks"] >= 20, r.info("rl")


# RESP3: HELLO 3 then a map reply, read with a minimal parser.
def read_reply(f):
    line = f.readline()
    t, body = line[:1], line[1:-2]
    if t in (b"+", b"-"):
        return body.decode()
    if t == b":":
        return int(body)
    if t in (b"$", b"="):
        n = int(body)
        return f.read(n + 2)[:-2].decode()
    if t in (b"*", b"~"):
        return [read_reply(f) for _ in range(int(body))]
    if t == b"%":
        return {read_reply(f): read_reply(f) for _ in range(int(body))}
    if t == b"_":
        return None
    raise ValueError(line)


s = socket.create_connection(("127.0.0.1", port), timeout=5)
f = s.makefile("rb")


def call(*args):
    msg = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        msg += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(msg)
    return read_reply(f)


hello = call("HELLO", 3)
assert hello["proto"] == 3 and any(m["name"] == "rl" for m in hello["modules"]), hello
m = call("RL.CHECK", "py:resp3", "GCRA", 10, "1s", "HEADERS")
assert m["allowed"] == 1 and m["limit"] == 10 and m["remaining"] == 9, m
assert m["headers"]["X-RateLimit-Limit"] == "10", m
assert isinstance(call("RL.POLICY", "LIST"), dict)
print("redis-py ok")

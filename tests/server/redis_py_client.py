"""redis-py and a raw RESP3 client against rl-server (port in RL_PORT)."""
import os
import socket
import threading

import redis

port = int(os.environ["RL_PORT"])
r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, client_name="rl-py")
assert r.ping() is True
assert r.echo("hi") == b"hi"
assert r.client_getname() == "rl-py" or r.client_getname() == b"rl-py"

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

# Pipelines keep order.
pipe = r.pipeline(transaction=False)
for _ in range(10):
    pipe.execute_command("RL.CHECK", "py:pipe", "FIXED_WINDOW", 7, "1m")
out = pipe.execute()
assert [x[0] for x in out] == [1] * 7 + [0] * 3, out

# The default pipeline is a transaction (MULTI ... EXEC): the checks run together, in order.
pipe = r.pipeline()
for _ in range(4):
    pipe.execute_command("RL.CHECK", "py:txn", "TOKEN_BUCKET", 3, "1m")
out = pipe.execute()
assert [x[0] for x in out] == [1, 1, 1, 0], out

# WATCH race between two clients: the other client's check makes EXEC fail (WatchError), a
# retry after it succeeds; a denial by the other client is no change.
other = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
limit = ("TOKEN_BUCKET", 2, "1h")
with r.pipeline() as pipe:
    pipe.watch("py:watch")
    peek = pipe.execute_command("RL.PEEK", "py:watch", *limit)
    assert peek[0] == 1, peek
    assert other.execute_command("RL.CHECK", "py:watch", *limit)[0] == 1
    pipe.multi()
    pipe.execute_command("RL.CHECK", "py:watch", *limit)
    try:
        pipe.execute()
        raise AssertionError("EXEC ran although the watched key changed")
    except redis.WatchError:
        pass
with r.pipeline() as pipe:
    pipe.watch("py:watch")
    assert other.execute_command("RL.CHECK", "py:watch", *limit)[0] == 1  # the last token
    pipe.multi()
    pipe.execute_command("RL.CHECK", "py:watch", *limit)
    try:
        pipe.execute()
        raise AssertionError("EXEC ran although the watched key changed")
    except redis.WatchError:
        pass
    pipe.watch("py:watch")
    assert other.execute_command("RL.CHECK", "py:watch", *limit)[0] == 0  # denied: no change
    pipe.multi()
    pipe.execute_command("RL.CHECK", "py:watch", *limit)
    assert pipe.execute()[0][0] == 0

# A command the server refuses while queuing aborts the whole transaction (EXECABORT).
pipe = r.pipeline()
pipe.execute_command("RL.CHECK", "py:abort", "TOKEN_BUCKET", 1, "1m")
pipe.execute_command("RL.NOSUCH", "x")
try:
    pipe.execute()
    raise AssertionError("EXEC ran after a refused command")
except redis.ResponseError as e:
    assert "unknown command" in str(e) or "EXECABORT" in str(e), e
assert r.execute_command("RL.CHECK", "py:abort", "TOKEN_BUCKET", 1, "1m")[0] == 1

# Errors surface as ResponseError and leave the connection usable.
try:
    r.execute_command("RL.CHECK", "py:k", "TOKEN_BUCKET", 5, "1s", "COST", -1)
    raise SystemExit("negative COST accepted")
except redis.ResponseError:
    pass
assert r.execute_command("CL.THROTTLE", "py:user123", 15, 30, 60) == [0, 16, 15, -1, 2]
assert r.execute_command("RL.POLICY", "SET", "py-pol", "GCRA", 3, "1s") in (b"OK", "OK", True)
assert r.execute_command("RL.CHECK", "py:u", "POLICY", "py-pol")[:3] == [1, 3, 2]
info = r.info()
assert "rl_checks" in info and info["connected_clients"] >= 1, info
assert r.dbsize() >= 1
assert r.config_get("save") == {"save": ""}


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
        data = f.read(n + 2)[:-2]
        return data.decode()
    if t in (b"*", b"~"):
        return [read_reply(f) for _ in range(int(body))]
    if t == b"%":
        return {read_reply(f): read_reply(f) for _ in range(int(body))}
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
assert hello["proto"] == 3 and hello["server"] and "modules" in hello, hello
m = call("RL.CHECK", "py:resp3", "GCRA", 10, "1s", "HEADERS")
assert m["allowed"] == 1 and m["limit"] == 10 and m["remaining"] == 9, m
assert m["headers"]["X-RateLimit-Limit"] == "10", m
print("redis-py ok")

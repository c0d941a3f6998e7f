"""redis-py's RedisCluster against a Redis Cluster of rl.so nodes (a node's port in argv[1]):
every RL.* command routes by its key (rl.so registers key position 1, which redis-py reads from
COMMAND), keys spread over the masters, policies go to every primary, pipelines group by node."""
import logging
import sys

import redis
from redis.cluster import RedisCluster

# redis-py's cluster client logs every error reply with a traceback; the errors below are meant.
logging.getLogger("redis").setLevel(logging.CRITICAL)
port = int(sys.argv[1])
rc = RedisCluster(host="127.0.0.1", port=port, socket_timeout=5)
primaries = rc.get_primaries()
assert len(primaries) == 3, primaries

# A policy on every primary (keyless: the caller names the nodes).
out = rc.execute_command("RL.POLICY", "SET", "pyc", "FIXED_WINDOW", 3, "1h",
                         target_nodes=RedisCluster.PRIMARIES)
assert all(v in (b"OK", "OK", True) for v in out.values()), out

owners = set()
for i in range(30):
    key = "rl:pyc:%d" % i
    owners.add(rc.get_node_from_key(key).name)
    for n in range(4):
        reply = rc.execute_command("RL.CHECK", key, "POLICY", "pyc")
        assert reply[0] == (1 if n < 3 else 0), (key, n, reply)
    assert rc.execute_command("RL.PEEK", key, "GCRA", 5, "1m")[:3] == [1, 5, 4]
    assert rc.execute_command("CL.THROTTLE", key, 15, 30, 60) == [0, 16, 15, -1, 2]
    assert rc.execute_command("RL.RESET", key, "POLICY", "pyc") == 1
    assert rc.type(key) == b"ratelimit"
assert len(owners) == 3, owners

# A pipeline over many slots is split by node and answered in order.
pipe = rc.pipeline()
for i in range(30):
    pipe.execute_command("RL.CHECK", "rl:pyc:pipe:%d" % (i % 5), "FIXED_WINDOW", 4, "1h")
out = pipe.execute()
assert [x[0] for x in out] == [1] * 20 + [0] * 10, out

try:
    rc.execute_command("RL.CHECK", "rl:pyc:0", "GCRA", 0, "1s")
    raise SystemExit("accepted")
except redis.ResponseError as e:
    assert str(e) == "limit must be between 1 and 1099511627776", str(e)
print("redis-py RedisCluster ok")

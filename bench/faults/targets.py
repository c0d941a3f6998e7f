"""What the fault harness runs faults against: rl-server (with a snapshot, optionally under the
wall-clock shim), Redis with rl.so as master + replica behind a proxy, and a 3 + 3 Redis Cluster.
Each target starts on free loopback ports, says where clients connect (load_args), and knows how
to inject its faults; every wait is for an event (a PONG, a role, a save count), bounded."""

import os
import signal
import struct
import subprocess
import time

from faultlib import (Failure, Proxy, call, free_port, info, on_cleanup, reap, spawn, tmpdir,
                      try_call, wait_for)


def _pong(port):
    return try_call(port, "PING", timeout=0.5) == "PONG"


class RlServer:
    """rl-server with --snapshot in a directory of its own; `wall_shift` = (shim path) runs it
    under the LD_PRELOAD shim with a shift file the harness rewrites to step its wall clock."""

    def __init__(self, build, interval, wall_shift=None, snapdir=None):
        self.build, self.interval = build, interval
        self.dir = snapdir or tmpdir("rl")
        self.port = free_port()
        self.env = dict(os.environ)
        self.shift_file = None
        if wall_shift:
            self.shift_file = os.path.join(tmpdir("shift"), "shift")
            self.set_shift(0)
            self.env.update(LD_PRELOAD=wall_shift, RL_TEST_WALL_SHIFT_FILE=self.shift_file)
        self.p = None
        self.start()

    def set_shift(self, ms):
        # Rewritten in place: the shim maps the file and reads it at every call.
        mode = "r+b" if os.path.exists(self.shift_file) else "wb"
        with open(self.shift_file, mode) as f:
            f.write(struct.pack("=q", ms))

    def start(self):
        self.log = open(os.path.join(self.dir, "rl-server.log"), "a")
        self.p = spawn([os.path.join(self.build, "server", "rl-server"), "--port", str(self.port),
                        "--snapshot", os.path.join(self.dir, "state.rlsnap"),
                        "--snapshot-interval", self.interval, "--threads", "1"],
                       env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(lambda: _pong(self.port) or self.p.poll() is not None, 20, "rl-server to start")
        if self.p.poll() is not None:
            raise Failure(f"rl-server exited {self.p.returncode} (log {self.log.name})")

    def persistence(self):
        return info(self.port, "persistence")

    def kill9(self):
        self.p.kill()
        reap(self.p)

    def stop(self):
        self.p.terminate()
        reap(self.p, timeout=20)

    def load_args(self):
        return ["--port", self.port]


def redis_argv(port, d, module, extra, binds=("127.0.0.1",)):
    return ["redis-server", "--port", str(port), "--bind", " ".join(binds), "--dir", d,
            "--save", "", "--appendonly", "no", "--logfile", os.path.join(d, "redis.log"),
            "--enable-debug-command", "yes", "--repl-diskless-sync", "yes",
            "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1",
            "--loadmodule", module] + [str(x) for x in extra]


class RedisNode:
    """A redis-server loading rl.so; `wrap` runs it elsewhere (`ip netns exec NS`), reached at
    `host` (an address it binds besides 127.0.0.1)."""

    def __init__(self, module, extra, cluster=False, wrap=(), host="127.0.0.1"):
        self.port = free_port(cluster=cluster)
        self.addr = (host, self.port)
        self.dir = tmpdir(f"redis{self.port}")
        binds = ("127.0.0.1",) if host == "127.0.0.1" else ("127.0.0.1", host)
        if host != "127.0.0.1":
            # Reached over the veth pair: an address only the harness's namespaces share.
            extra = list(extra) + ["--protected-mode", "no"]
        self.argv = list(wrap) + redis_argv(self.port, self.dir, module, extra, binds)
        self.start()

    def start(self):
        """Starts (again: same port, same dir, so a cluster node keeps its nodes.conf)."""
        self.p = spawn(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for(lambda: _pong(self.addr) or self.p.poll() is not None, 20, "redis to start")
        if self.p.poll() is not None:
            raise Failure(f"redis-server exited {self.p.returncode} ({self.dir}/redis.log)")

    def role(self):
        return info(self.addr, "replication").get("role")

    def kill9(self):
        os.kill(self.p.pid, signal.SIGCONT)
        self.p.kill()
        reap(self.p)

    def stop_signal(self, sig):
        os.kill(self.p.pid, sig)


class PrimaryReplica:
    """A master and one replica loading rl.so, and a proxy clients connect to that forwards to
    whichever is master (a VIP or a Sentinel-aware client in production; Debian's Redis 7.0 here
    has no redis-sentinel package installed, so the harness promotes by REPLICAOF NO ONE, as
    Sentinel would, and moves the proxy)."""

    def __init__(self, module, min_replicas=0, master_wrap=(), master_host="127.0.0.1",
                 replica_host="127.0.0.1"):
        self.module, self.replica_host = module, replica_host
        self.extra = []
        if min_replicas:
            self.extra = ["--min-replicas-to-write", min_replicas, "--min-replicas-max-lag", 1]
        self.master = RedisNode(module, self.extra, wrap=master_wrap, host=master_host)
        self.replica = self._replica_of(self.master)
        self.proxy = Proxy(self.master.addr)

    def _replica_of(self, master):
        replica = RedisNode(self.module, self.extra + ["--replicaof", *master.addr],
                            host=self.replica_host)
        wait_for(lambda: info(replica.addr, "replication").get("master_link_status") == "up",
                 20, "the replica to sync")
        wait_for(lambda: info(master.addr, "replication").get("connected_slaves") == "1",
                 20, "the master to see its replica")
        return replica

    def load_args(self):
        return ["--port", self.proxy.port]

    def promote(self, rejoin=True):
        """REPLICAOF NO ONE on the replica, then clients are moved to it."""
        call(self.replica.addr, "REPLICAOF", "NO", "ONE")
        wait_for(lambda: self.replica.role() == "master", 10, "the replica to be master")
        self.proxy.switch(self.replica.addr)
        # The dead master comes back (empty, as after a lost disk) as the new master's replica,
        # as Sentinel reconfigures it: until then wait_for_replicas has nobody to wait for.
        self.master, self.replica = self.replica, None
        if rejoin:
            self.replica = self._replica_of(self.master)

    def cut_replica(self):
        """The replica stops (a frozen VM) and loses its link: the master's writes from now on
        never reach it (SIGSTOP alone would not do: what the master sent waits in the replica's
        socket buffer and arrives on resume)."""
        self.replica.stop_signal(signal.SIGSTOP)
        call(self.master.addr, "CLIENT", "KILL", "TYPE", "replica")
        wait_for(lambda: info(self.master.addr, "replication").get("connected_slaves") == "0",
                 10, "the master to drop its replica")


class Cluster:
    """3 masters + 3 replicas loading rl.so (ports <= 55535: each node's bus is port + 10000)."""

    def __init__(self, module, node_timeout_ms=1000, extra=()):
        conf = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", node_timeout_ms, "--cluster-replica-validity-factor", 0,
                "--cluster-require-full-coverage", "no"] + list(extra)
        self.nodes = [RedisNode(module, conf, cluster=True) for _ in range(6)]
        r = subprocess.run(["redis-cli", "--cluster", "create"] +
                           [f"127.0.0.1:{n.port}" for n in self.nodes] +
                           ["--cluster-replicas", "1", "--cluster-yes"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=60)
        if r.returncode != 0:
            raise Failure("redis-cli --cluster create failed:\n" + r.stdout[-2000:])
        self.wait_healthy()

    def by_port(self, port):
        return next(n for n in self.nodes if n.port == port)

    def live(self):
        return [n for n in self.nodes if n.p.poll() is None]

    def masters(self, seen_from):
        """{port: [replica ports]} of the masters with slots, as `seen_from` sees the cluster."""
        r = try_call(seen_from.port, "CLUSTER", "NODES")
        if not isinstance(r, str):
            return {}
        rows = [l.split() for l in r.splitlines() if l.strip()]
        ids = {row[0]: int(row[1].split(":")[1].split("@")[0]) for row in rows}
        out = {}
        for row in rows:
            flags = row[2].split(",")
            if "master" in flags and "fail" not in flags and len(row) > 8:
                out.setdefault(ids[row[0]], [])
        for row in rows:
            flags = row[2].split(",")
            if "slave" in flags and "fail" not in flags and ids.get(row[3]) in out:
                out[ids[row[3]]].append(ids[row[0]])
        return out

    def slots_of(self, port):
        """The slot ranges ("0-5460", "7") the master on `port` serves, as it says itself."""
        r = try_call(port, "CLUSTER", "NODES")
        for row in (l.split() for l in (r or "").splitlines()):
            if "myself" in row[2]:
                return [x for x in row[8:] if not x.startswith("[")]
        return []

    def wait_healthy(self, timeout=60):
        def ok():
            for n in self.live():
                r = try_call(n.port, "CLUSTER", "INFO")
                if not isinstance(r, str) or "cluster_state:ok" not in r:
                    return False
                if len(self.masters(n)) != 3:
                    return False
            return True
        wait_for(ok, timeout, "the cluster to be healthy", every=0.1)

    def a_master(self):
        m = self.masters(self.nodes[0])
        port = sorted(p for p, reps in m.items() if reps)[0]
        return self.by_port(port), self.by_port(m[port][0])

    def load_args(self):
        return ["--cluster", ",".join(f"127.0.0.1:{n.port}" for n in self.nodes[:3])]


class Partitioned(PrimaryReplica):
    """A master in a network namespace of its own, joined to this one by a veth pair, with its
    replica, the proxy and most clients out here and a minority of clients in there with it.
    partition() takes the link down (both sides go on: the minority's clients still reach the old
    master); heal() brings it up. The namespace goes at exit."""

    def __init__(self, module, min_replicas=0):
        tag = f"{os.getpid() % 100000}"
        self.ns, self.host_if, net = f"rlf{tag}", f"rlfh{tag}", 250 - os.getpid() % 200
        self.near, self.far = f"10.251.{net}.1", f"10.251.{net}.2"
        run = lambda *a: subprocess.run(a, check=True)  # noqa: E731
        run("ip", "netns", "add", self.ns)
        on_cleanup(lambda: subprocess.run(["ip", "netns", "del", self.ns], check=False))
        run("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", f"rlfn{tag}")
        on_cleanup(lambda: subprocess.run(["ip", "link", "del", self.host_if], check=False,
                                          stderr=subprocess.DEVNULL))
        run("ip", "link", "set", f"rlfn{tag}", "netns", self.ns)
        run("ip", "addr", "add", f"{self.near}/30", "dev", self.host_if)
        run("ip", "link", "set", self.host_if, "up")
        inside = ["ip", "netns", "exec", self.ns]
        run(*inside, "ip", "addr", "add", f"{self.far}/30", "dev", f"rlfn{tag}")
        run(*inside, "ip", "link", "set", f"rlfn{tag}", "up")
        run(*inside, "ip", "link", "set", "lo", "up")
        self.inside = inside
        super().__init__(module, min_replicas, master_wrap=inside, master_host=self.far,
                         replica_host=self.near)

    def minority_wrap(self):
        return self.inside

    def minority_args(self):
        return ["--port", self.master.port]  # the old master's loopback, inside its namespace

    def partition(self):
        subprocess.run(["ip", "link", "set", self.host_if, "down"], check=True)

    def heal(self, old_master):
        subprocess.run(["ip", "link", "set", self.host_if, "up"], check=True)
        # What Sentinel does once it reaches the old master again: make it a replica.
        call(old_master.addr, "REPLICAOF", *self.master.addr)
        wait_for(lambda: info(old_master.addr, "replication").get("master_link_status") == "up",
                 30, "the old master to follow the new one")

"""Processes, RESP, a TCP proxy and the load client for the fault harness (bench/faults/run).

Everything here is loopback only. Every process started dies with the harness (atexit, signals,
PR_SET_PDEATHSIG if the harness is killed hard, e.g. by a ctest timeout); every mount is undone.
Waits are for events (a reply, a role, a progress count), each bounded.
"""

import atexit
import ctypes
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

_children = []
_cleanups = []


class Failure(Exception):
    """A run that could not be made (a server that did not start, an event that never came)."""


def _die_with_parent():
    os.setsid()
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def cleanup():
    for p in list(_children):
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
                p.kill()
            except ProcessLookupError:
                pass
    for p in list(_children):
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    _children.clear()
    while _cleanups:
        try:
            _cleanups.pop()()
        except Exception as e:  # noqa: BLE001 - cleanup must go on
            print(f"cleanup: {e}", file=sys.stderr)


atexit.register(cleanup)
for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_sig, lambda s, f: sys.exit(128 + s))


def on_cleanup(fn):
    _cleanups.append(fn)


def spawn(argv, **kw):
    p = subprocess.Popen(argv, preexec_fn=_die_with_parent, **kw)
    _children.append(p)
    return p


def reap(p, timeout=10):
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    if p in _children:
        _children.remove(p)


def free_port(cluster=False):
    """A free loopback port; for a cluster node also port + 10000 (its bus), both below Linux's
    ephemeral range (32768 and up by default), where a client's source port could take the bus
    port before a restarted node binds it again."""
    for _ in range(200):
        port = random.randint(10000, 22767) if cluster else 0
        try:
            socks = []
            for q in ([port, port + 10000] if cluster else [port]):
                s = socket.socket()
                s.bind(("127.0.0.1", q))
                socks.append(s)
            port = socks[0].getsockname()[1]
            for s in socks:
                s.close()
            return port
        except OSError:
            for s in socks:
                s.close()
    raise Failure("no free port")


def wait_for(pred, timeout, what, every=0.02):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


# --- RESP -------------------------------------------------------------------------------------

def _read_reply(f):
    line = f.readline()
    if not line:
        raise ConnectionError("closed")
    t, rest = line[:1], line[1:-2]
    if t in (b"+", b"-"):
        s = rest.decode()
        return RespError(s) if t == b"-" else s
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2].decode(errors="replace")
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise ConnectionError(f"unexpected reply {line!r}")


class RespError(str):
    pass


def addr(where):
    """(host, port) from a loopback port or a (host, port) pair."""
    return where if isinstance(where, tuple) else ("127.0.0.1", where)


def call(port, *args, timeout=2.0):
    """One command on a fresh connection; raises OSError/ConnectionError when there is none.
    `port`: a loopback port or a (host, port) pair."""
    with socket.create_connection(addr(port), timeout=timeout) as s:
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        s.sendall(out)
        with s.makefile("rb") as f:
            return _read_reply(f)


def try_call(port, *args, timeout=1.0):
    try:
        return call(port, *args, timeout=timeout)
    except (OSError, ConnectionError):
        return None


def info(port, section=""):
    r = try_call(port, "INFO", section) if section else try_call(port, "INFO")
    if not isinstance(r, str):
        return {}
    return dict(l.split(":", 1) for l in r.splitlines() if ":" in l)


# --- A proxy in front of "the master" (what a VIP or a Sentinel-aware client gives) -----------

class Proxy:
    """Forwards each new connection to the current target; switch() moves the target and drops
    every open connection (clients reconnect, as after a VIP move or a Sentinel switch)."""

    def __init__(self, target):
        self.target = target
        self.port = free_port()
        self._lsock = socket.socket()
        self._lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._lsock.bind(("127.0.0.1", self.port))
        self._lsock.listen(128)
        self._conns = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()
        on_cleanup(self.close)

    def _accept(self):
        while True:
            try:
                c, _ = self._lsock.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(addr(self.target), timeout=1.0)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            for s in (c, u):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._conns.append((c, u))
            threading.Thread(target=self._pump, args=(c, u), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c), daemon=True).start()

    @staticmethod
    def _pump(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def switch(self, target):
        self.target = target
        with self._lock:
            conns, self._conns = self._conns, []
        for c, u in conns:
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self._lsock.close()
        self.switch(self.target)


# --- The load client (rl_fault_load) ------------------------------------------------------------

class Load:
    """rl_fault_load running; progress() is its latest line: elapsed_ms, checks, admitted,
    answered, unanswered."""

    def __init__(self, binary, args, workdir, wrap=()):
        self.out = os.path.join(workdir, f"ledger-{random.getrandbits(32):08x}.json")
        self.p = spawn(list(wrap) + [binary] + [str(a) for a in args] + ["--out", self.out],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.last = (0, 0, 0, 0, 0)
        self.history = []
        self.done = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            parts = line.split()
            if parts and parts[0] == "progress":
                self.last = tuple(int(x) for x in parts[1:6])
                self.history.append(self.last)
            elif parts and parts[0] == "done":
                self.done = True

    @property
    def admitted(self):
        return self.last[2]

    @property
    def answered(self):
        return self.last[3]

    def wait_settled(self, keys, since_answered, timeout):
        """Waits until admissions stopped: over the last 3 x keys answered checks, counted after
        `since_answered`, nothing was admitted and every check was answered (every key back at
        its limit, none still waiting for its node)."""
        def settled():
            h = self.history
            if not h or h[-1][3] < since_answered + 3 * keys:
                return False
            now = h[-1]
            for old in reversed(h):
                if old[3] <= now[3] - 3 * keys:
                    return old[3] >= since_answered and old[2] == now[2] and old[4] == now[4]
            return False
        try:
            wait_for(settled, timeout, "admissions to stop", every=0.05)
            return True
        except Failure:
            return False

    def finish(self):
        self.p.stdin.close()
        reap(self.p, timeout=30)
        if self.p.returncode != 0:
            raise Failure(f"rl_fault_load exited {self.p.returncode}")
        with open(self.out) as f:
            return json.load(f)


class Loads:
    """Several loads on the same keys (clients on both sides of a partition) seen as one: counts
    add up; the first is the one that runs to the end (the others are finished early by
    finish_others, e.g. when their side of a partition is gone)."""

    def __init__(self, loads):
        self.loads = loads
        self.ledgers = []

    @property
    def admitted(self):
        return sum(l.admitted for l in self.loads)

    @property
    def answered(self):
        return sum(l.answered for l in self.loads)

    @property
    def history(self):
        return self.loads[0].history

    @property
    def last(self):
        return self.loads[0].last

    def poll(self):
        return any(l.p.poll() is not None for l in self.loads)

    def wait_settled(self, keys, since_answered, timeout):
        return self.loads[0].wait_settled(keys, since_answered - sum(
            l.answered for l in self.loads[1:]), timeout)

    def finish_others(self):
        for l in self.loads[1:]:
            self.ledgers.append(l.finish())
        self.loads = self.loads[:1]

    def finish(self):
        self.finish_others()
        total = self.loads[0].finish()
        for other in self.ledgers:
            total["unavailable_ms"] = max(total["unavailable_ms"], other["unavailable_ms"])
            total["longest_outage_ms"] = max(total["longest_outage_ms"],
                                             other["longest_outage_ms"])
            total["errors"] = total.get("errors", 0) + other.get("errors", 0)
            for k, o in zip(total["keys"], other["keys"]):
                for f in ("admitted", "denied", "wrong_denied", "unanswered"):
                    k[f] += o[f]
        return total


def tmpdir(tag):
    d = tempfile.mkdtemp(prefix=f"rl-faults-{tag}-")
    on_cleanup(lambda: shutil.rmtree(d, ignore_errors=True))
    return d

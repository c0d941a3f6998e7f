#!/usr/bin/python3
"""bench/run's pipelined loader (Conn.pipeline_fixed) against a fake server: replies of the
expected shape (arrays of integers, or one status or integer line each) are counted, and any
other reply (a status, a bulk or nil string, an array of another length, an error) fails at once
with a message, instead of leaving the loader waiting for lines that never come. Usage: run_replies_test.py path/to/bench/run"""

import importlib.machinery
import importlib.util
import socket
import sys
import threading
import time


def load(path):
    loader = importlib.machinery.SourceFileLoader("bench_run", path)
    spec = importlib.util.spec_from_loader("bench_run", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def serve(reply):
    """A server on a free loopback port answering every command with `reply`."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def run():
        conn, _ = listener.accept()
        with conn:
            pending = b""
            while True:
                try:
                    data = conn.recv(1 << 16)
                except OSError:  # the loader hung up after a refused reply
                    return
                if not data:
                    return
                # Each command starts with its argument count (three arguments here).
                pending += data
                n = pending.count(b"*3\r\n")
                pending = pending[pending.rfind(b"*3\r\n") + 4:] if n else pending
                conn.sendall(reply * n)

    threading.Thread(target=run, daemon=True).start()
    return listener.getsockname()[1]


def main():
    run = load(sys.argv[1])
    commands = [run.encode(["RL.CHECK", "key:%d" % i, "x"]) for i in range(5000)]
    cases = [("array of 5 integers", b"*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n", None),
             ("status", b"+OK\r\n", "unexpected reply"),
             ("bulk string", b"$3\r\nabc\r\n", "unexpected reply"),
             ("nil", b"$-1\r\n", "unexpected reply"),
             ("array of 2", b"*2\r\n:1\r\n:2\r\n", "unexpected reply"),
             ("error", b"-ERR no such command\r\n", "error reply during load: ERR no such")]
    # One line per reply (SET's +OK, INCR's integer).
    cases += [("status, one line each", b"+OK\r\n", None, 1),
              ("integer, one line each", b":7\r\n", None, 1),
              ("bulk string, one line each", b"$2\r\nOK\r\n", "unexpected reply", 1),
              ("array, one line each", b"*1\r\n:1\r\n", "unexpected reply", 1)]
    failed = 0
    for name, reply, want, *lines in cases:
        start = time.monotonic()
        # A loader that waits for lines that never come meets this timeout (not a Failure).
        with run.Conn(serve(reply), timeout=10) as conn:
            try:
                got = conn.pipeline_fixed(iter(commands), lines[0] if lines else 6)
                outcome = f"ok {got}"
            except run.Failure as e:
                outcome = f"Failure: {e}"
            except OSError as e:
                outcome = f"{type(e).__name__}: {e}"
        expected = outcome == "ok 5000" if want is None else \
            outcome.startswith("Failure: ") and want in outcome
        print(f"{'ok  ' if expected else 'FAIL'} {name}: {outcome} "
              f"({time.monotonic() - start:.2f} s)")
        failed += not expected
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Flask-Limiter (Debian's python3-flask-limiter, on python3-limits) with storage_uri="rl://...",
through Flask's test client, against the server in RL_HOST / RL_PORT (rl-server or Redis with
rl.so; integrations/with_servers.sh starts both). Checks limits, 429s and header values, and that
the decisions are rl's (its state holds them)."""
import os
import sys
import threading
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

try:
    import flask
    import redis
    from flask_limiter import Limiter
    from flask_limiter.util import get_remote_address
    from limits import parse
    from limits.storage import storage_from_string
except ImportError as e:  # tools/setup installs them; ctest reports 77 as skipped
    print(f"missing a framework package ({e}): run tools/setup")
    sys.exit(77)

import rl_limits
import rl_limits.flask

URI = f"rl://{os.environ.get('RL_HOST', '127.0.0.1')}:{os.environ['RL_PORT']}"


def make_app(strategy, limit, server_headers, headers_enabled=False, cost=1):
    """An app with one limited route; each app gets its own key prefix (a fresh state)."""
    app = flask.Flask(f"t{uuid.uuid4().hex}")
    app.testing = True  # errors propagate to the test
    app.config["RATELIMIT_HEADERS_ENABLED"] = headers_enabled
    prefix = uuid.uuid4().hex
    limiter = Limiter(get_remote_address, app=app, storage_uri=URI, strategy=strategy,
                      key_prefix=prefix, storage_options={"socket_timeout": 5})

    @app.route("/r")
    @limiter.limit(limit, cost=cost)
    def route():
        return "ok"

    if server_headers:
        rl_limits.flask.server_headers(app, limiter)
    return app, limiter, prefix


def get(app, addr="10.0.0.1"):
    return app.test_client().get("/r", environ_base={"REMOTE_ADDR": addr})


class StorageTest(unittest.TestCase):
    def test_scheme_registered(self):
        storage = storage_from_string(URI)
        self.assertIsInstance(storage, rl_limits.RLStorage)
        self.assertTrue(storage.check())

    def test_server_errors_pass_through(self):
        # The contract's error text, not one of the adapter's.
        storage = storage_from_string(URI)
        with self.assertRaises(redis.ResponseError) as e:
            storage.incr("LIMITER/x/0/1/minute", 60)
        self.assertEqual(str(e.exception), "limit must be between 1 and 1099511627776")
        with self.assertRaises(ValueError):
            storage.get("not-a-limits-key")


class RLStrategyTest(unittest.TestCase):
    """strategy="rl-moving-window" / "rl-fixed-window": one RL.CHECK ... HEADERS per hit."""

    def check_sequence(self, strategy, algorithm):
        app, limiter, prefix = make_app(strategy, "3/minute", server_headers=True)
        got = [get(app) for _ in range(4)]
        self.assertEqual([r.status_code for r in got], [200, 200, 200, 429])
        self.assertEqual([r.headers["X-RateLimit-Remaining"] for r in got], ["2", "1", "0", "0"])
        for r in got:
            self.assertEqual(r.headers["X-RateLimit-Limit"], "3")
            self.assertEqual(r.headers["RateLimit-Policy"], '"default";q=3;w=60')
            self.assertEqual(len(r.headers.getlist("X-RateLimit-Limit")), 1)
        # Retry-After only on the denial, as the server sends it (Flask-Limiter's own would be on
        # every response); RateLimit's t is that same value.
        self.assertNotIn("Retry-After", got[0].headers)
        retry = int(got[3].headers["Retry-After"])
        self.assertTrue(55 <= retry <= 60, retry)
        self.assertEqual(got[3].headers["RateLimit"], f'"default";r=0;t={retry}')
        # Another client has its own limit.
        other = get(app, addr="10.0.0.2")
        self.assertEqual((other.status_code, other.headers["X-RateLimit-Remaining"]), (200, "2"))
        # The state is rl's: the same key and limit, peeked on the server, has nothing left.
        key = f"LIMITER/{prefix}/10.0.0.1/route/3/1/minute"
        reply = redis.Redis(port=int(os.environ["RL_PORT"])).execute_command(
            "RL.PEEK", key, algorithm, 3, "60s", "COST", 0)
        self.assertEqual(reply[:3], [1, 3, 0])
        # clear() resets it through RL.RESET.
        limiter.limiter.clear(parse("3/minute"), prefix, "10.0.0.1", "route")
        self.assertEqual(get(app).status_code, 200)

    def test_moving_window(self):
        self.check_sequence("rl-moving-window", "SLIDING_LOG")

    def test_fixed_window(self):
        self.check_sequence("rl-fixed-window", "FIXED_WINDOW")

    def test_cost(self):
        app, _, _ = make_app("rl-moving-window", "5/minute", server_headers=True, cost=2)
        got = [get(app) for _ in range(3)]
        self.assertEqual([r.status_code for r in got], [200, 200, 429])
        self.assertEqual(got[2].headers["X-RateLimit-Remaining"], "1")

    def test_wrong_storage_refused(self):
        with self.assertRaises(TypeError):
            rl_limits.RLMovingWindowRateLimiter(storage_from_string("memory://"))


class StockStrategyTest(unittest.TestCase):
    """limits' own strategies over the rl storage, Flask-Limiter's own headers."""

    def check_sequence(self, strategy):
        app, _, _ = make_app(strategy, "3/minute", server_headers=False, headers_enabled=True)
        got = [get(app) for _ in range(4)]
        self.assertEqual([r.status_code for r in got], [200, 200, 200, 429])
        self.assertEqual([r.headers["X-RateLimit-Remaining"] for r in got], ["2", "1", "0", "0"])
        self.assertEqual(got[0].headers["X-RateLimit-Limit"], "3")

    def test_moving_window(self):
        self.check_sequence("moving-window")

    def test_fixed_window(self):
        self.check_sequence("fixed-window")

    def test_elastic_expiry_refused(self):
        app, _, _ = make_app("fixed-window-elastic-expiry", "3/minute", server_headers=False)
        with self.assertRaises(NotImplementedError):
            get(app)


class ConcurrencyTest(unittest.TestCase):
    """The seed scenario: limit 5, 8 parallel requests -> exactly 5 pass."""

    def run_parallel(self, strategy, server_headers):
        app, _, _ = make_app(strategy, "5/minute", server_headers=server_headers)
        codes, lock, start = [], threading.Lock(), threading.Barrier(8)

        def worker():
            client = app.test_client()
            start.wait()
            code = client.get("/r", environ_base={"REMOTE_ADDR": "10.0.0.9"}).status_code
            with lock:
                codes.append(code)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(sorted(codes), [200] * 5 + [429] * 3)

    def test_all(self):
        for strategy, server_headers in [("rl-moving-window", True), ("rl-fixed-window", True),
                                         ("moving-window", False), ("fixed-window", False)]:
            with self.subTest(strategy=strategy):
                self.run_parallel(strategy, server_headers)


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""The `rl://host:port` storage for `limits` (and so for Flask-Limiter): every decision is one
RL.CHECK on rl-server or on Redis with rl.so, made atomically by the server.

`limits` registers a storage scheme when a `Storage` subclass with STORAGE_SCHEME is defined, so
importing this module is what makes `storage_from_string("rl://127.0.0.1:6380")` work.

With `limits`' own strategies the storage answers in the shape they expect:
- moving-window: `acquire_entry` is RL.CHECK ... SLIDING_LOG (the decision, 1 round trip);
  `get_moving_window` is RL.PEEK (1 more, only when asked for stats or `test`).
- fixed-window: `incr` is RL.CHECK ... FIXED_WINDOW and returns the count the window would hold
  after this hit, so `limits`' own `count <= limit` comparison repeats rl's decision instead of
  making one; `get` and `get_expiry` are one RL.PEEK each. `limits` does not pass the limit to
  `incr`, `get` or `get_expiry`; it is read back from the key, which `limits` builds as
  `.../<amount>/<multiples>/<granularity>` (RateLimitItem.key_for).
The rl strategies (strategies.py) make one RL.CHECK with HEADERS per hit instead.
"""
import time
import urllib.parse

import redis
from limits.limits import TIME_TYPES
from limits.storage import MovingWindowSupport, Storage

MOVING = "SLIDING_LOG"
FIXED = "FIXED_WINDOW"


class Decision:
    """One RL.CHECK / RL.PEEK reply (docs/replies.md), fields as the server computed them."""

    __slots__ = ("allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms", "headers")

    def __init__(self, reply):
        self.allowed = reply[0] == 1
        self.limit, self.remaining, self.retry_after_ms, self.reset_after_ms = reply[1:5]
        flat = reply[5] if len(reply) > 5 else []
        # (name, value) pairs in the server's order, ready to copy onto a response.
        self.headers = [(_text(flat[i]), _text(flat[i + 1])) for i in range(0, len(flat) - 1, 2)]

    def __repr__(self):
        return (f"Decision(allowed={self.allowed}, limit={self.limit}, "
                f"remaining={self.remaining}, retry_after_ms={self.retry_after_ms}, "
                f"reset_after_ms={self.reset_after_ms})")


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def window_arg(seconds):
    """A window in the contract's syntax (a bare number is not a window)."""
    return f"{int(seconds)}s"


def limit_from_key(key):
    """(amount, window seconds) of a key built by RateLimitItem.key_for."""
    try:
        _, amount, multiples, granularity = key.rsplit("/", 3)
        return int(amount), int(multiples) * TIME_TYPES[granularity].seconds
    except (ValueError, KeyError):
        raise ValueError(f"not a limits key (.../amount/multiples/granularity): {key!r}") from None


class RLStorage(Storage, MovingWindowSupport):
    """Rate limit storage in rl. URI: `rl://[:password@]host:port`; further keyword options
    (socket_timeout, socket_connect_timeout, ...) go to redis.Redis."""

    STORAGE_SCHEME = ["rl"]

    def __init__(self, uri, **options):
        super().__init__(uri, **options)
        parsed = urllib.parse.urlparse(uri)
        self.client = redis.Redis(
            host=parsed.hostname or "127.0.0.1",
            port=parsed.port or 6380,
            username=urllib.parse.unquote(parsed.username) if parsed.username else None,
            password=urllib.parse.unquote(parsed.password) if parsed.password else None,
            **options,
        )

    # The contract, one command each.
    def decide(self, command, key, algorithm, amount, expiry, cost, headers=False):
        args = [command, key, algorithm, amount, window_arg(expiry), "COST", cost]
        if headers:
            args.append("HEADERS")
        return Decision(self.client.execute_command(*args))

    def reset_limit(self, key, *limits):
        """RL.RESET of (algorithm, amount, window seconds) limits; returns the states removed."""
        args = ["RL.RESET", key]
        for algorithm, amount, expiry in limits:
            args += [algorithm, amount, window_arg(expiry)]
        return int(self.client.execute_command(*args))

    # limits.storage.Storage
    def incr(self, key, expiry, elastic_expiry=False, amount=1):
        if elastic_expiry:
            raise NotImplementedError("rl has no elastic-expiry window (fixed or moving only)")
        limit, _ = limit_from_key(key)
        d = self.decide("RL.CHECK", key, FIXED, limit, expiry, amount)
        # Allowed: what the window holds now. Denied (nothing consumed): what it would hold with
        # this hit, which is above the limit exactly when rl denied.
        return d.limit - d.remaining + (0 if d.allowed else amount)

    def get(self, key):
        limit, expiry = limit_from_key(key)
        d = self.decide("RL.PEEK", key, FIXED, limit, expiry, 0)
        return d.limit - d.remaining

    def get_expiry(self, key):
        limit, expiry = limit_from_key(key)
        d = self.decide("RL.PEEK", key, FIXED, limit, expiry, 0)
        return time.time() + d.reset_after_ms / 1000

    def check(self):
        try:
            return bool(self.client.ping())
        except redis.RedisError:
            return False

    def reset(self):
        # rl keeps no list of limits' keys to flush; Flask-Limiter's reset() logs this.
        raise NotImplementedError("rl resets one key's limit at a time (clear)")

    def clear(self, key):
        limit, expiry = limit_from_key(key)
        self.reset_limit(key, (FIXED, limit, expiry), (MOVING, limit, expiry))

    # limits.storage.MovingWindowSupport
    def acquire_entry(self, key, limit, expiry, amount=1):
        return self.decide("RL.CHECK", key, MOVING, limit, expiry, amount).allowed

    def get_moving_window(self, key, limit, expiry):
        d = self.decide("RL.PEEK", key, MOVING, limit, expiry, 0)
        # limits reads the reset as start + expiry: start is placed so that this is rl's reset.
        return time.time() + d.reset_after_ms / 1000 - expiry, d.limit - d.remaining

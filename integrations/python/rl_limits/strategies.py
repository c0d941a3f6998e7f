"""Strategies for `limits` that let rl decide and answer in one round trip: each hit is one
RL.CHECK with HEADERS, whose reply (the decision and the server's header values) is kept for the
caller (rl_limits.flask copies its headers onto the response).

Registered in limits.strategies.STRATEGIES, which Flask-Limiter reads for its `strategy` option:
    "rl-moving-window"  SLIDING_LOG (exact: no trailing window holds more than the limit)
    "rl-fixed-window"   FIXED_WINDOW (the window starts at its first hit)
They need an rl:// storage.
"""
import threading
import time

from limits.strategies import STRATEGIES, FixedWindowRateLimiter, MovingWindowRateLimiter

from .storage import FIXED, MOVING, RLStorage

# A thread keeps the decisions of its latest hits until they are taken (rl_limits.flask takes
# them at the end of each request); outside Flask the oldest are dropped past this many.
_KEPT_DECISIONS = 32


class _RLStrategy:
    ALGORITHM = ""

    def __init__(self, storage):
        if not isinstance(storage, RLStorage):
            raise TypeError(f"{type(self).__name__} needs an rl:// storage, not "
                            f"{type(storage).__name__}")
        super().__init__(storage)
        self._rl = storage
        self._local = threading.local()

    def _decide(self, command, item, identifiers, cost, headers=False):
        key = item.key_for(*identifiers)
        return key, self._rl.decide(command, key, self.ALGORITHM, item.amount, item.get_expiry(),
                                    cost, headers)

    def hit(self, item, *identifiers, cost=1):
        key, d = self._decide("RL.CHECK", item, identifiers, cost, headers=True)
        kept = self._kept()
        kept.pop(key, None)
        kept[key] = d
        while len(kept) > _KEPT_DECISIONS:
            kept.pop(next(iter(kept)))
        return d.allowed

    def test(self, item, *identifiers):
        return self._decide("RL.PEEK", item, identifiers, 1)[1].allowed

    def get_window_stats(self, item, *identifiers):
        d = self._decide("RL.PEEK", item, identifiers, 0)[1]
        return time.time() + d.reset_after_ms / 1000, d.remaining

    def clear(self, item, *identifiers):
        self._rl.reset_limit(item.key_for(*identifiers),
                             (self.ALGORITHM, item.amount, item.get_expiry()))

    def hit_decision(self, key):
        """The decision of this thread's latest hit on `key` (not yet taken), or None."""
        return self._kept().get(key)

    def take_decisions(self):
        """This thread's kept decisions by key; forgets them."""
        kept = self._kept()
        self._local.kept = {}
        return kept

    def _kept(self):
        if not hasattr(self._local, "kept"):
            self._local.kept = {}
        return self._local.kept


class RLMovingWindowRateLimiter(_RLStrategy, MovingWindowRateLimiter):
    ALGORITHM = MOVING


class RLFixedWindowRateLimiter(_RLStrategy, FixedWindowRateLimiter):
    ALGORITHM = FIXED


STRATEGIES["rl-moving-window"] = RLMovingWindowRateLimiter
STRATEGIES["rl-fixed-window"] = RLFixedWindowRateLimiter

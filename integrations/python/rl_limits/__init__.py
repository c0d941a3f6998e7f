"""rl for `limits` and Flask-Limiter: importing this package registers the `rl://` storage
scheme and the "rl-moving-window" / "rl-fixed-window" strategies (see README.md)."""
from .storage import Decision, RLStorage
from .strategies import RLFixedWindowRateLimiter, RLMovingWindowRateLimiter

__all__ = ["Decision", "RLStorage", "RLFixedWindowRateLimiter", "RLMovingWindowRateLimiter"]

"""Flask-Limiter glue: the response carries the header values rl computed for this request's
decision (RL.CHECK ... HEADERS), not values Flask-Limiter derives from further storage calls.

    limiter = Limiter(get_remote_address, app=app, storage_uri="rl://127.0.0.1:6380",
                      strategy="rl-moving-window")
    rl_limits.flask.server_headers(app, limiter)

Leave Flask-Limiter's own headers off (RATELIMIT_HEADERS_ENABLED, its default): it would add a
second set computed on the client.
"""
from .strategies import _RLStrategy


def server_headers(app, limiter):
    """Copies the headers of the decision behind `limiter.current_limit` (the limit Flask-Limiter
    reports for this request: the one that denied, else the first it checked) onto every
    response, 429 included. Costs no round trip: the values came with the hit."""
    if getattr(limiter, "_headers_enabled", False):
        raise ValueError("turn Flask-Limiter's headers off: rl's server headers replace them")

    def strategy():
        try:
            s = limiter.limiter
        except AssertionError:  # not initialised for this app
            return None
        return s if isinstance(s, _RLStrategy) else None  # e.g. the in-memory fallback

    @app.after_request
    def _copy_server_headers(response):
        s = strategy()
        if s is None:
            return response
        decisions = s.take_decisions()
        current = limiter.current_limit
        d = decisions.get(current.key) if current is not None else None
        if d is not None:
            for name, value in d.headers:
                response.headers[name] = value
        return response

    @app.teardown_request
    def _forget(_exc):
        s = strategy()
        if s is not None:
            s.take_decisions()

    return limiter

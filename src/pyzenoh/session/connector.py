"""When and how long a session (re)connects: zenoh 1.10.2's ``connect`` settings.

Measured against eclipse-zenoh 1.10.2 (and as its ``orchestrator.rs`` reads them):

- ``connect/timeout_ms`` (client 0, peer -1): how long ``open()`` retries. 0: every
  endpoint is tried once. A client then fails at once, whatever
  ``connect/exit_on_failure`` says (that key does not apply to a client's open); with a
  timeout it retries with the backoff below and fails when the timeout is over (-1: it
  waits forever). A peer whose endpoint fails with timeout 0 fails only with
  ``exit_on_failure`` (else it opens without that link, not retried); with a timeout,
  ``exit_on_failure`` makes open() wait for the endpoint (bounded by the timeout), and
  without it the endpoint is retried in the background.
- ``connect/retry`` ``period_init_ms`` (1000), ``period_max_ms`` (4000),
  ``period_increase_factor`` (2), or per endpoint after ``#``
  (``retry_period_init_ms=..;retry_period_max_ms=..;retry_period_increase_factor=..;
  exit_on_failure=..``): the waits between attempts, 1 s, 2 s, 4 s, 4 s ...
  A negative ``period_init_ms`` never retries.
- After open, a link that was lost (the router killed and restarted) is retried at once,
  then with the same backoff, forever, until the session closes; a client tries all its
  endpoints and takes the first that answers, a peer retries the endpoint it had.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyzenoh.errors import UsageError
from pyzenoh.session.config import Config
from pyzenoh.transport.endpoint import Endpoint

#: A zero period would retry in a hot loop: attempts are at least this far apart.
MIN_PERIOD_S = 0.01


@dataclass(frozen=True, slots=True)
class RetryConf:
    exit_on_failure: bool
    period_init_ms: int
    period_max_ms: int
    period_increase_factor: float

    @property
    def retries(self) -> bool:
        return self.period_init_ms >= 0

    def period(self) -> RetryPeriod:
        return RetryPeriod(self)


class RetryPeriod:
    """The waits between attempts (zenoh's ConnectionRetryPeriod)."""

    __slots__ = ("conf", "delay_ms")

    def __init__(self, conf: RetryConf) -> None:
        self.conf = conf
        self.delay_ms = conf.period_init_ms

    def next_s(self) -> float | None:
        """The wait before the next attempt (None: never again)."""
        conf = self.conf
        if conf.period_init_ms < 0:
            return None
        wait = self.delay_ms / 1000.0
        self.delay_ms = int(self.delay_ms * conf.period_increase_factor)
        if conf.period_max_ms > 0 and self.delay_ms > conf.period_max_ms:
            self.delay_ms = conf.period_max_ms
        return max(wait, MIN_PERIOD_S)


def retry_conf(config: Config, endpoint: str) -> RetryConf:
    """``connect/retry`` and ``connect/exit_on_failure`` for ``endpoint`` (its ``#``
    settings override them)."""
    init, top, factor = config.connect_retry
    exit_on_failure = config.connect_exit_on_failure
    params = dict(Endpoint.parse(endpoint).params) if endpoint.startswith(("tcp/", "tls/")) else {}
    try:
        if "exit_on_failure" in params:
            exit_on_failure = params["exit_on_failure"].strip().lower() == "true"
        init = int(params.get("retry_period_init_ms", init))
        top = int(params.get("retry_period_max_ms", top))
        factor = float(params.get("retry_period_increase_factor", factor))
    except ValueError as exc:
        raise UsageError(f"endpoint {endpoint!r}: bad retry setting: {exc}") from None
    return RetryConf(exit_on_failure, init, top, factor)


def open_timeout_s(config: Config) -> float | None:
    """``connect/timeout_ms`` in seconds: 0.0 (one try), None (forever) or the bound."""
    ms = config.connect_timeout_ms
    return None if ms < 0 else ms / 1000.0

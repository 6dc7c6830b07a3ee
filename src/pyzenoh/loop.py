"""The event loop the router runs on: uvloop's when it is installed (the ``fast`` extra,
which ``make setup`` installs), else asyncio's own. ``PYZENOH_EVENT_LOOP=asyncio`` (or
``uvloop``) chooses explicitly; asking for uvloop when it is missing falls back to
asyncio with a warning.

A router with a TLS endpoint runs on asyncio's loop unless uvloop is asked for by name:
uvloop's ``start_tls`` (0.23) hands a paused connection's ClientHello to the plaintext
protocol instead of the TLS layer, so server-side handshakes never finish on it.

Chosen by measurement (docs/performance.md): on this project's 2-core machine, ping-pong
through the router is about 10% faster on uvloop and its p99 much lower (a C loop: no
Python ``_run_once``/selector calls per wake-up); throughput at 8-byte PUTs is the same
within the machine's noise since a read's small batches are joined into runs
(dataplane/joining.py), and at 1 KiB PUTs about 7% higher since a whole batch is written
at once (tcp.py), with a peak RSS of 47 against 44 MiB.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)

#: Environment variable choosing the loop: "auto" (the default: uvloop when installed),
#: "uvloop" or "asyncio".
ENV = "PYZENOH_EVENT_LOOP"
CHOICES = ("auto", "uvloop", "asyncio")


def loop_factory(*, tls: bool = False) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new event loop, as :data:`ENV` says (``tls``: TLS endpoints are used,
    which "auto" keeps on asyncio's loop)."""
    choice = os.environ.get(ENV, "auto").lower()
    if choice not in CHOICES:
        log.warning("%s=%s is none of %s: using auto", ENV, choice, ", ".join(CHOICES))
        choice = "auto"
    if choice == "auto" and tls:
        log.info("TLS endpoints: running on asyncio's event loop")
        choice = "asyncio"
    if choice != "asyncio":
        try:  # an optional dependency: typed the same whether it is installed or not
            uvloop = importlib.import_module("uvloop")
        except ImportError:
            if choice == "uvloop":
                log.warning("%s=uvloop but uvloop is not installed: using asyncio", ENV)
        else:
            factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
            return factory
    return asyncio.new_event_loop


def run(main: Coroutine[Any, Any, T], *, tls: bool = False) -> T:
    """:func:`asyncio.run` on the chosen loop (see :func:`loop_factory`)."""
    with asyncio.Runner(loop_factory=loop_factory(tls=tls)) as runner:
        return runner.run(main)

"""The event loop the router runs on: asyncio's own, or uvloop with
``PYZENOH_EVENT_LOOP=uvloop`` when uvloop is installed (``pip install uvloop``).

Chosen by measurement (README, Performance): on this project's 2-core machine the router
used more CPU per routed message on uvloop than on asyncio's selector loop (1.65 against
1.1-1.3 µs at 8-byte PUTs, runs of PUSHes routed as units), so asyncio is the default
and uvloop an option to measure again on other machines. A missing uvloop falls back to
asyncio with a warning.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: Environment variable choosing the loop: "asyncio" (the default) or "uvloop".
ENV = "PYZENOH_EVENT_LOOP"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new event loop: uvloop's when :data:`ENV` asks for it and it is installed."""
    if os.environ.get(ENV, "asyncio").lower() == "uvloop":
        try:  # an optional dependency: typed the same whether it is installed or not
            uvloop = importlib.import_module("uvloop")
        except ImportError:
            logging.getLogger(__name__).warning("%s=uvloop but uvloop is not installed: using asyncio", ENV)
        else:
            factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
            return factory
    return asyncio.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """:func:`asyncio.run` on the chosen loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)

"""The event loop pyzenoh's daemons and sessions run on: uvloop when it is installed
(``pip install pyzenoh[fast]``), asyncio's own otherwise.

uvloop runs the same asyncio code with its loop, sockets and transports in C; measured on
the router, it cuts the time spent outside pyzenoh's own code per batch (see README,
Performance). ``PYZENOH_EVENT_LOOP=asyncio`` forces asyncio's loop (to compare, or to
rule uvloop out when debugging).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: Environment variable choosing the loop: "uvloop" (the default when installed) or "asyncio".
ENV = "PYZENOH_EVENT_LOOP"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new event loop: uvloop's when installed and not refused by :data:`ENV`."""
    if os.environ.get(ENV, "uvloop").lower() != "asyncio":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.new_event_loop
    return asyncio.new_event_loop


def loop_name() -> str:
    """"uvloop" or "asyncio": the loop :func:`run` and :func:`new_event_loop` use."""
    return "asyncio" if loop_factory() is asyncio.new_event_loop else "uvloop"


def new_event_loop() -> asyncio.AbstractEventLoop:
    return loop_factory()()


def run(main: Coroutine[Any, Any, T]) -> T:
    """:func:`asyncio.run` on the chosen loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)

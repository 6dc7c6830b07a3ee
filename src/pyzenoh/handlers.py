"""zenoh-python's ``zenoh.handlers``: how received items reach user code.

``Handler`` is what a channel handler returns (``recv``, ``try_recv``, iteration);
``DefaultHandler``, ``FifoChannel`` and ``RingChannel`` choose a channel, ``Callback``
wraps a callable with an optional ``drop``. See :mod:`pyzenoh.session.handlers`.
"""

from pyzenoh.session.handlers import (
    Callback,
    DefaultHandler,
    FifoChannel,
    Handler,
    RingChannel,
)

__all__ = ["Callback", "DefaultHandler", "FifoChannel", "Handler", "RingChannel"]

"""The blocking API, shaped like eclipse-zenoh's Python API.

``pyzenoh.session.open(config)`` returns a :class:`Session`; its event loop runs in a
background thread. Callbacks run in one dispatcher thread per session (so they may block
or call the session again); channel handlers are read from any thread.

Differences from zenoh-python worth knowing: declared entities live until they are
undeclared or the session closes (dropping the Python object does not undeclare them);
``recv`` on channels accepts an optional ``timeout``. A client whose router goes away
reconnects and re-declares everything (see :mod:`pyzenoh.session.connector`); a peer
listens on ``listen/endpoints``.

The modules: :mod:`.session` (``open``, :class:`Session`, its liveliness namespace),
:mod:`.publisher` and :mod:`.querier`, :mod:`.entities` (subscribers, queryables,
listeners, tokens), :mod:`.session_info` (``Session.info``) and :mod:`.arguments` (the
argument checks and conversions the asyncio API shares).
"""

from __future__ import annotations

from pyzenoh.session.api.arguments import (
    CALL_TIMEOUT_S,
    attach_token,
    block_of,
    cancel_in,
    check_token,
    consolidation_of,
    del_body,
    get_call,
    locality_of,
    prio_of,
    put_body,
    selector_of,
    source_info_of,
    target_of,
    timeout_of,
    timestamp_of,
    ts_stack_of,
)
from pyzenoh.session.api.entities import (
    LinkEventsListener,
    LivelinessToken,
    MatchingListener,
    Queryable,
    Subscriber,
    TransportEventsListener,
)
from pyzenoh.session.api.publisher import Publisher, PublisherSettings, PublisherState
from pyzenoh.session.api.querier import Querier, QuerierSettings
from pyzenoh.session.api.session import Liveliness, Session, open
from pyzenoh.session.api.session_info import SessionInfo

__all__ = [
    "CALL_TIMEOUT_S",
    "LinkEventsListener",
    "Liveliness",
    "LivelinessToken",
    "MatchingListener",
    "Publisher",
    "PublisherSettings",
    "PublisherState",
    "Querier",
    "QuerierSettings",
    "Queryable",
    "Session",
    "SessionInfo",
    "Subscriber",
    "TransportEventsListener",
    "attach_token",
    "block_of",
    "cancel_in",
    "check_token",
    "consolidation_of",
    "del_body",
    "get_call",
    "locality_of",
    "open",
    "prio_of",
    "put_body",
    "selector_of",
    "source_info_of",
    "target_of",
    "timeout_of",
    "timestamp_of",
    "ts_stack_of",
]

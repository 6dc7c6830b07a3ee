"""Dialling a link of any kind: ``tcp/``, ``tls/``, ``udp/``, ``ws/``, ``unixsock-stream/``
and ``quic/`` endpoints each open their carrier, then the same :class:`TcpLink` runs the
opener's Zenoh handshake over it; both steps are bounded by the handshake timeout."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from pyzenoh.security.tls import TlsConfig
from pyzenoh.transport.endpoint import Endpoint, LinkTls, config_for_kind, prepare_tls
from pyzenoh.transport.link import LinkConfig, ReassemblyBudget, Role
from pyzenoh.transport.quic import QUIC, open_quic, quic_configuration
from pyzenoh.transport.tcp import DEFAULT_MAX_QUEUE_BYTES, EventCallback, TcpLink
from pyzenoh.transport.unixsock import UNIXSOCK

__all__ = ["connect"]


async def connect(
    endpoint: str | Endpoint,
    config: LinkConfig,
    on_event: EventCallback | None = None,
    *,
    max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
    keep_raw: bool = True,
    reassembly_budget: ReassemblyBudget | None = None,
    tls: TlsConfig | None = None,
) -> TcpLink:
    """Connect to ``endpoint`` and run the opener handshake; returns an established link.

    Raises :class:`ConnectionError` (or :class:`OSError`, e.g. :class:`ssl.SSLError` for a
    server certificate that does not verify) when the connection or the handshake fails;
    both are bounded by ``config.handshake_timeout_s``. A ``tls/`` endpoint uses ``tls``
    (zenohd's transport/link/tls settings); :class:`UsageError` if they cannot work.
    """
    ep = endpoint if isinstance(endpoint, Endpoint) else Endpoint.parse(endpoint)
    timeout = config.handshake_timeout_s
    link_tls = prepare_tls(ep, tls, server_side=False, default_timeout_s=timeout)  # tls/ only
    config = config_for_kind(ep, config)

    def factory() -> TcpLink:
        return TcpLink(
            config,
            Role.OPENER,
            on_event,
            max_queue_bytes=max_queue_bytes,
            keep_raw=keep_raw,
            reassembly_budget=reassembly_budget,
            tls=link_tls,
        )

    link: TcpLink
    if ep.protocol == QUIC:
        qtls = tls.for_endpoint(ep.params, str(ep)) if tls is not None else None
        conf = quic_configuration(qtls, server_side=False, server_name=ep.host)
        conn = await open_quic(ep.host, ep.port, conf, timeout)
        link = factory()
        conn.attach(link, conn._quic.get_next_available_stream_id())
    elif ep.protocol == "ws":
        from pyzenoh.transport.ws import ws_connect  # ws.py builds on TcpLink

        link = await ws_connect(ep, factory, timeout)
    else:
        _, link = await asyncio.wait_for(_open_stream(ep, factory, link_tls), timeout)
    try:
        await asyncio.wait_for(asyncio.shield(link.established), timeout)
    except BaseException:
        link.abort()
        raise
    return link


def _open_stream(
    ep: Endpoint, factory: Callable[[], TcpLink], link_tls: LinkTls | None
) -> Coroutine[Any, Any, tuple[asyncio.BaseTransport, TcpLink]]:
    """The carrier of a tcp/, tls/, unixsock-stream/ or udp/ link, with its TcpLink."""
    loop = asyncio.get_running_loop()
    if ep.protocol == UNIXSOCK:
        return loop.create_unix_connection(factory, ep.host)
    if ep.protocol == "udp":
        from pyzenoh.transport.udp import open_udp  # udp.py builds on the TCP link

        return open_udp(ep, factory)
    if link_tls is None:
        return loop.create_connection(factory, ep.host, ep.port)
    # server_hostname: the name checked (verify_name_on_connect) and sent as SNI
    return loop.create_connection(
        factory,
        ep.host,
        ep.port,
        ssl=link_tls.context,
        server_hostname=ep.host,
        ssl_handshake_timeout=link_tls.handshake_timeout_s,
    )

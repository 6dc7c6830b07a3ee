"""Listening for links of any kind: each accepted connection (or, for ``udp/``, each new
source address; for ``quic/``, each connection's first stream) becomes a :class:`TcpLink`
running the acceptor's Zenoh handshake, admitted by the owner's limits first."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable

from pyzenoh.security.tls import TlsConfig
from pyzenoh.transport.endpoint import Endpoint, config_for_kind, prepare_tls
from pyzenoh.transport.link import LinkConfig, ReassemblyBudget, Role
from pyzenoh.transport.quic import QUIC, QuicAcceptor, quic_configuration, serve_quic
from pyzenoh.transport.tcp import DEFAULT_MAX_QUEUE_BYTES, EventCallback, TcpLink
from pyzenoh.transport.unixsock import UNIXSOCK, remove_socket_file, replace_stale_socket

__all__ = ["LISTEN_BACKLOG", "TcpListener", "listen"]

#: Connections the kernel queues before they are accepted (zenohd's TCP listeners: 1024).
LISTEN_BACKLOG = 1024


class TcpListener:
    """A listening socket whose accepted connections run the acceptor role."""

    def __init__(
        self,
        server: asyncio.Server | QuicAcceptor,
        links: set[TcpLink],
        endpoint: Endpoint | None = None,
    ) -> None:
        #: A quic/ listener's is a :class:`QuicAcceptor` (close() stops taking links).
        self.server = server
        self.links = links
        self.endpoint = endpoint

    @property
    def endpoints(self) -> list[Endpoint]:
        """The bound endpoints (with the real port when 0 was asked for).

        A TLS listener keeps the host as configured (a name stays a name), as zenohd's
        TLS locators do: a client reaching it by that locator can verify the name.
        """
        ep = self.endpoint
        if isinstance(self.server, QuicAcceptor):
            return [Endpoint(self.server.address[0], self.server.address[1], QUIC)]
        if ep is not None and ep.protocol == UNIXSOCK:
            return [ep]
        if ep is not None and ep.protocol == "tls":
            ports = dict.fromkeys(s.getsockname()[1] for s in self.server.sockets)
            return [Endpoint(ep.host, port, "tls") for port in ports]
        return [Endpoint(s.getsockname()[0], s.getsockname()[1]) for s in self.server.sockets]

    async def close(self, close_links: bool = True) -> None:
        self.server.close()
        if close_links:
            for link in list(self.links):
                await link.aclose()
        if isinstance(self.server, QuicAcceptor):
            self.server.shutdown()
        await self.server.wait_closed()
        if self.endpoint is not None and self.endpoint.protocol == UNIXSOCK:
            remove_socket_file(self.endpoint.host)


async def listen(
    endpoint: str | Endpoint,
    config: LinkConfig,
    on_event: EventCallback | None = None,
    *,
    on_accept: Callable[[TcpLink], None] | None = None,
    max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
    keep_raw: bool = True,
    admit: Callable[[TcpLink], bool] | None = None,
    reassembly_budget: ReassemblyBudget | None = None,
    tls: TlsConfig | None = None,
    reuse_port: bool = False,
) -> TcpListener:
    """Listen on ``endpoint``; each connection becomes a :class:`TcpLink` (acceptor).

    ``reuse_port``: SO_REUSEPORT on a tcp/, tls/ or ws/ listener, so several processes
    listen on the same address and the kernel spreads connections over them
    (``--workers``); other kinds ignore it.

    ``on_event(link, event)`` sees every link's :class:`Established`, :class:`Received`
    and :class:`LinkClosed` events (a failed TLS handshake is a LinkClosed before any
    Established). A ``tls/`` endpoint needs ``tls`` with a certificate and key
    (:class:`UsageError` otherwise, before anything listens); its TLS handshakes are
    bounded by ``config.handshake_timeout_s`` (unless the endpoint sets its own).
    """
    ep = endpoint if isinstance(endpoint, Endpoint) else Endpoint.parse(endpoint)
    loop = asyncio.get_running_loop()
    links: set[TcpLink] = set()
    quic_conf = None
    if ep.protocol == QUIC:
        qtls = tls.for_endpoint(ep.params, str(ep)) if tls is not None else None
        quic_conf = quic_configuration(qtls, server_side=True, server_name=None)
    link_tls = prepare_tls(ep, tls, server_side=True, default_timeout_s=config.handshake_timeout_s)
    config = config_for_kind(ep, config)

    def factory() -> TcpLink:
        link = TcpLink(
            config,
            Role.ACCEPTOR,
            on_event,
            max_queue_bytes=max_queue_bytes,
            keep_raw=keep_raw,
            admit=admit,
            reassembly_budget=reassembly_budget,
            tls=link_tls,
        )
        links.add(link)
        # forgotten once closed (a callback of its own: events go straight to on_event)
        link.closed.add_done_callback(lambda _: links.discard(link))
        if on_accept is not None:
            on_accept(link)
        return link

    if ep.protocol == "udp":
        from pyzenoh.transport.udp import listen_udp  # udp.py builds on the TCP link

        return await listen_udp(ep, factory, links)
    if quic_conf is not None:
        return TcpListener(await serve_quic(ep.host, ep.port, quic_conf, factory), links, ep)
    if ep.protocol == "ws":
        from pyzenoh.transport.ws import ws_listen  # ws.py builds on TcpLink

        return await ws_listen(ep, factory, links, config.handshake_timeout_s, reuse_port)  # type: ignore[return-value]
    if ep.protocol == UNIXSOCK:
        await replace_stale_socket(ep.host)
        server = await loop.create_unix_server(factory, ep.host, backlog=LISTEN_BACKLOG)
    elif _ipv6_unspecified(ep.host) and socket.has_dualstack_ipv6():
        # As zenohd: a listener on [::] takes IPv4 connections too (asyncio's would be
        # IPv6 only). Their local address is then IPv4-mapped (::ffff:a.b.c.d).
        sock = socket.create_server(
            (ep.host, ep.port),
            family=socket.AF_INET6,
            backlog=LISTEN_BACKLOG,
            dualstack_ipv6=True,
            reuse_port=reuse_port,
        )
        server = await loop.create_server(factory, sock=sock)
    else:
        server = await loop.create_server(
            factory, ep.host, ep.port, reuse_address=True, reuse_port=reuse_port or None, backlog=LISTEN_BACKLOG
        )
    return TcpListener(server, links, ep)


def _ipv6_unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host) == ipaddress.IPv6Address("::")
    except ValueError:
        return False

"""Endpoints (``tcp/HOST:PORT``, ``tls/HOST:PORT``, ``udp/HOST:PORT``) and what a link on one needs.

:class:`Endpoint` parses zenoh's endpoint syntax; :func:`prepare_tls` turns a ``tls/``
endpoint and the TLS configuration (:mod:`pyzenoh.security.tls`) into the context and
settings its links use (:class:`LinkTls`).
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from typing_extensions import override

from pyzenoh.errors import UsageError
from pyzenoh.security.tls import DEFAULT_HANDSHAKE_TIMEOUT_S, TlsConfig
from pyzenoh.transport.link import LinkConfig
from pyzenoh.transport.link.qos import from_metadata

log = logging.getLogger(__name__)

DEFAULT_PORT = 7447
#: The link protocols of ``Endpoint.parse``.
PROTOCOLS = ("tcp", "tls", "unixsock-stream", "udp", "quic", "ws")


def dialable(locators: Iterable[str]) -> list[str]:
    """The locators (a HELLO's, a link state's) of a link kind this node can dial, in
    their order."""
    return [loc for loc in locators if loc.split("/", 1)[0] in PROTOCOLS]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A parsed ``tcp/HOST:PORT``, ``tls/HOST:PORT`` or ``unixsock-stream/PATH`` endpoint
    (the path is kept in ``host``, ``port`` is 0).

    The metadata after ``?`` (``prio``, ``rel``: the link's QoS, transport/link/qos.py) is
    kept in ``metadata``, the configuration after ``#`` (zenoh's ``key=value;key=value``)
    in ``params`` (TLS reads it, see security/tls.py); neither is part of the locator
    (``str``) nor of equality.
    """

    host: str
    port: int
    protocol: str = "tcp"
    params: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    metadata: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        proto, sep, rest = text.partition("/")
        if not sep or proto not in PROTOCOLS:
            raise UsageError(
                f"unsupported endpoint {text!r}: only tcp/HOST:PORT, tls/HOST:PORT, udp/HOST:PORT, quic/HOST:PORT, ws/HOST:PORT"
                " and unixsock-stream/PATH are implemented"
            )
        rest, _, config = rest.partition("#")
        rest, _, meta = rest.partition("?")
        params = tuple((k, v) for k, _, v in (p.partition("=") for p in config.split(";")) if k)
        metadata = tuple((k, v) for k, _, v in (p.partition("=") for p in meta.split(";")) if k)
        if proto == "unixsock-stream":
            # the path is the whole address (kept in host; no port)
            if not rest:
                raise UsageError(f"endpoint {text!r} has no socket path")
            return cls(rest, 0, proto, params, metadata)
        if rest.startswith("["):
            host, bracket, tail = rest[1:].partition("]")
            if not bracket or not tail.startswith(":"):
                raise UsageError(f"bad IPv6 endpoint {text!r}: expected {proto}/[ADDR]:PORT")
            port_text = tail[1:]
        else:
            host, colon, port_text = rest.rpartition(":")
            if not colon or ":" in host:
                raise UsageError(f"bad endpoint {text!r}: expected {proto}/HOST:PORT (IPv6 in brackets)")
        if not host:
            raise UsageError(f"endpoint {text!r} has no host")
        try:
            port = int(port_text)
        except ValueError:
            raise UsageError(f"endpoint {text!r} has a bad port") from None
        if not 0 <= port <= 0xFFFF:
            raise UsageError(f"endpoint {text!r}: port out of range")
        return cls(host, port, proto, params, metadata)

    @override
    def __str__(self) -> str:
        if self.protocol == "unixsock-stream":
            return f"{self.protocol}/{self.host}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.protocol}/{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class LinkTls:
    """What one TLS link needs: its context and the settings of its endpoint."""

    context: ssl.SSLContext
    handshake_timeout_s: float
    close_link_on_expiration: bool = False
    so_sndbuf: int | None = None
    so_rcvbuf: int | None = None


def prepare_tls(
    endpoint: Endpoint, tls: TlsConfig | None, *, server_side: bool, default_timeout_s: float | None = None
) -> LinkTls | None:
    """The TLS side of links on ``endpoint`` (None for tcp/); :class:`UsageError` when the
    configuration cannot work (a missing file, bad PEM, a listener without certificate).

    The handshake timeout is the endpoint's ``tls_handshake_timeout_ms``, else
    ``default_timeout_s`` (the router passes its accept_timeout), else zenohd's 10 s.
    """
    if endpoint.protocol != "tls":
        return None
    cfg = (tls or TlsConfig()).for_endpoint(endpoint.params, str(endpoint))
    context = cfg.server_context() if server_side else cfg.client_context()
    timeout = cfg.handshake_timeout_s or default_timeout_s or DEFAULT_HANDSHAKE_TIMEOUT_S
    return LinkTls(context, timeout, cfg.flag("close_link_on_expiration"), cfg.size("so_sndbuf"), cfg.size("so_rcvbuf"))


def set_buffers(sock: socket.socket, tls: LinkTls) -> None:
    for option, size in ((socket.SO_SNDBUF, tls.so_sndbuf), (socket.SO_RCVBUF, tls.so_rcvbuf)):
        if size is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, option, size)
            except OSError as exc:
                log.debug("cannot set socket buffer size %d: %s", size, exc)


def config_for_kind(ep: Endpoint, config: LinkConfig) -> LinkConfig:
    """``config`` as a link of ``ep``'s kind needs it, dialled or accepted: a udp batch fits
    a datagram and a ws batch is one WebSocket message, so neither is length-prefixed;
    the endpoint's ``prio``/``rel`` metadata is its links' QoS (transport/link/qos.py)."""
    if ep.metadata:
        config = replace(config, link_qos=from_metadata(dict(ep.metadata), str(ep)))
    if ep.protocol == "udp":
        from pyzenoh.transport.udp import udp_config  # udp.py builds on the TCP link

        return udp_config(config)
    if ep.protocol == "ws":
        return replace(config, streamed=False)
    return config

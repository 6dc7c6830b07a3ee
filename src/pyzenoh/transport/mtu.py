"""A TCP link's MTU as zenoh computes it (``zenoh-link-tcp``, RFC 6691): the largest
batch the link carries, what ``Link.mtu`` reports. 65,535 less the IP and TCP headers
(40 bytes over IPv4, 60 over IPv6), rounded down to a multiple of half the socket's MSS
so that a batch fills whole segments. Reported on 127.0.0.1 by zenoh 1.10.2: 65480."""

from __future__ import annotations

import socket

#: A batch's length is a u16 on streamed links.
TCP_MAX_MTU = 0xFFFF


def tcp_mtu(sock: socket.socket | None) -> int | None:
    """``sock``'s MTU by zenoh's rule; None when it is no TCP socket."""
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return None
    mtu = TCP_MAX_MTU - (40 if sock.family == socket.AF_INET else 60)
    try:
        half_mss = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG) // 2
    except (OSError, AttributeError):
        return mtu
    if half_mss <= 0:
        return mtu
    target = half_mss
    while target + half_mss < mtu:
        target += half_mss
    return min(mtu, target)

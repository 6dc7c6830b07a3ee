"""router/state.py: a session with several links (zenoh's multilink) in the daemon's
faces: which link a message takes, a link leaving while others remain, and the session
count that max_sessions is checked against."""

from __future__ import annotations

from typing import Any

from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.router.state import DaemonFace, DaemonFaces
from pyzenoh.transport.link.qos import LinkQos
from pyzenoh.transport.multilink import choose_link


class Carrier:
    """What the faces read of a link: its kind and negotiated QoS (a real TcpLink needs a
    socket)."""

    def __init__(self, protocol: str, link_qos: LinkQos | None = None) -> None:
        self.protocol = protocol
        self.link_qos = link_qos


def link(protocol: str, link_qos: LinkQos | None = None) -> Any:
    return Carrier(protocol, link_qos)


ZID = ZenohId.from_str("b1b2")


def test_messages_take_the_link_of_their_reliability() -> None:
    faces = DaemonFaces()
    udp, tcp = link("udp"), link("tcp")
    face = DaemonFace(1, udp, ZID, WhatAmI.PEER, multilink=b"key")
    faces.add(face)
    assert face.link_for(True, 5) is udp  # one link: everything on it
    faces.join(face, tcp)
    assert face.link_for(True, 5) is tcp and face.link_for(False, 5) is udp
    assert faces.of_link(tcp) == faces.of_link(udp) == 1
    assert faces.linked == 1  # one session, whatever its links
    assert faces.of_zid(ZID) is face


def test_a_session_outlives_its_first_link() -> None:
    faces = DaemonFaces()
    udp, tcp, tls = link("udp"), link("tcp"), link("tls")
    face = DaemonFace(1, udp, ZID, WhatAmI.PEER, multilink=b"key")
    faces.add(face)
    faces.join(face, tcp)
    faces.join(face, tls)
    faces.leave(face, udp)  # the first link goes: the next takes its place
    assert face.link is tcp and face.extra_links == [tls]
    assert faces.of_link(udp) is None and faces.linked == 1
    assert face.link_for(False, 5) is tcp  # no best-effort link left: the first one
    faces.leave(face, tls)
    assert face.all_links() == [tcp]
    assert faces.remove(1) is face
    assert faces.linked == 0 and not faces.has_zid(ZID) and faces.of_link(tcp) is None


def test_priority_ranges_pick_the_narrowest_link_that_holds_the_priority() -> None:
    """zenoh's select: reliability and range both matching (narrowest range), then
    reliability alone, then the first link; an endpoint's rel overrides its kind's."""
    wide = link("tcp", LinkQos((0, 7)))
    high = link("tcp", LinkQos((1, 3)))
    low = link("tcp", LinkQos((6, 7), reliable=False))
    plain = link("udp")
    links = [wide, high, low, plain]
    assert choose_link(links, True, 2) is high
    assert choose_link(links, True, 5) is wide
    assert choose_link(links, False, 7) is low  # rel=0 makes a tcp link best effort
    assert choose_link(links, False, 2) is low  # reliability alone: the first best-effort one
    assert choose_link([high, plain], True, 6) is high  # reliability without range
    assert choose_link([plain], True, 1) is plain  # nothing matches: the first

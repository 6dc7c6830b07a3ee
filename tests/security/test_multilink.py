"""security/multilink.py and the handshake around it: the acceptor's side of zenoh's
MultiLink extension against an opener written here from zenoh's ``auth/pubkey`` layout
(the real peers' side is in tests/interop/test_udp_interop.py): a proven key ends up in
Established, a wrong or missing answer closes the link, and any bytes in the extension
are either a key or one typed error."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import (
    InitAck,
    InitSyn,
    OpenAck,
    OpenSyn,
    WhatAmI,
    ZenohId,
    decode_batch,
    frame_batch,
)
from pyzenoh.codec.primitives import Reader, write_zbytes
from pyzenoh.errors import CloseReason, DecodeError
from pyzenoh.security.multilink import AcceptorMultiLink, MultiLinkKey, encode_key_numbers, encode_public_key
from pyzenoh.transport.link import Established, Link, LinkClosed, LinkConfig, Role
from tests.transport.test_link import batches

ZA = ZenohId.from_str("a1a2a3a4a5a6a7a8")
ZP = ZenohId.from_str("b1b2b3b4b5b6b7b8")
KEY = MultiLinkKey()  # the acceptor's (one per node; made once for the module: RSA is slow)
ALICE = rsa.generate_private_key(public_exponent=65537, key_size=1024)


def answer(init_ack_ext: bytes, alice: rsa.RSAPrivateKey = ALICE) -> bytes:
    """What zenoh's opener sends back: the challenge, decrypted with its key and encrypted
    with the acceptor's."""
    r = Reader(init_ack_ext)
    n = int.from_bytes(r.zbytes(), "little")
    e = int.from_bytes(r.zbytes(), "little")
    challenge = alice.decrypt(r.zbytes(), padding.PKCS1v15())
    out = bytearray()
    write_zbytes(out, rsa.RSAPublicNumbers(e, n).public_key().encrypt(challenge, padding.PKCS1v15()))
    return bytes(out)


def msgs(link: Link) -> list[object]:
    return [m for b in batches(link.data_to_send()) for m in decode_batch(b)]


def test_a_proven_key_is_the_sessions_identity() -> None:
    offered = encode_public_key(ALICE.public_key())
    ml = AcceptorMultiLink(KEY, b"\x01" * 8)
    ack = ml.init_ack(offered)
    assert ack.startswith(KEY.encoded)
    ml.on_open_syn(answer(ack))
    assert ml.peer_key == offered


def test_a_wrong_or_missing_answer_is_refused() -> None:
    offered = encode_public_key(ALICE.public_key())
    ml = AcceptorMultiLink(KEY, b"\x02" * 8)
    ack = ml.init_ack(offered)
    assert ack.startswith(KEY.encoded)
    garbage = bytearray()
    write_zbytes(garbage, bytes(range(128)))  # no encryption of anything with our key
    with pytest.raises(DecodeError, match="wrong|does not decrypt"):  # OpenSSL may say either
        ml.on_open_syn(bytes(garbage))
    with pytest.raises(DecodeError, match="no MultiLink answer"):
        ml.on_open_syn(None)
    forged = bytearray()  # another challenge, properly encrypted
    write_zbytes(forged, KEY.private.public_key().encrypt(b"\x00" * 8, padding.PKCS1v15()))
    with pytest.raises(DecodeError, match="wrong"):
        ml.on_open_syn(bytes(forged))
    assert ml.peer_key is None


@given(st.binary(max_size=300) | st.builds(encode_key_numbers, st.integers(0, 2**600), st.integers(0, 2**70)))
def test_any_bytes_are_a_key_or_one_typed_error(data: bytes) -> None:
    ml = AcceptorMultiLink(KEY, b"\x03" * 8)
    try:
        ml.init_ack(data)
    except DecodeError as exc:  # anything else fails the test
        assert exc.close_reason == CloseReason.INVALID


def _enc(msg: object) -> bytes:
    out = bytearray()
    msg.write(out)  # type: ignore[attr-defined]
    return frame_batch(bytes(out))


def handshake(config: LinkConfig, answer_right: bool = True) -> tuple[Link, list[object], list[object]]:
    """An acceptor with ``config`` through a MultiLink handshake; (link, its answers to
    InitSyn and OpenSyn, its events)."""
    link = Link(config, Role.ACCEPTOR, 0.0)
    link.receive_data(_enc(InitSyn(ZP, WhatAmI.PEER, multilink=encode_public_key(ALICE.public_key()))), 0.0)
    [init_ack] = msgs(link)
    assert isinstance(init_ack, InitAck)
    reply = answer(init_ack.multilink) if init_ack.multilink is not None and answer_right else None
    events = link.receive_data(_enc(OpenSyn(10_000, 0, cookie=init_ack.cookie, multilink=reply)), 0.0)
    return link, [init_ack, *msgs(link)], list(events)


def test_the_handshake_carries_it_when_allowed() -> None:
    gate_saw: list[bytes | None] = []

    def gate(zid: ZenohId, whatami: WhatAmI, key: bytes | None) -> int | None:
        gate_saw.append(key)
        return None

    link, sent, events = handshake(LinkConfig(ZA, WhatAmI.ROUTER, multilink=KEY, open_gate=gate))
    init_ack, open_ack = sent
    assert isinstance(init_ack, InitAck) and init_ack.multilink is not None
    assert isinstance(open_ack, OpenAck) and open_ack.multilink_ack
    [est] = [e for e in events if isinstance(e, Established)]
    assert est.multilink == encode_public_key(ALICE.public_key()) == gate_saw[0]
    # not allowed (max_links 1): the extension is ignored, as zenohd ignores it
    _, sent, events = handshake(LinkConfig(ZA, WhatAmI.ROUTER))
    assert sent[0].multilink is None and not sent[1].multilink_ack  # type: ignore[attr-defined]
    assert next(e for e in events if isinstance(e, Established)).multilink is None
    # a missing answer closes the link
    link, _, events = handshake(LinkConfig(ZA, WhatAmI.ROUTER, multilink=KEY), answer_right=False)
    assert any(isinstance(e, LinkClosed) for e in events) and not link.is_established


def test_pyzenoh_on_both_sides() -> None:
    """Opener and acceptor of pyzenoh: each ends up with the other's key."""
    from tests.transport.test_link import pump

    theirs = MultiLinkKey()
    a = Link(LinkConfig(ZP, WhatAmI.ROUTER, multilink=theirs), Role.OPENER, 0.0)
    b = Link(LinkConfig(ZA, WhatAmI.ROUTER, multilink=KEY), Role.ACCEPTOR, 0.0)
    ea, eb = pump(a, b)
    est_a = next(e for e in ea if isinstance(e, Established))
    est_b = next(e for e in eb if isinstance(e, Established))
    assert est_a.multilink == KEY.encoded and est_b.multilink == theirs.encoded
    # an acceptor that does not allow several links: none on either side
    a = Link(LinkConfig(ZP, WhatAmI.ROUTER, multilink=theirs), Role.OPENER, 0.0)
    b = Link(LinkConfig(ZA, WhatAmI.ROUTER), Role.ACCEPTOR, 0.0)
    ea, eb = pump(a, b)
    assert next(e for e in ea if isinstance(e, Established)).multilink is None
    assert next(e for e in eb if isinstance(e, Established)).multilink is None

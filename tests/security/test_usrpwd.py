"""usrpwd authentication: the Auth extension bodies, the dictionary, the config keys, and
both roles of the sans-IO link (fed whole and byte by byte).

Byte vectors marked "captured" come from real eclipse-zenoh 1.10.2 nodes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pyzenoh.codec import (
    BatchReader,
    Close,
    InitAck,
    InitSyn,
    OpenAck,
    OpenSyn,
    WhatAmI,
    ZenohId,
    decode_batch,
    frame_batch,
)
from pyzenoh.codec.extensions import Extension
from pyzenoh.codec.primitives import Reader
from pyzenoh.codec.transport import (
    read_auth_extensions,
    read_transport_message,
    write_auth_extensions,
)
from pyzenoh.errors import CloseReason, DecodeError, UsageError
from pyzenoh.router.config import config_from_dict, load_config
from pyzenoh.security import usrpwd as up
from pyzenoh.security.usrpwd import (
    AcceptorAuth,
    AuthError,
    OpenerAuth,
    UsrPwd,
    decode_open_syn,
    encode_init_ack,
    encode_open_syn,
    hmac_sha3,
    load_dictionary,
    parse_dictionary,
    usrpwd_from_config,
)
from pyzenoh.session.config import Config
from pyzenoh.transport.link import (
    Established,
    Event,
    Link,
    LinkClosed,
    LinkConfig,
    Role,
    State,
)

ZA = ZenohId.from_str("a1a2a3a4a5a6a7a8")
ZC = ZenohId.from_str("c1c2c3c4c5c6c7c8")
KEY = "transport/auth/usrpwd"

#: Captured: the InitSyn of a real client with user/password configured (Auth 43 01 02).
CAPTURED_INIT_SYN = bytes.fromhex("c109f203f723ee6016d1653c0ad196aecc5e430ac8ff81c205d8cda4ee0dc301022701")
#: Captured: that client's OpenSyn, answering nonce 0x0123456789abcdef, user "alice",
#: password "s3cr:et" (its Auth body is 42 27 05 "alice" 20 <HMAC-SHA3-256>).
CAPTURED_OPEN_SYN = bytes.fromhex(
    "c20aa7d7ce0506636f6f6b69654329422705616c69636520c6f18fbfdf49f476c2506c4ed36e24c23cae82a8a78e88840ac86fbc4ade34d0"
)
CAPTURED_NONCE = 0x0123456789ABCDEF
#: Captured: a real router's InitAck Auth body (the challenge) and its OpenAck Auth body.
CAPTURED_INIT_ACK_AUTH = bytes.fromhex("22dfc3f7e381e786d9f9")
CAPTURED_INIT_ACK_NONCE = 17992473389108683231
CAPTURED_OPEN_ACK = bytes.fromhex("e20af5f4da31430102")


def counter_bytes() -> Callable[[int], bytes]:
    """A deterministic random source: 01 02 03 ..."""
    state = [0]

    def take(n: int) -> bytes:
        out = bytes((state[0] + i + 1) & 0xFF for i in range(n))
        state[0] += n
        return out

    return take


# --- Auth extension bodies -----------------------------------------------------------------


def test_captured_handshake_messages_decode() -> None:
    syn = read_transport_message(Reader(CAPTURED_INIT_SYN))
    assert isinstance(syn, InitSyn) and syn.auth == up.INIT_SYN_BODY == b"\x02"
    osyn = read_transport_message(Reader(CAPTURED_OPEN_SYN))
    assert isinstance(osyn, OpenSyn) and osyn.auth is not None
    (ext,) = read_auth_extensions(osyn.auth)
    assert ext.id == up.EXT_OPEN_SYN and isinstance(ext.value, bytes)
    user, proof = decode_open_syn(ext.value)
    assert user == b"alice"
    # HMAC-SHA3-256 keyed by the nonce's 8 LE bytes, over the password: the client's bytes
    assert proof == hmac_sha3(CAPTURED_NONCE, b"s3cr:et")
    assert encode_open_syn(b"alice", proof) == osyn.auth
    ack = read_transport_message(Reader(CAPTURED_OPEN_ACK))
    assert isinstance(ack, OpenAck) and ack.auth == up.OPEN_ACK_BODY
    assert encode_init_ack(CAPTURED_INIT_ACK_NONCE) == CAPTURED_INIT_ACK_AUTH
    (ch,) = read_auth_extensions(CAPTURED_INIT_ACK_AUTH)
    assert ch == Extension(up.EXT_INIT_ACK, CAPTURED_INIT_ACK_NONCE)


@pytest.mark.parametrize(
    "exts",
    [
        (Extension(0x02),),
        (Extension(0x22, 0), Extension(0x22, 2**64 - 1)),
        (Extension(0x01), Extension(0x42, b""), Extension(0x42, b"x" * 300)),
    ],
)
def test_auth_extension_list_round_trip(exts: tuple[Extension, ...]) -> None:
    body = write_auth_extensions(exts)
    assert body is not None and read_auth_extensions(body) == exts
    msg = InitSyn(ZC, WhatAmI.CLIENT, auth=body)
    out = bytearray()
    msg.write(out)
    assert read_transport_message(Reader(bytes(out))) == msg
    assert write_auth_extensions(()) is None
    assert read_auth_extensions(b"") == ()


@pytest.mark.parametrize(
    "body",
    [
        "ff",  # reserved encoding (0x60)
        "60",
        "82",  # Z set: another extension must follow
        "22",  # Z64 without its value
        "22ff",  # truncated VLE
        "22ffffffffffffffffff02",  # trailing byte after a 9-byte VLE
        "4205aabb",  # ZBuf shorter than its length
        "42ffffffff0f",  # a 4 GiB length, nothing behind it: never allocated
        "0200",  # trailing bytes after the list
        "82" * 65 + "02",  # a chain too long
    ],
)
def test_malformed_auth_bodies_are_typed_errors(body: str) -> None:
    with pytest.raises(DecodeError) as info:
        read_auth_extensions(bytes.fromhex(body))
    assert info.value.close_reason is CloseReason.GENERIC


@pytest.mark.parametrize(
    "value",
    [
        "",
        "05616c696365",
        "05616c6963651f" + "00" * 31,
        "05616c69636521" + "00" * 33,
        "05616c69636520" + "00" * 32 + "00",
        "ffffffff0f",
        "0561",
    ],
)
def test_malformed_open_syn_bodies(value: str) -> None:
    with pytest.raises(DecodeError):
        decode_open_syn(bytes.fromhex(value))


def test_open_syn_body_round_trip() -> None:
    for user in (b"a", b"x" * 200, "üsér".encode()):
        proof = hmac_sha3(7, b"pw")
        (ext,) = read_auth_extensions(encode_open_syn(user, proof))
        assert isinstance(ext.value, bytes)
        assert decode_open_syn(ext.value) == (user, proof)
    with pytest.raises(UsageError):
        encode_init_ack(-1)
    with pytest.raises(UsageError):
        encode_init_ack(2**64)


# --- dictionary and configuration -----------------------------------------------------------


def test_dictionary_parsing_follows_zenohd() -> None:
    text = (
        "alice:pw1\r\n"  # CRLF
        "\n   \n"  # blank lines
        "  bob : p:w:2  \n"  # trimmed, split at the first colon
        "#carol:pw3\n"  # no comments: user "#carol"
        "dave:old\ndave:new\n"  # the last one wins
        "\u3000eve\u3000:\u3000pw\u3000"  # Unicode whitespace is trimmed too
    )
    assert parse_dictionary(text) == {
        "alice": "pw1",
        "bob": "p:w:2",
        "#carol": "pw3",
        "dave": "new",
        "eve": "pw",
    }
    # \x1c is whitespace for str.strip but not for Rust's trim
    assert parse_dictionary("\x1cu:p") == {"\x1cu": "p"}


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("# a comment\n", "line 1 is not user:password"),
        ("a:b\nsecretpw\n", "line 2 is not"),
        ("a:\n", "line 1 has an empty password"),
        (":pw\n", "line 1 has an empty user"),
        (":\n", "empty user"),
    ],
)
def test_dictionary_errors_name_the_line_not_its_content(text: str, what: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_dictionary(text, "dict")
    assert what in str(info.value)
    assert "secretpw" not in str(info.value) and "comment" not in str(info.value)


def test_load_dictionary_errors_name_the_key(tmp_path: Path) -> None:
    bad_utf8 = tmp_path / "bin.txt"
    bad_utf8.write_bytes(b"\xff\xfe:x\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    for path, what in (
        (tmp_path / "missing.txt", "cannot be read"),
        (tmp_path, "cannot be read"),
        (bad_utf8, "not valid UTF-8"),
        (empty, "lists no user"),
    ):
        with pytest.raises(UsageError) as info:
            load_dictionary(str(path))
        assert f"{KEY}/dictionary_file" in str(info.value) and what in str(info.value)


def test_load_dictionary_size_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(up, "MAX_DICTIONARY_BYTES", 16)
    big = tmp_path / "big.txt"
    big.write_text("user:password-that-is-long\n")
    with pytest.raises(UsageError, match="larger than"):
        load_dictionary(str(big))


def write_dict(tmp_path: Path, text: str = "alice:pw1\nbob:p:w:2\n") -> str:
    path = tmp_path / "users.txt"
    path.write_text(text)
    return str(path)


def test_usrpwd_from_config(tmp_path: Path) -> None:
    assert usrpwd_from_config(None) is None
    assert usrpwd_from_config({}) is None
    assert usrpwd_from_config({"user": None, "password": None, "dictionary_file": None}) is None
    both = usrpwd_from_config({"user": "me", "password": "sekrit", "dictionary_file": write_dict(tmp_path)})
    assert both is not None and both.presents and both.user == "me"
    assert dict(both.users) == {b"alice": b"pw1", b"bob": b"p:w:2"}
    assert "sekrit" not in repr(both) and "pw1" not in repr(both) and "'alice'" in repr(both)
    only_dict = usrpwd_from_config({"dictionary_file": write_dict(tmp_path)})
    assert only_dict is not None and not only_dict.presents


@pytest.mark.parametrize(
    ("section", "names"),
    [
        ({"user": "me"}, f"{KEY}/password"),
        ({"password": "pw"}, f"{KEY}/user"),
        ({"user": "", "password": "pw"}, f"{KEY}/user"),
        ({"user": "me", "password": ""}, f"{KEY}/password"),
        ({"user": 5, "password": "pw"}, f"{KEY}/user"),
        ({"dictionary_file": ""}, f"{KEY}/dictionary_file"),
        ({"dictionary_file": "/nonexistent/users.txt"}, f"{KEY}/dictionary_file"),
        ({"dictionnary_file": "x"}, f"{KEY}/dictionnary_file"),
        ("x", KEY),
    ],
)
def test_bad_usrpwd_config_names_the_key(section: object, names: str) -> None:
    with pytest.raises(UsageError) as info:
        usrpwd_from_config(section)
    assert names in str(info.value)


def test_router_and_session_configs_read_usrpwd(tmp_path: Path) -> None:
    dict_file = write_dict(tmp_path)
    tree = {"transport": {"auth": {"usrpwd": {"user": "r", "password": "rp", "dictionary_file": dict_file}}}}
    rc = config_from_dict(tree)
    assert rc.usrpwd is not None and rc.usrpwd.user == "r" and b"alice" in rc.usrpwd.users
    assert config_from_dict({}).usrpwd is None
    path = tmp_path / "router.json5"
    path.write_text(json.dumps({"transport": {"auth": {"usrpwd": {"dictionary_file": str(tmp_path / "nope")}}}}))
    with pytest.raises(UsageError, match=f"{KEY}/dictionary_file"):
        load_config(path)
    with pytest.raises(UsageError, match=f"{KEY}/password"):
        config_from_dict({"transport": {"auth": {"usrpwd": {"user": "r"}}}})
    sc = Config(tree).usrpwd
    assert sc is not None and sc.user == "r"
    assert Config().usrpwd is None


def test_session_open_fails_on_a_bad_usrpwd_section() -> None:
    import pyzenoh.session as pz

    with pytest.raises(UsageError, match=f"{KEY}/password"):
        pz.open(
            {
                "mode": "client",
                "connect": {"endpoints": ["tcp/127.0.0.1:9"]},
                "transport": {"auth": {"usrpwd": {"user": "me"}}},
            }
        )


def test_usrpwd_direct_construction_checks() -> None:
    with pytest.raises(UsageError):
        UsrPwd("me")
    with pytest.raises(UsageError):
        UsrPwd()
    with pytest.raises(UsageError):
        UsrPwd(users={"a": ""})
    with pytest.raises(UsageError):
        UsrPwd(users={"a": "b"}).proof(1)
    assert UsrPwd("me", "pw").proof(5) == hmac_sha3(5, b"pw")


# --- the two roles without a link -----------------------------------------------------------


def test_roles_directly() -> None:
    server = UsrPwd(users={"alice": "pw1"})
    opener = OpenerAuth(UsrPwd("alice", "pw1"))
    acceptor = AcceptorAuth(server, 99)
    acceptor.on_init_syn(opener.init_syn())
    opener.on_init_ack(acceptor.init_ack())
    assert acceptor.on_open_syn(opener.open_syn()) == "alice"
    opener.on_open_ack(acceptor.open_ack())
    # without credentials or checks nothing is sent, and present bodies are only checked
    plain = OpenerAuth(None)
    assert plain.init_syn() is None and plain.open_syn() is None
    plain.on_init_ack(CAPTURED_INIT_ACK_AUTH)
    plain.on_open_ack(None)
    with pytest.raises(DecodeError):
        plain.on_init_ack(b"\xff")
    off = AcceptorAuth(None, 0)
    off.on_init_syn(b"\x02")
    assert off.init_ack() is None and off.open_ack() is None and off.on_open_syn(b"\x02") is None
    with pytest.raises(DecodeError):
        off.on_init_syn(b"\x82")
    with pytest.raises(UsageError):
        AcceptorAuth(server, -1)
    with pytest.raises(UsageError):
        OpenerAuth(UsrPwd("a", "b")).open_syn()  # before the challenge


@pytest.mark.parametrize(
    ("step", "body", "what"),
    [
        ("init_syn", None, "no usrpwd credentials"),
        ("init_syn", b"", "no usrpwd credentials"),
        ("init_syn", b"\x01", "no usrpwd credentials"),  # pubkey only
        ("init_syn", b"\x12", "malformed"),  # usrpwd with the M bit: refused as 1.10.2 does
        ("init_syn", b"\x22\x05", "malformed"),
        ("init_syn", b"\xff\xff", "malformed"),
        ("open_syn", None, "no usrpwd credentials"),
        ("open_syn", b"\x02", "malformed"),
        ("open_syn", b"\x42\x03\x01a\x00", "malformed"),
    ],
)
def test_acceptor_refusals(step: str, body: bytes | None, what: str) -> None:
    acceptor = AcceptorAuth(UsrPwd(users={"alice": "pw1"}), 1)
    with pytest.raises(AuthError, match=what) as info:
        if step == "init_syn":
            acceptor.on_init_syn(body)
        else:
            acceptor.on_open_syn(body)
    assert info.value.close_reason is CloseReason.GENERIC


@pytest.mark.parametrize(
    ("step", "body", "what"),
    [
        ("init_ack", None, "does not check"),
        ("init_ack", b"\x02", "malformed"),
        ("init_ack", b"\x01", "does not check"),
        ("init_ack", b"\xff", "malformed"),
        ("open_ack", None, "does not accept"),
        ("open_ack", b"\x22\x01", "malformed"),
    ],
)
def test_opener_refusals(step: str, body: bytes | None, what: str) -> None:
    opener = OpenerAuth(UsrPwd("alice", "pw1"))
    with pytest.raises(AuthError, match=what):
        if step == "init_ack":
            opener.on_init_ack(body)
        else:
            opener.on_init_ack(encode_init_ack(3))
            opener.on_open_ack(body)


# --- the sans-IO link, both roles -------------------------------------------------------------

SERVER = UsrPwd(users={"alice": "pw1", "bob": "p:w:2"})


def link_pair(
    opener_auth: UsrPwd | None,
    acceptor_auth: UsrPwd | None,
    *,
    whatami: WhatAmI = WhatAmI.CLIENT,
    byte_by_byte: bool = False,
) -> tuple[Link, Link, list[Event], list[Event]]:
    a = Link(LinkConfig(ZC, whatami, usrpwd=opener_auth), Role.OPENER, 0.0, random_bytes=counter_bytes())
    b = Link(LinkConfig(ZA, WhatAmI.ROUTER, usrpwd=acceptor_auth), Role.ACCEPTOR, 0.0, random_bytes=counter_bytes())
    ea: list[Event] = []
    eb: list[Event] = []
    for _ in range(10):
        da, db = a.data_to_send(), b.data_to_send()
        if not da and not db:
            break
        for src, dst, events in ((da, b, eb), (db, a, ea)):
            if byte_by_byte:
                for i in range(len(src)):
                    events += dst.receive_data(src[i : i + 1], 0.0)
            elif src:
                events += dst.receive_data(src, 0.0)
    return a, b, ea, eb


def only(events: list[Event], kind: type) -> object:
    found = [e for e in events if isinstance(e, kind)]
    assert len(found) == 1, events
    return found[0]


@pytest.fixture(params=[False, True], ids=["whole", "byte-by-byte"])
def byte_by_byte(request: pytest.FixtureRequest) -> Iterator[bool]:
    yield bool(request.param)


@pytest.mark.parametrize(("user", "password"), [("alice", "pw1"), ("bob", "p:w:2")])
def test_link_right_credentials(user: str, password: str, byte_by_byte: bool) -> None:
    a, b, ea, eb = link_pair(UsrPwd(user, password), SERVER, byte_by_byte=byte_by_byte)
    assert a.is_established and b.is_established
    pa = only(ea, Established)
    pb = only(eb, Established)
    assert isinstance(pa, Established) and isinstance(pb, Established)
    assert pb.username == user  # the acceptor knows who it is
    assert pa.username is None


def test_link_router_opener_must_authenticate_too() -> None:
    a, b, _, eb = link_pair(UsrPwd("alice", "pw1"), SERVER, whatami=WhatAmI.ROUTER)
    assert a.is_established
    assert b.is_established
    pb = only(eb, Established)
    assert isinstance(pb, Established) and pb.username == "alice" and pb.whatami is WhatAmI.ROUTER
    _, b, _, eb = link_pair(None, SERVER, whatami=WhatAmI.ROUTER)
    assert b.is_closed and isinstance(only(eb, LinkClosed), LinkClosed)


@pytest.mark.parametrize(
    ("opener_auth", "acceptor_detail", "acceptor_state_when_refused"),
    [
        (UsrPwd("alice", "wrong"), "wrong password for user 'alice'", "open"),
        (UsrPwd("carol", "pw1"), "unknown user 'carol'", "open"),
        (None, "no usrpwd credentials offered", "init"),
    ],
)
def test_link_refused_credentials(
    opener_auth: UsrPwd | None, acceptor_detail: str, acceptor_state_when_refused: str, byte_by_byte: bool
) -> None:
    a, b, ea, eb = link_pair(opener_auth, SERVER, byte_by_byte=byte_by_byte)
    assert a.is_closed and b.is_closed
    assert not any(isinstance(e, Established) for e in ea + eb)
    cb = only(eb, LinkClosed)
    assert isinstance(cb, LinkClosed) and cb.auth_failed and not cb.by_peer
    assert cb.reason == CloseReason.GENERIC and acceptor_detail in cb.detail
    assert "pw1" not in cb.detail and "wrong" not in cb.detail.replace("wrong password", "")
    ca = only(ea, LinkClosed)
    assert isinstance(ca, LinkClosed) and ca.by_peer and ca.reason == CloseReason.GENERIC
    if acceptor_state_when_refused == "open":  # the opener knows its credentials were refused
        assert ca.auth_failed and "refused user" in ca.detail
    else:
        assert not ca.auth_failed and "usrpwd" in ca.detail


def test_acceptor_refusal_bytes() -> None:
    """The acceptor answers a missing credential with CLOSE(GENERIC) right after InitSyn,
    and a wrong one with CLOSE(GENERIC) after OpenSyn, as 1.10.2 (03 00), never OpenAck."""
    b = Link(LinkConfig(ZA, WhatAmI.ROUTER, usrpwd=SERVER), Role.ACCEPTOR, 0.0, random_bytes=counter_bytes())
    events = b.receive_data(frame_batch(_enc(InitSyn(ZC, WhatAmI.CLIENT, qos=True))), 0.0)
    assert decode_batch(BatchReader().feed(b.data_to_send())[0]) == [Close(CloseReason.GENERIC)]
    assert isinstance(events[0], LinkClosed) and events[0].auth_failed

    b = Link(LinkConfig(ZA, WhatAmI.ROUTER, usrpwd=SERVER), Role.ACCEPTOR, 0.0, random_bytes=counter_bytes())
    b.receive_data(frame_batch(_enc(InitSyn(ZC, WhatAmI.CLIENT, auth=b"\x02"))), 0.0)
    (ack,) = decode_batch(BatchReader().feed(b.data_to_send())[0])
    assert isinstance(ack, InitAck) and ack.auth is not None
    # the nonce is 8 bytes of the injected random source, after the 24-byte cookie
    nonce = int.from_bytes(bytes(range(25, 33)), "little")
    assert ack.auth == encode_init_ack(nonce)
    proof = hmac_sha3(nonce, b"not-pw1")
    syn = OpenSyn(10_000, 1, cookie=ack.cookie, auth=encode_open_syn(b"alice", proof))
    events = b.receive_data(frame_batch(_enc(syn)), 0.0)
    assert decode_batch(BatchReader().feed(b.data_to_send())[0]) == [Close(CloseReason.GENERIC)]
    assert isinstance(events[0], LinkClosed) and events[0].auth_failed
    # the right proof for that nonce is accepted with OpenAck + Auth(02)
    b = Link(LinkConfig(ZA, WhatAmI.ROUTER, usrpwd=SERVER), Role.ACCEPTOR, 0.0, random_bytes=counter_bytes())
    b.receive_data(frame_batch(_enc(InitSyn(ZC, WhatAmI.CLIENT, auth=b"\x02"))), 0.0)
    (ack,) = decode_batch(BatchReader().feed(b.data_to_send())[0])
    assert isinstance(ack, InitAck)
    syn = OpenSyn(10_000, 1, cookie=ack.cookie, auth=encode_open_syn(b"alice", hmac_sha3(nonce, b"pw1")))
    events = b.receive_data(frame_batch(_enc(syn)), 0.0)
    (oack,) = decode_batch(BatchReader().feed(b.data_to_send())[0])
    assert isinstance(oack, OpenAck) and oack.auth == b"\x02"
    assert isinstance(events[0], Established) and events[0].username == "alice"


@pytest.mark.parametrize("auth", [b"\xff", b"\x02\x00", b"\x42\x05ab", b"\x12"])
def test_acceptor_garbage_auth_in_init_syn(auth: bytes, byte_by_byte: bool) -> None:
    for server in (SERVER, None):  # without usrpwd a malformed Auth body is still refused
        b = Link(LinkConfig(ZA, WhatAmI.ROUTER, usrpwd=server), Role.ACCEPTOR, 0.0, random_bytes=counter_bytes())
        data = frame_batch(_enc(InitSyn(ZC, WhatAmI.CLIENT, auth=auth)))
        events: list[Event] = []
        chunks = [data[i : i + 1] for i in range(len(data))] if byte_by_byte else [data]
        for chunk in chunks:
            events += b.receive_data(chunk, 0.0)
        if server is None and auth == b"\x12":
            assert b.state is State.WAIT_OPEN  # a usrpwd ext we do not check is ignored
            continue
        closed = only(events, LinkClosed)
        assert isinstance(closed, LinkClosed) and closed.reason == CloseReason.GENERIC
        assert closed.auth_failed is (server is not None)


@pytest.mark.parametrize(
    ("init_ack_auth", "open_ack_auth", "detail"),
    [
        (None, b"\x02", "does not check"),
        (b"\x02", b"\x02", "malformed"),
        ("nonce", None, "does not accept"),
        ("nonce", b"\x01", "does not accept"),
        ("nonce", b"\xff", "malformed"),
    ],
)
def test_opener_refuses_a_peer_that_does_not_check(
    init_ack_auth: bytes | str | None, open_ack_auth: bytes | None, detail: str
) -> None:
    """A client with credentials refuses a router that does not check them (1.10.2)."""
    a = Link(LinkConfig(ZC, WhatAmI.CLIENT, usrpwd=UsrPwd("alice", "pw1")), Role.OPENER, 0.0)
    (syn,) = decode_batch(BatchReader().feed(a.data_to_send())[0])
    assert isinstance(syn, InitSyn) and syn.auth == b"\x02"
    auth = encode_init_ack(42) if init_ack_auth == "nonce" else init_ack_auth
    assert not isinstance(auth, str)
    events = a.receive_data(frame_batch(_enc(InitAck(ZA, WhatAmI.ROUTER, cookie=b"c", auth=auth))), 0.0)
    if init_ack_auth == "nonce":
        (osyn,) = decode_batch(BatchReader().feed(a.data_to_send())[0])
        assert isinstance(osyn, OpenSyn) and osyn.auth == encode_open_syn(b"alice", hmac_sha3(42, b"pw1"))
        events = a.receive_data(frame_batch(_enc(OpenAck(10_000, 5, auth=open_ack_auth))), 0.0)
    closed = only(events, LinkClosed)
    assert isinstance(closed, LinkClosed) and closed.auth_failed and detail in closed.detail
    assert decode_batch(BatchReader().feed(a.data_to_send())[0]) == [Close(CloseReason.GENERIC)]
    assert not a.is_established


def test_no_auth_configured_is_unchanged() -> None:
    a, b, _, eb = link_pair(None, None)
    assert a.is_established and b.is_established
    pb = only(eb, Established)
    assert isinstance(pb, Established) and pb.username is None
    # a dictionary-only opener presents nothing and still connects to a plain acceptor
    a, b, _, _ = link_pair(UsrPwd(users={"x": "y"}), None)
    assert a.is_established and b.is_established


def test_acceptor_with_credentials_but_no_dictionary_accepts_nobody() -> None:
    """As zenohd: usrpwd on, nobody to check against; refused even with credentials."""
    for opener in (UsrPwd("alice", "pw1"), None):
        _, b, _, eb = link_pair(opener, UsrPwd("router", "rpw"))
        assert b.is_closed
        closed = only(eb, LinkClosed)
        assert isinstance(closed, LinkClosed) and closed.auth_failed


def _enc(msg: InitSyn | InitAck | OpenSyn | OpenAck) -> bytes:
    out = bytearray()
    msg.write(out)
    return bytes(out)

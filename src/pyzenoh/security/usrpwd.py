"""usrpwd authentication: zenoh's ``transport/auth/usrpwd``, in the handshake.

The opener (a client, or a router connecting out) presents ``user``/``password``; the
acceptor (a router) checks them against the ``dictionary_file`` it loaded at start-up.
Sans-IO: :class:`OpenerAuth` and :class:`AcceptorAuth` turn the Auth extensions of the
handshake messages into bytes and verdicts; the link (:mod:`pyzenoh.transport.link`)
calls them and hands in the random nonce.

Wire (zenoh-wire.md 2.6; every byte checked against eclipse-zenoh 1.10.2). The Auth
extension (``0x43``, ZBuf) of INIT and OPEN holds an extension list of its own, in which
usrpwd is method ``0x2`` (pubkey, ``0x1``, is not implemented: ignored)::

    InitSyn   02                       Unit: "I have credentials"
    InitAck   22 <z64 nonce>           Z64: a random u64 challenge, new per connection
    OpenSyn   42 <len> <zbytes user> <zbytes hmac>
    OpenAck   02                       Unit: accepted

    hmac = HMAC-SHA3-256(key = nonce as 8 little-endian bytes, message = password)

Roles, as 1.10.2 behaves (measured):

* An acceptor with usrpwd configured at all (a dictionary, or only user/password)
  requires the InitSyn's usrpwd extension (else CLOSE right after InitSyn) and a valid
  OpenSyn (else CLOSE after it), from clients, peers and routers alike. With only
  user/password and no dictionary it can therefore accept nobody.
* An opener with user and password refuses an InitAck without the challenge and an
  OpenAck without the acceptance: it will not talk to a router that does not check.
  An opener with only a dictionary presents nothing.
* Every refusal is a CLOSE with reason GENERIC (0), session flag clear: ``03 00``.

Dictionary file (zenohd's parsing): one ``user:password`` per line, split at the first
``:`` (a password may hold colons); user and password are trimmed of whitespace; blank
lines are skipped; there are no comments (``#a:b`` is user ``#a``); a line without
``:``, an empty user or password, or bytes that are not UTF-8 fail the start-up; a user
listed twice keeps its last password.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from typing_extensions import override

from pyzenoh.codec.extensions import Extension
from pyzenoh.codec.primitives import U64_MAX, Reader, write_zbytes
from pyzenoh.codec.transport import (
    AUTH_USRPWD,
    find_auth_extension,
    read_auth_extensions,
    write_auth_extensions,
)
from pyzenoh.errors import CloseReason, DecodeError, PeerError, UsageError

CONFIG_KEY = "transport/auth/usrpwd"
#: The usrpwd inner extension of each handshake message (id | encoding bits).
EXT_INIT_SYN = AUTH_USRPWD  # Unit
EXT_INIT_ACK = AUTH_USRPWD | 0x20  # Z64
EXT_OPEN_SYN = AUTH_USRPWD | 0x40  # ZBuf
EXT_OPEN_ACK = AUTH_USRPWD  # Unit
#: HMAC-SHA3-256 digests are this long.
HMAC_LEN = 32
NONCE_LEN = 8
#: Dictionary files larger than this are refused (they are hand-written lists).
MAX_DICTIONARY_BYTES = 16 << 20
#: User names longer than this are cut in logs and error texts.
_LOG_USER_LEN = 64
_KNOWN_KEYS = frozenset({"user", "password", "dictionary_file"})
# Rust's char::is_whitespace (str::trim), which differs from str.isspace on \x1c-\x1f.
_RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


class AuthError(PeerError):
    """The peer failed usrpwd authentication (or would not do it): CLOSE(GENERIC)."""

    close_reason = CloseReason.GENERIC


def hmac_sha3(nonce: int, password: bytes) -> bytes:
    """The OpenSyn proof: HMAC-SHA3-256 keyed by the nonce's 8 little-endian bytes."""
    return hmac.new(nonce.to_bytes(NONCE_LEN, "little"), password, hashlib.sha3_256).digest()


def _show(user: bytes | str) -> str:
    """A user name for logs: repr-quoted and cut (never a password)."""
    text = user.decode("utf-8", "replace") if isinstance(user, bytes) else user
    if len(text) > _LOG_USER_LEN:
        text = text[:_LOG_USER_LEN] + "..."
    return repr(text)


# --- configuration -------------------------------------------------------------------------


class UsrPwd:
    """The usrpwd settings of one node: the credentials it presents when it opens a link
    (``user``/``password``) and the users it accepts (``users``, from the dictionary).

    Passwords never appear in ``repr``. Built by :func:`usrpwd_from_config` from a config
    tree, or directly (tests, embedding).
    """

    __slots__ = ("_password", "user", "users")

    def __init__(
        self,
        user: str | None = None,
        password: str | None = None,
        users: Mapping[str, str] | None = None,
    ) -> None:
        if (user is None) != (password is None):
            missing = "password" if password is None else "user"
            raise UsageError(f"{CONFIG_KEY}: user and password go together ({missing} is missing)")
        if user == "" or password == "":
            raise UsageError(f"{CONFIG_KEY}: user and password cannot be empty")
        table: dict[bytes, bytes] = {}
        for name, pwd in (users or {}).items():
            if not isinstance(name, str) or not isinstance(pwd, str) or not name or not pwd:
                raise UsageError(f"{CONFIG_KEY}: users must map non-empty strings to non-empty strings")
            table[name.encode()] = pwd.encode()
        if user is None and not table:
            raise UsageError(f"{CONFIG_KEY}: neither credentials nor users")
        self.user = user
        self._password = None if password is None else password.encode()
        self.users: Mapping[bytes, bytes] = MappingProxyType(table)

    @property
    def presents(self) -> bool:
        """True when this node presents credentials on the links it opens."""
        return self.user is not None

    def proof(self, nonce: int) -> bytes:
        """Our answer to the challenge ``nonce``: the HMAC of our password."""
        if self._password is None:
            raise UsageError(f"{CONFIG_KEY}: no password to present")
        return hmac_sha3(nonce, self._password)

    @override
    def __repr__(self) -> str:
        cred = f"user={self.user!r}, password='***'" if self.user is not None else "no credentials"
        names = ", ".join(sorted(_show(u) for u in self.users))
        return f"UsrPwd({cred}, users=[{names}])"


def parse_dictionary(text: str, source: str = "dictionary") -> dict[str, str]:
    """Parse ``user:password`` lines as zenohd does (see the module docstring).

    Errors name ``source`` and the line number, never the line (it holds a password).
    """
    users: dict[str, str] = {}
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip(_RUST_WHITESPACE)
        if not line:
            continue
        user, colon, password = line.partition(":")
        if not colon:
            raise UsageError(f"{source}: line {number} is not user:password")
        user = user.strip(_RUST_WHITESPACE)
        password = password.strip(_RUST_WHITESPACE)
        if not user:
            raise UsageError(f"{source}: line {number} has an empty user")
        if not password:
            raise UsageError(f"{source}: line {number} has an empty password")
        users[user] = password
    return users


def load_dictionary(path: str) -> dict[str, str]:
    """Read and parse a dictionary file; any problem is a :class:`UsageError` naming the key."""
    key = f"{CONFIG_KEY}/dictionary_file"
    source = f"{key} {path!r}"
    try:
        with Path(path).open("rb") as f:
            data = f.read(MAX_DICTIONARY_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"{source} cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_DICTIONARY_BYTES:
        raise UsageError(f"{source} is larger than {MAX_DICTIONARY_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{source} is not valid UTF-8") from None
    users = parse_dictionary(text, source)
    if not users:
        # zenohd runs with authentication off when the file lists nobody; a file named
        # for authentication that lists nobody is a mistake: refuse it (fail closed).
        raise UsageError(f"{source} lists no user")
    return users


def usrpwd_from_config(section: Any) -> UsrPwd | None:
    """The usrpwd settings of a config's ``transport/auth/usrpwd`` section (None: off).

    Keys: ``user``, ``password`` (both or neither) and ``dictionary_file``; each a string
    or null. The dictionary is read here, so a bad one fails the start-up.
    """
    if section is None:
        return None
    if not isinstance(section, dict):
        raise UsageError(f"{CONFIG_KEY} must be an object")
    for key in section:
        if key not in _KNOWN_KEYS:
            raise UsageError(f"{CONFIG_KEY}/{key} is not a known key (user, password, dictionary_file)")
    values: dict[str, str | None] = {}
    for key in _KNOWN_KEYS:
        value = section.get(key)
        if value is not None and not isinstance(value, str):
            raise UsageError(f"{CONFIG_KEY}/{key} must be a string")
        values[key] = value
    user, password, dict_file = values["user"], values["password"], values["dictionary_file"]
    if (user is None) != (password is None):
        missing = "password" if password is None else "user"
        raise UsageError(f"{CONFIG_KEY}/{missing} is missing: user and password go together")
    if user == "" or password == "":
        raise UsageError(f"{CONFIG_KEY}/{'user' if user == '' else 'password'} cannot be empty")
    if dict_file == "":
        raise UsageError(f"{CONFIG_KEY}/dictionary_file cannot be empty")
    users = load_dictionary(dict_file) if dict_file is not None else {}
    if user is None and not users:
        return None
    return UsrPwd(user, password, users)


# --- wire: the usrpwd inner extensions -----------------------------------------------------


def _usrpwd_ext(body: bytes | None, expected: int, what: str) -> Extension | None:
    """The usrpwd extension inside an Auth body (None: absent); a wrong encoding or M
    bit is malformed. Raises :class:`DecodeError` (GENERIC) on a malformed body."""
    ext = find_auth_extension(read_auth_extensions(body or b""), AUTH_USRPWD)
    if ext is not None and ext.id != expected:
        raise DecodeError(
            f"usrpwd extension 0x{ext.id:02x} in {what} (expected 0x{expected:02x})", -1, CloseReason.GENERIC
        )
    return ext


def encode_init_ack(nonce: int) -> bytes:
    """The InitAck Auth body: the challenge."""
    if not 0 <= nonce <= U64_MAX:
        raise UsageError("a usrpwd nonce is a u64")
    return bytes(write_auth_extensions([Extension(EXT_INIT_ACK, nonce)]) or b"")


def encode_open_syn(user: bytes, proof: bytes) -> bytes:
    """The OpenSyn Auth body: the user name and the HMAC."""
    inner = bytearray()
    write_zbytes(inner, user)
    write_zbytes(inner, proof)
    return bytes(write_auth_extensions([Extension(EXT_OPEN_SYN, bytes(inner))]) or b"")


def decode_open_syn(value: bytes) -> tuple[bytes, bytes]:
    """(user, hmac) from the body of the OpenSyn usrpwd extension; :class:`DecodeError`
    (GENERIC) when it is truncated, has trailing bytes or an HMAC of the wrong size."""
    r = Reader(value)
    try:
        user = r.zbytes(len(value))
        proof = r.zbytes(len(value))
    except DecodeError as exc:
        raise DecodeError(f"malformed usrpwd OpenSyn: {exc.reason}", exc.offset, CloseReason.GENERIC) from None
    if not r.at_end():
        raise DecodeError(f"{r.remaining()} trailing bytes in usrpwd OpenSyn", r.pos, CloseReason.GENERIC)
    if len(proof) != HMAC_LEN:
        raise DecodeError(f"usrpwd HMAC of {len(proof)} bytes (expected {HMAC_LEN})", -1, CloseReason.GENERIC)
    return user, proof


#: The InitSyn and OpenAck Auth bodies (a Unit usrpwd extension).
INIT_SYN_BODY = bytes((EXT_INIT_SYN,))
OPEN_ACK_BODY = bytes((EXT_OPEN_ACK,))


def _as_auth_error(exc: DecodeError) -> AuthError:
    return AuthError(f"malformed auth extension: {exc.reason}")


def _required_ext(body: bytes | None, expected: int, what: str, missing: str) -> Extension:
    """The usrpwd extension of a handshake step that must carry one; :class:`AuthError`
    saying ``missing`` when it is absent, or why it is malformed."""
    try:
        ext = _usrpwd_ext(body, expected, what)
    except DecodeError as exc:
        raise _as_auth_error(exc) from None
    if ext is None:
        raise AuthError(missing)
    return ext


class OpenerAuth:
    """The usrpwd side of the handshake of a link this node opened."""

    __slots__ = ("_nonce", "auth")

    def __init__(self, auth: UsrPwd | None) -> None:
        self.auth = auth
        self._nonce: int | None = None

    @property
    def presents(self) -> bool:
        return self.auth is not None and self.auth.presents

    @property
    def user(self) -> str | None:
        return self.auth.user if self.auth is not None else None

    def init_syn(self) -> bytes | None:
        """The InitSyn Auth body (None: no Auth extension)."""
        return INIT_SYN_BODY if self.presents else None

    def on_init_ack(self, body: bytes | None) -> None:
        """Take the challenge. Without credentials a present body is only checked."""
        if not self.presents:
            read_auth_extensions(body or b"")
            return
        ext = _required_ext(
            body, EXT_INIT_ACK, "InitAck", "the peer does not check usrpwd credentials (no challenge in its InitAck)"
        )
        assert isinstance(ext.value, int)
        self._nonce = ext.value

    def open_syn(self) -> bytes | None:
        """The OpenSyn Auth body: our user and the proof for the peer's nonce."""
        auth = self.auth
        if auth is None or auth.user is None:
            return None
        if self._nonce is None:
            raise UsageError("OpenerAuth.open_syn before on_init_ack")
        return encode_open_syn(auth.user.encode(), auth.proof(self._nonce))

    def on_open_ack(self, body: bytes | None) -> None:
        """The peer must say it accepted our credentials."""
        if not self.presents:
            read_auth_extensions(body or b"")
            return
        _required_ext(body, EXT_OPEN_ACK, "OpenAck", "the peer's OpenAck does not accept our usrpwd credentials")


class AcceptorAuth:
    """The usrpwd side of the handshake of a link this node accepted.

    ``nonce`` is the challenge for this connection (random, from the caller).
    """

    __slots__ = ("auth", "nonce")

    def __init__(self, auth: UsrPwd | None, nonce: int) -> None:
        if not 0 <= nonce <= U64_MAX:
            raise UsageError("a usrpwd nonce is a u64")
        self.auth = auth
        self.nonce = nonce

    @property
    def checks(self) -> bool:
        """True when the peer must authenticate (usrpwd is configured at all, as zenohd)."""
        return self.auth is not None

    def on_init_syn(self, body: bytes | None) -> None:
        """The opener must offer usrpwd when we check it."""
        if not self.checks:
            read_auth_extensions(body or b"")
            return
        _required_ext(body, EXT_INIT_SYN, "InitSyn", "no usrpwd credentials offered (no usrpwd extension in InitSyn)")

    def init_ack(self) -> bytes | None:
        """The InitAck Auth body: the challenge (None when we do not check)."""
        return encode_init_ack(self.nonce) if self.checks else None

    def on_open_syn(self, body: bytes | None) -> str | None:
        """Check the credentials; returns the authenticated user (None: we do not check)."""
        auth = self.auth
        if auth is None:
            read_auth_extensions(body or b"")
            return None
        ext = _required_ext(body, EXT_OPEN_SYN, "OpenSyn", "no usrpwd credentials in OpenSyn")
        assert isinstance(ext.value, bytes)
        try:
            user, proof = decode_open_syn(ext.value)
        except DecodeError as exc:
            raise _as_auth_error(exc) from None
        known = auth.users.get(user)
        # the same work for an unknown user as for a wrong password
        expected = hmac_sha3(self.nonce, known if known is not None else b"\x00" * HMAC_LEN)
        ok = hmac.compare_digest(expected, proof)
        if known is None:
            raise AuthError(f"unknown user {_show(user)}")
        if not ok:
            raise AuthError(f"wrong password for user {_show(user)}")
        return user.decode("utf-8")

    def open_ack(self) -> bytes | None:
        """The OpenAck Auth body: the acceptance (None when we do not check)."""
        return OPEN_ACK_BODY if self.checks else None

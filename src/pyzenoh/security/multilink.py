"""zenoh's MultiLink handshake extension, both sides: several links of one session.

A node with ``transport/unicast/max_links`` above 1 offers, in its InitSyn, an RSA public
key of its own (one per node: every link it opens carries the same one). An acceptor
that allows several links answers in its InitAck with its own public key and a random
u64 challenge encrypted (PKCS#1 v1.5) with the opener's key; the opener proves it holds
the private key by sending the challenge back in its OpenSyn, encrypted with the
acceptor's key, and the OpenAck carries a unit acknowledgement. A later link whose
InitSyn carries the same public key joins that session (up to ``max_links``).

Wire layout of each extension body (ZExtZBuf, zenoh's ``auth/pubkey`` codec): a public key
is its modulus then its exponent, each a zenoh byte array (VLE length, little-endian
bytes); InitSyn: the opener's key; InitAck: the acceptor's key, then the encrypted
challenge as a byte array; OpenSyn: the encrypted challenge as a byte array.

zenoh's keys are 512-bit; ``cryptography`` generates 1024 bits at least, which zenoh's
peers take as they are (measured with 1.10.2).
"""

from __future__ import annotations

import hmac

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from pyzenoh.codec.primitives import Reader, write_zbytes
from pyzenoh.errors import CloseReason, DecodeError

#: The acceptor's key size (the smallest ``cryptography`` makes).
KEY_BITS = 1024
#: An RSA modulus larger than this (bytes) is refused: zenoh's own are 64.
MAX_MODULUS_BYTES = 512
CHALLENGE_LEN = 8


def _refused(reason: str) -> DecodeError:
    return DecodeError(f"multilink: {reason}", -1, CloseReason.INVALID)


def encode_public_key(key: rsa.RSAPublicKey) -> bytes:
    numbers = key.public_numbers()
    return encode_key_numbers(numbers.n, numbers.e)


def encode_key_numbers(n: int, e: int) -> bytes:
    """A public key's layout around its modulus and exponent (any numbers: the tests'
    keys that are none)."""
    out = bytearray()
    for value in (n, e):
        write_zbytes(out, value.to_bytes(max(1, (value.bit_length() + 7) // 8), "little"))
    return bytes(out)


def _read_public_key(r: Reader) -> tuple[rsa.RSAPublicKey, bytes]:
    """A public key and its encoded form (the session's multilink identity)."""
    start = r.pos
    n = int.from_bytes(r.zbytes(MAX_MODULUS_BYTES), "little")
    e = int.from_bytes(r.zbytes(MAX_MODULUS_BYTES), "little")
    try:
        key = rsa.RSAPublicNumbers(e, n).public_key()
    except (ValueError, OverflowError, UnsupportedAlgorithm) as exc:
        raise _refused(f"not an RSA public key ({exc})") from None
    return key, bytes(r.buf[start : r.pos])


class MultiLinkKey:
    """This node's key pair for the MultiLink extension (made once, at start)."""

    __slots__ = ("encoded", "private")

    def __init__(self, private: rsa.RSAPrivateKey | None = None) -> None:
        self.private = private or rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
        self.encoded = encode_public_key(self.private.public_key())


class AcceptorMultiLink:
    """The MultiLink side of one accepted link's handshake (sans I/O: the challenge comes
    from the caller). ``peer_key`` is the opener's encoded public key once it is proven."""

    __slots__ = ("_challenge", "_key", "_offered", "peer_key")

    def __init__(self, key: MultiLinkKey, challenge: bytes) -> None:
        if len(challenge) != CHALLENGE_LEN:
            raise ValueError("a multilink challenge is a u64")
        self._key = key
        self._challenge = challenge
        self.peer_key: bytes | None = None
        self._offered: bytes | None = None

    def init_ack(self, init_syn_ext: bytes) -> bytes:
        """The InitAck body answering the opener's InitSyn body."""
        r = Reader(init_syn_ext)
        alice, encoded = _read_public_key(r)
        if not r.at_end():
            raise _refused("trailing bytes after the InitSyn public key")
        try:
            nonce = alice.encrypt(self._challenge, padding.PKCS1v15())
        except ValueError as exc:
            raise _refused(f"cannot encrypt to the opener's key ({exc})") from None
        self._offered = encoded
        out = bytearray(self._key.encoded)
        write_zbytes(out, nonce)
        return bytes(out)

    def on_open_syn(self, open_syn_ext: bytes | None) -> None:
        """Check the opener's answer; on success ``peer_key`` is its public key."""
        if self._offered is None:
            return
        if open_syn_ext is None:
            raise _refused("OpenSyn has no MultiLink answer to the challenge")
        r = Reader(open_syn_ext)
        ciphered = r.zbytes(MAX_MODULUS_BYTES)
        try:
            answer = self._key.private.decrypt(ciphered, padding.PKCS1v15())
        except ValueError:
            raise _refused("the challenge answer does not decrypt") from None
        if not hmac.compare_digest(answer, self._challenge):
            raise _refused("the challenge answer is wrong")
        self.peer_key = self._offered


class OpenerMultiLink:
    """The MultiLink side of one link this node opens: the InitSyn offers the node's key;
    an InitAck that answers with the acceptor's key and an encrypted challenge gets the
    challenge back in the OpenSyn. ``peer_key`` is the acceptor's key once its OpenAck
    acknowledged (the session's identity on this side, as zenoh's opener keeps it)."""

    __slots__ = ("_key", "_offered", "peer_key")

    def __init__(self, key: MultiLinkKey) -> None:
        self._key = key
        self._offered: bytes | None = None
        self.peer_key: bytes | None = None

    def init_syn(self) -> bytes:
        return self._key.encoded

    def open_syn(self, init_ack_ext: bytes | None) -> bytes | None:
        """The OpenSyn body answering the InitAck's (None: the acceptor did not take it)."""
        if init_ack_ext is None:
            return None
        r = Reader(init_ack_ext)
        bob, encoded = _read_public_key(r)
        ciphered = r.zbytes(MAX_MODULUS_BYTES)
        try:
            challenge = self._key.private.decrypt(ciphered, padding.PKCS1v15())
            answer = bob.encrypt(challenge, padding.PKCS1v15())
        except ValueError as exc:
            raise _refused(f"cannot answer the acceptor's challenge ({exc})") from None
        self._offered = encoded
        out = bytearray()
        write_zbytes(out, answer)
        return bytes(out)

    def on_open_ack(self, acknowledged: bool) -> None:
        if self._offered is not None and acknowledged:
            self.peer_key = self._offered

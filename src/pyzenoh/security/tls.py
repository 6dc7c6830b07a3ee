"""TLS for ``tls/HOST:PORT`` links: zenohd's configuration, turned into :mod:`ssl` contexts.

Configuration (zenohd 1.x key names, under ``transport/link/tls``)::

    root_ca_certificate | root_ca_certificate_base64     // CA that signs the peer's cert
    listen_certificate  | listen_certificate_base64      // this side's cert when listening
    listen_private_key  | listen_private_key_base64
    connect_certificate | connect_certificate_base64     // presented when connecting (mTLS)
    connect_private_key | connect_private_key_base64
    enable_mtls: false            // listening: require a client cert signed by the CA;
                                  // connecting: present connect_certificate (TLS 1.3 only)
    verify_name_on_connect: true  // false: the server's cert chain is still verified
    close_link_on_expiration: false
    so_sndbuf, so_rcvbuf          // socket buffer sizes (bytes)

The plain names hold a file path, the ``_base64`` names the base64 of the PEM text; giving
both for one item is refused, as zenohd does. An endpoint may override any of them after
``#`` with zenohd's endpoint parameter names, ``;``-separated, e.g.
``tls/localhost:7447#root_ca_certificate_file=/ca.pem;enable_mtls=true`` (``*_file``,
``*_base64``, ``*_raw`` (PEM text), ``enable_mtls``, ``verify_name_on_connect``,
``close_link_on_expiration``, ``tls_handshake_timeout_ms``, ``so_sndbuf``, ``so_rcvbuf``).
As in zenohd the endpoint's parameters are merged over the configuration's, and for one
item ``_raw`` is preferred to ``_base64``, ``_base64`` to ``_file``.

Behaviour copied from zenohd (facts, not code): a connecting side trusts the system's CA
store plus ``root_ca_certificate``; a listening side with ``enable_mtls`` trusts only
``root_ca_certificate`` and speaks TLS 1.3 only, as does a connecting side with
``enable_mtls``; a connecting side presents a certificate only with ``enable_mtls``.

Every problem with the configuration (a missing or unreadable file, PEM that does not
load, a listen endpoint without certificate and key) is a :class:`UsageError` naming the
key and the file.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyzenoh.errors import UsageError

log = logging.getLogger(__name__)

#: Where the settings live in a zenoh configuration tree.
TLS_CONFIG_PATH = "transport/link/tls"
#: PEM files larger than this are refused (a certificate chain is a few KiB).
MAX_PEM_BYTES = 1 << 20
#: zenohd's TLS handshake timeout when the endpoint does not set tls_handshake_timeout_ms.
DEFAULT_HANDSHAKE_TIMEOUT_S = 10.0

#: The PEM items: config keys, and the stems of the endpoint parameters (``_file`` ...).
_ITEMS = (
    "root_ca_certificate",
    "listen_private_key",
    "listen_certificate",
    "connect_private_key",
    "connect_certificate",
)
_BOOLS = {"enable_mtls": False, "verify_name_on_connect": True, "close_link_on_expiration": False}
_INTS = ("so_sndbuf", "so_rcvbuf")
#: Endpoint parameters this module reads (others, e.g. iface or bind, are ignored).
ENDPOINT_PARAMS = frozenset(
    [f"{item}_{kind}" for item in _ITEMS for kind in ("file", "base64", "raw")]
    + [*_BOOLS, *_INTS, "tls_handshake_timeout_ms"]
)


@dataclass(frozen=True, slots=True)
class TlsConfig:
    """zenohd's TLS settings as endpoint parameters (``root_ca_certificate_file`` ...).

    ``origins`` says where each parameter came from, for error messages.
    """

    params: Mapping[str, str] = field(default_factory=dict)
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)

    def for_endpoint(self, endpoint_params: Sequence[tuple[str, str]], endpoint: str) -> TlsConfig:
        """These settings with an endpoint's ``#key=value`` parameters merged over them."""
        if not endpoint_params:
            return self
        params = dict(self.params)
        origins = dict(self.origins)
        for key, value in endpoint_params:
            if key not in ENDPOINT_PARAMS:
                log.debug("endpoint %s: ignoring parameter %r", endpoint, key)
                continue
            params[key] = value
            origins[key] = f"endpoint {endpoint} parameter {key}"
        return TlsConfig(params, origins)

    # --- typed views -------------------------------------------------------------------

    def flag(self, name: str) -> bool:
        value = self.params.get(name)
        if value is None:
            return _BOOLS[name]
        if value not in ("true", "false"):
            raise UsageError(f"{self._origin(name)} must be true or false, not {value!r}")
        return value == "true"

    def size(self, name: str) -> int | None:
        value = self.params.get(name)
        if value is None:
            return None
        try:
            n = int(value)
        except ValueError:
            n = -1
        if n <= 0:
            raise UsageError(f"{self._origin(name)} must be a positive integer, not {value!r}")
        return n

    @property
    def handshake_timeout_s(self) -> float | None:
        """The endpoint's ``tls_handshake_timeout_ms`` (None: the caller's default)."""
        ms = self.size("tls_handshake_timeout_ms")
        return None if ms is None else ms / 1000.0

    def pem(self, item: str) -> bytes | None:
        """The PEM bytes of ``item`` (e.g. ``listen_certificate``), None when not set."""
        raw = self.params.get(f"{item}_raw")
        if raw is not None:
            return raw.encode()
        b64 = self.params.get(f"{item}_base64")
        if b64 is not None:
            try:
                return base64.b64decode(b64, validate=True)
            except (binascii.Error, ValueError):
                raise UsageError(f"{self._origin(item + '_base64')} is not valid base64") from None
        path = self.params.get(f"{item}_file")
        if path is None:
            return None
        where = f"{self._origin(item + '_file')} (file {path})"
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_PEM_BYTES + 1)
        except OSError as exc:
            raise UsageError(f"cannot read {where}: {exc.strerror or exc}") from None
        if not data:
            raise UsageError(f"{where} is empty")
        if len(data) > MAX_PEM_BYTES:
            raise UsageError(f"{where} is larger than {MAX_PEM_BYTES} bytes")
        return data

    def describe(self, item: str) -> str:
        """Where ``item`` comes from, for messages."""
        for kind in ("raw", "base64", "file"):
            name = f"{item}_{kind}"
            if name in self.params:
                if kind == "file":
                    return f"{self._origin(name)} (file {self.params[name]})"
                return self._origin(name)
        return f"{TLS_CONFIG_PATH}/{item}"

    def _origin(self, name: str) -> str:
        return self.origins.get(name, f"{TLS_CONFIG_PATH}/{name}")

    # --- contexts ------------------------------------------------------------------------

    def server_context(self) -> ssl.SSLContext:
        """The context of a ``tls/`` listener (certificate and key required)."""
        cert, key = self.pem("listen_certificate"), self.pem("listen_private_key")
        if cert is None or key is None:
            missing = [
                f"{TLS_CONFIG_PATH}/{n}"
                for n, v in (("listen_certificate", cert), ("listen_private_key", key))
                if v is None
            ]
            raise UsageError(f"a tls/ listen endpoint needs {' and '.join(missing)}")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        _load_chain(ctx, cert, key, self.describe("listen_certificate"), self.describe("listen_private_key"))
        if self.flag("enable_mtls"):
            ca = self.pem("root_ca_certificate")
            if ca is None:
                raise UsageError(
                    f"{TLS_CONFIG_PATH}/enable_mtls needs {TLS_CONFIG_PATH}/root_ca_certificate "
                    "(the CA that signs client certificates)"
                )
            _load_ca(ctx, ca, self.describe("root_ca_certificate"))
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.minimum_version = ssl.TLSVersion.TLSv1_3  # zenohd's mTLS is TLS 1.3 only
        return ctx

    def client_context(self) -> ssl.SSLContext:
        """The context of a ``tls/`` connection: the server's chain is always verified."""
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)  # the system's CAs, as zenohd
        ca = self.pem("root_ca_certificate")
        if ca is not None:
            _load_ca(ctx, ca, self.describe("root_ca_certificate"))
        ctx.check_hostname = self.flag("verify_name_on_connect")
        ctx.verify_mode = ssl.CERT_REQUIRED
        if self.flag("enable_mtls"):
            cert, key = self.pem("connect_certificate"), self.pem("connect_private_key")
            if cert is None or key is None:
                raise UsageError(
                    f"{TLS_CONFIG_PATH}/enable_mtls on a connecting side needs "
                    f"{TLS_CONFIG_PATH}/connect_certificate and connect_private_key"
                )
            _load_chain(ctx, cert, key, self.describe("connect_certificate"), self.describe("connect_private_key"))
            ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        return ctx


def tls_config(tree: Mapping[str, Any]) -> TlsConfig:
    """The ``transport/link/tls`` settings of a configuration tree."""
    node: Any = tree
    for part in TLS_CONFIG_PATH.split("/"):
        node = node.get(part) if isinstance(node, Mapping) else None
    if node is None:
        return TlsConfig()
    if not isinstance(node, Mapping):
        raise UsageError(f"{TLS_CONFIG_PATH} must be an object")
    params: dict[str, str] = {}
    origins: dict[str, str] = {}

    def put(param: str, key: str, value: str) -> None:
        params[param] = value
        origins[param] = f"{TLS_CONFIG_PATH}/{key}"

    for item in _ITEMS:
        path, b64 = node.get(item), node.get(f"{item}_base64")
        if path is not None and b64 is not None:
            raise UsageError(f"only one of {TLS_CONFIG_PATH}/{item} and {item}_base64 may be set")
        for key, value, param in ((item, path, f"{item}_file"), (f"{item}_base64", b64, f"{item}_base64")):
            if value is None:
                continue
            if not isinstance(value, str) or not value:
                raise UsageError(f"{TLS_CONFIG_PATH}/{key} must be a non-empty string")
            put(param, key, value)
    for name in _BOOLS:
        value = node.get(name)
        if value is None:
            continue
        if not isinstance(value, bool):
            raise UsageError(f"{TLS_CONFIG_PATH}/{name} must be true or false")
        put(name, name, "true" if value else "false")
    for name in _INTS:
        value = node.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise UsageError(f"{TLS_CONFIG_PATH}/{name} must be a positive integer")
        put(name, name, str(value))
    return TlsConfig(params, origins)


def peer_common_name(peercert: Mapping[str, Any] | None) -> str | None:
    """The first commonName of a verified peer certificate's subject (``getpeercert()``)."""
    if not peercert:
        return None
    for rdn in peercert.get("subject", ()):
        for name, value in rdn:
            if name == "commonName":
                return str(value)
    return None


def peer_not_after(peercert: Mapping[str, Any] | None) -> float | None:
    """When the verified peer certificate expires (seconds since the epoch), if known."""
    text = peercert.get("notAfter") if peercert else None
    if not text:
        return None
    try:
        return float(ssl.cert_time_to_seconds(text))
    except ValueError:
        return None


# --- loading PEM from memory ---------------------------------------------------------------
# ssl.SSLContext.load_cert_chain only reads files: a certificate and key given as base64
# (or read from a file and checked here) is handed over through an anonymous in-memory
# file where the OS has them (Linux memfd), else a private temporary file removed at once.


def _load_chain(ctx: ssl.SSLContext, cert: bytes, key: bytes, cert_what: str, key_what: str) -> None:
    with _as_file(cert) as cert_path, _as_file(key) as key_path:
        try:
            ctx.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as exc:
            raise UsageError(
                f"the certificate {cert_what} and private key {key_what} do not load: {exc.reason or exc}"
            ) from None


def _load_ca(ctx: ssl.SSLContext, ca: bytes, what: str) -> None:
    try:
        ctx.load_verify_locations(cadata=ca.decode("ascii"))
    except (ssl.SSLError, UnicodeDecodeError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise UsageError(f"the CA certificate {what} does not load: {reason}") from None


@contextlib.contextmanager
def _as_file(data: bytes) -> Iterator[str]:
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None and Path("/proc/self/fd").is_dir():
        fd = memfd_create("pyzenoh-tls", 0)
        try:
            with open(fd, "wb", closefd=False) as f:
                f.write(data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="pyzenoh-tls-") as tmp:  # mode 0700
        path = Path(tmp) / "pem"
        path.write_bytes(data)
        yield str(path)

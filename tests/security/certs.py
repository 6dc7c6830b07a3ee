"""Test certificates for TLS/mTLS tests: a CA and the certificates it issues, as PEM files.

Made with ``trustme`` (ECDSA P-256 keys, SEC1 "EC PRIVATE KEY" PEM, which both Python's
``ssl`` and zenohd's rustls load). Usage::

    pki = Pki(tmp_path)                       # a fresh CA
    server = pki.server()                     # for localhost and 127.0.0.1
    alice = pki.client("alice")               # subject CN=alice (access control subjects)
    rogue = pki.unrelated().client("alice")   # same name, signed by another CA
    config = pki.listen_config(server)        # transport/link/tls for a listener

Every file lands in the given directory; nothing is shared between instances.
"""

from __future__ import annotations

import base64
import datetime
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme

#: What a server certificate is valid for by default (tests listen on 127.0.0.1 only).
SERVER_NAMES = ("localhost", "127.0.0.1")
_serial = itertools.count(1)


@dataclass(frozen=True, slots=True)
class KeyPair:
    """A certificate (its chain, PEM) and its private key (PEM), as files."""

    cert: Path
    key: Path

    def cert_base64(self) -> str:
        return base64.b64encode(self.cert.read_bytes()).decode()

    def key_base64(self) -> str:
        return base64.b64encode(self.key.read_bytes()).decode()


class Pki:
    """One certificate authority writing its certificates into ``directory``."""

    def __init__(self, directory: Path, name: str = "ca") -> None:
        self.directory = directory
        self.name = f"{name}-{next(_serial)}"
        directory.mkdir(parents=True, exist_ok=True)
        self.authority = trustme.CA(organization_name=f"pyzenoh test {self.name}")
        #: The CA certificate (what root_ca_certificate points at).
        self.ca_cert = directory / f"{self.name}.pem"
        self.authority.cert_pem.write_to_path(str(self.ca_cert))

    def ca_base64(self) -> str:
        return base64.b64encode(self.ca_cert.read_bytes()).decode()

    def server(
        self,
        *names: str,
        common_name: str = "pyzenoh-test-server",
        not_after: datetime.datetime | None = None,
    ) -> KeyPair:
        """A server certificate for ``names`` (DNS names or IP addresses; default
        localhost and 127.0.0.1)."""
        leaf = self.authority.issue_cert(*(names or SERVER_NAMES), common_name=common_name, not_after=not_after)
        return self._write(leaf, f"server-{common_name}")

    def client(self, common_name: str, not_after: datetime.datetime | None = None) -> KeyPair:
        """A client certificate whose subject CN is ``common_name``."""
        # trustme writes a critical SubjectAltName: give it one name (an empty one is invalid)
        leaf = self.authority.issue_cert(
            f"{_dns_label(common_name)}.client.test", common_name=common_name, not_after=not_after
        )
        return self._write(leaf, f"client-{common_name}")

    def unrelated(self) -> Pki:
        """Another CA, sharing nothing with this one (its files in a subdirectory)."""
        return Pki(self.directory / f"other-{next(_serial)}", "other-ca")

    def _write(self, leaf: trustme.LeafCert, stem: str) -> KeyPair:
        n = next(_serial)
        cert = self.directory / f"{self.name}-{_dns_label(stem)}-{n}.crt"
        key = self.directory / f"{self.name}-{_dns_label(stem)}-{n}.key"
        cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        leaf.private_key_pem.write_to_path(str(key))
        return KeyPair(cert, key)

    # --- transport/link/tls settings (zenohd's keys) -----------------------------------

    def listen_config(self, server: KeyPair, *, mtls: bool = False) -> dict[str, Any]:
        """``transport/link/tls`` of a listener (mTLS: client certs signed by this CA)."""
        tls: dict[str, Any] = {"listen_certificate": str(server.cert), "listen_private_key": str(server.key)}
        if mtls:
            tls.update(root_ca_certificate=str(self.ca_cert), enable_mtls=True)
        return tls

    def connect_config(self, client: KeyPair | None = None, *, verify_name: bool | None = None) -> dict[str, Any]:
        """``transport/link/tls`` of a connecting side that trusts this CA (mTLS with
        ``client``)."""
        tls: dict[str, Any] = {"root_ca_certificate": str(self.ca_cert)}
        if client is not None:
            tls.update(connect_certificate=str(client.cert), connect_private_key=str(client.key), enable_mtls=True)
        if verify_name is not None:
            tls["verify_name_on_connect"] = verify_name
        return tls


def _dns_label(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-") or "x"

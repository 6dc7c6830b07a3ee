"""What a storage keeps, as zenoh 1.10's storage service decides it
(``plugins/zenoh-plugin-storage-manager/src/storages_mgt/service.rs``). Sans-IO: samples
and queries in, volume calls out; no clock but the ``now`` given.

* Latest history: one value per key, the one with the greatest HLC timestamp; an update
  older than what the volume holds for its key is ignored (equal ones are applied).
* A DELETE removes the key from the volume (1.10: the memory volume forgets it, so an
  older PUT arriving after the delete is stored again; no tombstone).
* PUTs and DELETEs on wildcard keys are registered (``register_wildcard_update``), applied
  to every stored key they intersect, and override a later update of a key they
  intersect when they are newer (``overriding_wild_update``): among wildcard DELETEs the
  oldest that is not older than the update wins, then among wildcard PUTs the newest.
  Upstream then calls the volume with the incoming sample's kind even when a wildcard
  DELETE overrode a PUT (storing an empty PUT); pyzenoh applies the override's kind.
* ``strip_prefix`` is taken off keys before the volume sees them (the key equal to it is
  the volume's ``None`` key) and put back in replies.
* Wildcard updates are forgotten ``lifespan`` seconds after their timestamp
  (``garbage_collection``).
* A query with a wildcard key gets every stored key intersecting it; a query on one key
  gets that key's value when stored. Missing keys: no reply, no error (zenoh PR 620).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from pyzenoh.codec import Encoding, Timestamp
from pyzenoh.keyexpr.relations import intersects

log = logging.getLogger(__name__)

__all__ = ["DELETE", "PUT", "StorageState", "Stored", "Volume", "is_wild", "ts_order"]

PUT = "PUT"
DELETE = "DELETE"


def ts_order(ts: Timestamp) -> tuple[int, bytes]:
    """uhlc's order: the NTP64 time, then the id's bytes."""
    return ts.time, ts.id.value.to_bytes(16, "little")


def is_wild(key: str) -> bool:
    return "*" in key


@dataclass(frozen=True, slots=True)
class Stored:
    payload: bytes
    encoding: Encoding
    timestamp: Timestamp


class Volume(Protocol):
    """A storage's backend, holding stripped keys (``None``: the strip_prefix itself).
    Errors are raised as exceptions; :class:`StorageState` logs and counts them."""

    def get(self, key: str | None) -> Stored | None: ...
    def put(self, key: str | None, value: Stored) -> None: ...
    def delete(self, key: str | None, timestamp: Timestamp) -> None: ...
    def stored_keys(self) -> Iterable[str | None]: ...
    def close(self) -> None: ...


@dataclass(slots=True)
class _Wild:
    kind: str
    value: Stored


class StorageState:
    """One storage: its key expression, prefix, volume and wildcard updates."""

    def __init__(
        self, key_expr: str, volume: Volume, strip_prefix: str | None = None, lifespan_s: float = 86_400.0
    ) -> None:
        self.key_expr = key_expr
        self.volume = volume
        self.strip_prefix = strip_prefix
        self.lifespan_s = lifespan_s
        self.wild_puts: dict[str, Stored] = {}
        self.wild_deletes: dict[str, Stored] = {}
        self.errors = 0
        self.ignored = 0
        self.applied = 0

    # --- keys -----------------------------------------------------------------------------

    def strip(self, key: str) -> str | None:
        """The volume's key for ``key``; ValueError when ``key`` is not under the prefix."""
        prefix = self.strip_prefix
        if prefix is None:
            return key
        if key == prefix:
            return None
        if key.startswith(prefix + "/"):
            return key[len(prefix) + 1 :]
        raise ValueError(f"key {key} does not start with the storage's strip_prefix {prefix}")

    def unstrip(self, stripped: str | None) -> str | None:
        prefix = self.strip_prefix
        if prefix is None:
            return stripped
        return prefix if stripped is None else f"{prefix}/{stripped}"

    def _matching_keys(self, key_expr: str) -> list[str]:
        out = []
        for stripped in self.volume.stored_keys():
            full = self.unstrip(stripped)
            if full is not None and intersects(key_expr, full):
                out.append(full)
        return out

    # --- updates --------------------------------------------------------------------------

    def on_sample(self, kind: str, key: str, payload: bytes, encoding: Encoding, timestamp: Timestamp) -> int:
        """Apply one sample; the number of keys it changed."""
        incoming = Stored(payload if kind == PUT else b"", encoding, timestamp)
        wild = is_wild(key)
        if wild:
            table = self.wild_puts if kind == PUT else self.wild_deletes
            table[key] = incoming
            keys = self._matching_keys(key)
        else:
            keys = [key]
        changed = 0
        for k in keys:
            override = self._overriding(k, timestamp, kind, wild)
            apply_kind, value = (kind, incoming) if override is None else (override.kind, override.value)
            try:
                stripped = self.strip(k)
                current = self.volume.get(stripped)
                if current is not None and ts_order(current.timestamp) > ts_order(value.timestamp):
                    self.ignored += 1
                    continue
                if apply_kind == PUT:
                    self.volume.put(stripped, value)
                else:
                    self.volume.delete(stripped, value.timestamp)
            except Exception as exc:  # noqa: BLE001 - a volume's failure is counted, never raised
                self.errors += 1
                log.error("storage on %s: %s on %s failed: %s", self.key_expr, apply_kind, k, exc)
                continue
            self.applied += 1
            changed += 1
        return changed

    def _overriding(self, key: str, timestamp: Timestamp, kind: str, wild: bool) -> _Wild | None:
        ts = ts_order(timestamp)
        if not (wild and kind == PUT):  # Put, Delete, WildcardDelete
            lowest: tuple[tuple[int, bytes], Stored] | None = None
            for wkey, value in self.wild_deletes.items():
                order = ts_order(value.timestamp)
                if intersects(wkey, key) and order >= ts and (lowest is None or order < lowest[0]):
                    lowest = (order, value)
            if lowest is not None:
                return _Wild(DELETE, lowest[1])
        if kind == PUT:  # Put, WildcardPut
            latest: tuple[tuple[int, bytes], Stored] | None = None
            bound = ts
            for wkey, value in self.wild_puts.items():
                order = ts_order(value.timestamp)
                if intersects(wkey, key) and order >= bound:
                    bound = order
                    latest = (order, value)
            if latest is not None:
                return _Wild(PUT, latest[1])
        return None

    def collect_garbage(self, now_s: float) -> int:
        """Forget wildcard updates older than the lifespan; how many went."""
        limit = now_s - self.lifespan_s
        gone = 0
        for table in (self.wild_puts, self.wild_deletes):
            for wkey in [k for k, v in table.items() if v.timestamp.to_seconds() < limit]:
                del table[wkey]
                gone += 1
        return gone

    # --- queries --------------------------------------------------------------------------

    def query(self, key_expr: str) -> list[tuple[str, Stored]]:
        """(key, value) for every stored key the query reaches."""
        out: list[tuple[str, Stored]] = []
        if is_wild(key_expr):
            keys = self._matching_keys(key_expr)
        else:
            keys = [key_expr]
        for key in keys:
            try:
                value = self.volume.get(self.strip(key))
            except Exception as exc:  # noqa: BLE001 - a volume's failure is counted, never raised
                self.errors += 1
                log.warning("storage on %s: cannot read %s: %s", self.key_expr, key, exc)
                continue
            if value is not None:
                out.append((key, value))
        return out

    def close(self) -> None:
        self.volume.close()


class MemoryVolume:
    """zenoh's ``memory`` backend: a dict; a deleted key is forgotten."""

    def __init__(self) -> None:
        self.data: dict[str | None, Stored] = {}

    def get(self, key: str | None) -> Stored | None:
        return self.data.get(key)

    def put(self, key: str | None, value: Stored) -> None:
        self.data[key] = value

    def delete(self, key: str | None, timestamp: Timestamp) -> None:
        self.data.pop(key, None)

    def stored_keys(self) -> Iterable[str | None]:
        return list(self.data)

    def close(self) -> None:
        self.data.clear()

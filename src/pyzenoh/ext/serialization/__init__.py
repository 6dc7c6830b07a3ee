"""zenoh-ext's serialization format, as ``zenoh.ext.z_serialize`` / ``z_deserialize`` do it.

The format (zenoh RFC "Serialization"): little-endian fixed-width numbers, ``bool`` as one
byte 0/1, sequences as an unsigned LEB128 length followed by the items, tuples as their
items one after the other (no length), maps as a length followed by key, value pairs.

What eclipse-zenoh 1.10.2's Python binding does with Python objects, established by
experiment against it (``tests/ext/test_serialization_*.py`` re-check all of it):

* a Python ``int`` is an **i32** (``Int64`` etc. for other widths); a ``float`` is an f64;
  ``Float32`` rounds to nearest and saturates to +-inf like Rust's ``as f32``;
* the type of a value is looked up *exactly* (``type(obj)``): subclasses such as
  ``IntEnum`` members or a ``list`` subclass are refused with ``TypeError``;
* ``list``/``set``/``frozenset``/``dict`` must be homogeneous: every item (every key, and
  every value) of the same exact supported type, else ``ValueError``;
  items are checked and written one at a time, so the first offending item decides which
  error is raised;
* ``z_deserialize`` takes a class or a ``types.GenericAlias`` (``list[int]``,
  ``dict[str, tuple[int, float]]``); ``typing.List``, ``Optional``, ``X | Y`` are refused
  with ``TypeError``. The item (key, value) type of a collection is looked up before its
  length is read, a tuple's item types one by one as they are reached, and a missing type
  parameter (``list[list]``) only when an item needs it: a type error may come after a
  ``ZDeserializeError`` for truncated data, or not at all when a collection is empty;
* **trailing bytes after the value are ignored** (zenoh-python does not check that the
  input was consumed); non-minimal LEB128 lengths are accepted; a tenth length byte must
  be 0 or 1 (a length is a u64).

Deliberate differences, each where the original misbehaves:

* a length prefix larger than the remaining input is a ``ZDeserializeError`` before
  anything is allocated (``str``, ``bytes``, ``bytearray``, ``ZBytes``, lists and sets of
  fixed-width numbers are checked up front; other collections are read item by item and
  every item consumes input). zenoh-python allocates first: a huge prefix there aborts
  the process ("memory allocation failed") or raises a Rust panic ("capacity overflow");
* a collection of zero-size items (``list[tuple[()]]``) consumes no input per item; at
  most :data:`ZERO_SIZE_ITEMS_LIMIT` of them are materialised per call (the original loops
  for as long as the prefix says);
* ``dict[K]`` and ``list[()]`` (missing type parameters) raise ``TypeError``, where the
  original panics (``pyo3_runtime.PanicException``, a ``BaseException``);
* ``list[Int8]`` etc. give ``Int8`` items (the original gives plain ``int``/``float`` in
  that case, so a round trip would re-serialize them as i32/f64), and
  ``frozenset[Int8]`` gives a ``frozenset`` (the original gives a ``set``, which makes
  ``set[frozenset[Int8]]`` fail there with "unhashable type: 'set'");
* the typed wrappers check their range even under ``python -O`` (zenoh-python uses
  ``assert``); the error is the same ``AssertionError``;
* :class:`ZDeserializeError` derives from :class:`pyzenoh.errors.PyZenohError` (an
  ``Exception``, as zenoh's is);
* the ``TypeError`` for an unsupported type names that type (the original names its
  metaclass: "type type is not supported").

One module per concern, each named for it; this package re-exports the public names:

* :mod:`.wrappers` -- the typed wrappers (``Int8`` ... ``UInt128``, ``Float32``, ``Float64``);
* :mod:`.kinds` -- the supported types, integer widths and ranges, fixed-width kinds;
* :mod:`.serialize` -- :func:`z_serialize`, a writer per type;
* :mod:`.reader` -- the input cursor, :class:`ZDeserializeError`, the zero-size budget;
* :mod:`.targets` -- deserialization targets (classes, ``list[int]`` ...) resolved to kinds;
* :mod:`.deserialize` -- :func:`z_deserialize`, a reader per kind.
"""

from __future__ import annotations

from pyzenoh.ext.serialization.deserialize import z_deserialize
from pyzenoh.ext.serialization.reader import ZERO_SIZE_ITEMS_LIMIT, ZDeserializeError
from pyzenoh.ext.serialization.serialize import z_serialize
from pyzenoh.ext.serialization.wrappers import (
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    Int128,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    UInt128,
)

__all__ = [
    "ZERO_SIZE_ITEMS_LIMIT",
    "Float32",
    "Float64",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Int128",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "UInt128",
    "ZDeserializeError",
    "z_deserialize",
    "z_serialize",
]

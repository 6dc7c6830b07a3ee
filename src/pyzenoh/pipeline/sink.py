"""The ``pyzenoh`` Spark sink: publish rows as Zenoh PUTs.

    df.write.format("pyzenoh").option("connect", "tcp/127.0.0.1:7447").mode("append").save()
    df.writeStream.format("pyzenoh").option("connect", ...).option("checkpointLocation", ...)

Each row gives a key (``keyColumn``, default ``key``), a payload (``payloadColumn``,
default ``payload``; binary or string, null = empty) and optionally an encoding
(``encodingColumn``, default ``encoding`` when such a column exists). Rows with a null
key are skipped and counted. Every Spark task opens its own client session.

Delivery is at-least-once, like Spark's Kafka sink: a task that is retried, or a
micro-batch that is replayed after a failure, publishes its rows again.

The client is pyzenoh's own (:func:`pyzenoh.open`), reached only through
:func:`_open_publisher`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType
from typing_extensions import override

from pyzenoh.errors import UsageError

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]


class Publisher(Protocol):
    def put(self, key: str, payload: bytes, encoding: str | None) -> None: ...

    def close(self) -> None: ...


class _PyzenohPublisher:
    """A pyzenoh client session used as a publisher."""

    def __init__(self, endpoint: str) -> None:
        import pyzenoh

        self._session = pyzenoh.open({"mode": "client", "connect": {"endpoints": [endpoint]}})
        # A sink should wait for the network rather than drop rows.
        self._block = pyzenoh.CongestionControl.BLOCK

    def put(self, key: str, payload: bytes, encoding: str | None) -> None:
        if encoding:
            self._session.put(key, payload, encoding=encoding, congestion_control=self._block)
        else:
            self._session.put(key, payload, congestion_control=self._block)

    def close(self) -> None:
        self._session.close()


def _open_publisher(endpoint: str) -> Publisher:
    """Open a client connected to ``endpoint`` (e.g. ``tcp/127.0.0.1:7447``)."""
    return _PyzenohPublisher(endpoint)


@dataclass(frozen=True)
class PublishedCommit(WriterCommitMessage):
    published: int
    skipped: int


class _Columns:
    def __init__(self, options: Any, schema: StructType) -> None:
        endpoint = options.get("connect")
        if not endpoint:
            raise UsageError('the pyzenoh sink needs .option("connect", "tcp/HOST:PORT")')
        self.endpoint = str(endpoint)
        names = set(schema.fieldNames())
        self.key = str(options.get("keyColumn", "key"))
        self.payload = str(options.get("payloadColumn", "payload"))
        enc = options.get("encodingColumn")
        self.encoding: str | None = str(enc) if enc else ("encoding" if "encoding" in names else None)
        for col in (self.key, self.payload, self.encoding):
            if col is not None and col not in names:
                raise UsageError(f"the pyzenoh sink needs a column {col!r}; the data has {sorted(names)}")


def publish_batches(cols: _Columns, batches: Iterator[pa.RecordBatch]) -> PublishedCommit:
    published = skipped = 0
    pub = _open_publisher(cols.endpoint)
    try:
        for batch in batches:
            keys = batch.column(cols.key).to_pylist()
            payloads = batch.column(cols.payload).to_pylist()
            encodings = batch.column(cols.encoding).to_pylist() if cols.encoding else [None] * len(keys)
            for key, payload, enc in zip(keys, payloads, encodings, strict=True):
                if key is None:
                    skipped += 1
                    continue
                if payload is None:
                    data = b""
                elif isinstance(payload, str):
                    data = payload.encode("utf-8")
                else:
                    data = bytes(payload)
                pub.put(key, data, enc)
                published += 1
    finally:
        pub.close()
    return PublishedCommit(published, skipped)


class ZenohBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: Any, schema: StructType) -> None:
        self.cols = _Columns(options, schema)

    @override
    def write(self, iterator: Iterator[pa.RecordBatch]) -> PublishedCommit:
        return publish_batches(self.cols, iterator)


class ZenohStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: Any, schema: StructType) -> None:
        self.cols = _Columns(options, schema)

    @override
    def write(self, iterator: Iterator[pa.RecordBatch]) -> PublishedCommit:
        return publish_batches(self.cols, iterator)

    @override
    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # puts are already out; nothing to make durable

    @override
    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # cannot unpublish; a replay publishes again (at-least-once)

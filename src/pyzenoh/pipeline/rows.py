"""Row extraction: recorded records -> typed rows and Arrow record batches.

This is the only pipeline module that knows the codec's classes. Each table has a Spark
DDL schema (the column order is the contract with Spark: Arrow batches must match it
exactly) and a row builder producing plain tuples; :class:`BatchBuilder` turns tuples into
``pyarrow.RecordBatch`` objects column by column.

A network message that does not decode becomes a row with ``msg_type = "invalid"``, the
decoder's message in ``error`` and the bytes in ``raw``; it never stops a job.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyzenoh.codec.data import Del, Err, Put, Query, Reply
from pyzenoh.codec.network import (
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Interest,
    NetworkOam,
    Push,
    Request,
    Response,
    ResponseFinal,
    UndeclareKeyExpr,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    decode_network_message,
)
from pyzenoh.codec.primitives import Encoding, Timestamp, WireExpr
from pyzenoh.dataplane import ID_DEL, ID_PUSH, scan_push
from pyzenoh.errors import DecodeError

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
    from pyspark.sql.types import StructType

# Rows per Arrow batch handed to Spark.
BATCH_ROWS = 8192

_POSITION = "seg INT, rec BIGINT, run INT, seq BIGINT, time_ns BIGINT, timestamp TIMESTAMP"

MESSAGES_DDL = ", ".join(  # noqa: FLY002 - one line per group of columns
    [
        _POSITION,
        "link INT, zid STRING, whatami STRING, remote STRING, direction STRING, cause BIGINT",
        "msg_type STRING, body_type STRING",
        "key STRING, wire_scope INT, wire_suffix STRING, wire_mapping_sender BOOLEAN",
        "priority INT, congestion_block BOOLEAN, express BOOLEAN",
        "payload BINARY, payload_size INT, encoding STRING, attachment_size INT",
        "data_ts_ns BIGINT, data_ts_id STRING, source_zid STRING, source_eid BIGINT",
        "request_id BIGINT, target STRING, consolidation STRING, parameters STRING",
        "budget BIGINT, timeout_ms BIGINT",
        "reply_kind STRING, responder_zid STRING, responder_eid BIGINT",
        "decl_kind STRING, decl_op STRING, entity_id BIGINT",
        "queryable_complete BOOLEAN, queryable_distance INT",
        "interest_id BIGINT, interest_mode STRING, interest_options INT",
        "interest_aggregate BOOLEAN, oam_id INT",
        "raw_size INT, raw BINARY, error STRING",
    ]
)

ROUTES_DDL = _POSITION + ", cause BIGINT, key STRING, expected_links ARRAY<INT>"

# event: open, close or denied (access control denied a message on the link: cause is
# the rx record being routed, -1 none; flow, message and key what was denied).
LINKS_DDL = (
    _POSITION + ", event STRING, link INT, zid STRING, whatami STRING, remote STRING,"
    " reason STRING, carried BOOLEAN, cause BIGINT, flow STRING, message STRING, key STRING"
)

# One row per published sample (pipeline/samples.py): the position of its rx record (when
# first seen), then the sample, its HLC timestamp and its payload as typed values.
SAMPLES_DDL = ", ".join(  # noqa: FLY002 - one line per group of columns
    [
        _POSITION,
        "link INT, publisher_zid STRING, publisher_whatami STRING",
        "key STRING, kind STRING, priority INT",
        "payload BINARY, payload_size INT, encoding STRING, attachment BINARY",
        "hlc_ns BIGINT, hlc_id STRING, source_zid STRING, source_eid BIGINT",
        "value_text STRING, value_json STRING, value_number DOUBLE",
    ]
)

TABLE_DDL = {"messages": MESSAGES_DDL, "routes": ROUTES_DDL, "links": LINKS_DDL, "samples": SAMPLES_DDL}


def ddl_columns(ddl: str) -> list[str]:
    """Column names of one of the DDL strings above (fields are joined by ", ")."""
    return [part.split()[0] for part in ddl.split(", ")]


MESSAGE_COLUMNS = ddl_columns(MESSAGES_DDL)
N_COLUMNS = _N = len(MESSAGE_COLUMNS)
_I = {name: i for i, name in enumerate(MESSAGE_COLUMNS)}
# Column positions used when filling a row (plain ints: the loop below is hot).
(
    C_LINK,
    C_ZID,
    C_WHATAMI,
    C_REMOTE,
    C_DIRECTION,
    C_CAUSE,
    C_MSG,
    C_BODY,
    C_KEY,
    C_SCOPE,
    C_SUFFIX,
    C_MAPPING,
    C_PRIO,
    C_BLOCK,
    C_EXPRESS,
    C_PAYLOAD,
    C_PSIZE,
    C_ENC,
    C_ATT,
    C_TS,
    C_TSID,
    C_SRCZID,
    C_SRCEID,
    C_RID,
    C_TARGET,
    C_CONS,
    C_PARAMS,
    C_BUDGET,
    C_TIMEOUT,
    C_RKIND,
    C_RZID,
    C_REID,
    C_DKIND,
    C_DOP,
    C_EID,
    C_QCOMPLETE,
    C_QDIST,
    C_IID,
    C_IMODE,
    C_IOPTS,
    C_IAGG,
    C_OAM,
    C_RAWSIZE,
    C_RAW,
    C_ERROR,
) = (_I[c] for c in MESSAGE_COLUMNS[6:])

_TARGETS = {0: "best_matching", 1: "all", 2: "all_complete"}
_CONSOLIDATION = {0: "auto", 1: "none", 2: "monotonic", 3: "latest"}
_INTEREST_MODES = {0: "final", 1: "current", 2: "future", 3: "current_future"}
# Declaration body class -> (body_type, decl_kind, decl_op)
_DECLS: dict[type, tuple[str, str, str]] = {
    DeclareKeyExpr: ("d_keyexpr", "keyexpr", "declare"),
    UndeclareKeyExpr: ("u_keyexpr", "keyexpr", "undeclare"),
    DeclareSubscriber: ("d_subscriber", "subscriber", "declare"),
    UndeclareSubscriber: ("u_subscriber", "subscriber", "undeclare"),
    DeclareQueryable: ("d_queryable", "queryable", "declare"),
    UndeclareQueryable: ("u_queryable", "queryable", "undeclare"),
    DeclareToken: ("d_token", "token", "declare"),
    UndeclareToken: ("u_token", "token", "undeclare"),
    DeclareFinal: ("d_final", "final", "final"),
}
_ENCODING_NAMES: dict[Encoding, str] = {}


def _encoding(enc: Encoding) -> str:
    name = _ENCODING_NAMES.get(enc)
    if name is None:
        name = str(enc)
        if len(_ENCODING_NAMES) < 1024:
            _ENCODING_NAMES[enc] = name
    return name


def ntp64_to_ns(t: int) -> int:
    """NTP64 (seconds since 1970 << 32 | fraction) to Unix nanoseconds."""
    return (t >> 32) * 1_000_000_000 + (((t & 0xFFFF_FFFF) * 1_000_000_000) >> 32)


def _wire(row: list[Any], we: WireExpr | None) -> None:
    if we is not None:
        row[C_SCOPE] = we.scope
        row[C_SUFFIX] = we.suffix
        row[C_MAPPING] = we.mapping_sender


def _qos(row: list[Any], qos: int) -> None:
    row[C_PRIO] = qos & 0x07
    row[C_BLOCK] = bool(qos & 0x08)
    row[C_EXPRESS] = bool(qos & 0x10)


def _timestamp(row: list[Any], ts: Timestamp | None) -> None:
    if ts is not None:
        row[C_TS] = ntp64_to_ns(ts.time)
        row[C_TSID] = str(ts.id)


def _data(row: list[Any], body: Put | Del) -> None:
    if isinstance(body, Put):
        row[C_BODY] = "put"
        row[C_PAYLOAD] = body.payload
        row[C_PSIZE] = len(body.payload)
        row[C_ENC] = _encoding(body.encoding)
    else:
        row[C_BODY] = "del"
        row[C_PSIZE] = 0
    if body.attachment is not None:
        row[C_ATT] = len(body.attachment)
    _timestamp(row, body.timestamp)
    if body.source_info is not None:
        row[C_SRCZID] = str(body.source_info.zid)
        row[C_SRCEID] = body.source_info.eid


def _fill(row: list[Any], msg: object) -> None:
    match msg:
        case Push():
            _push(row, msg)
        case Request():
            _request(row, msg)
        case Response():
            _response(row, msg)
        case ResponseFinal():
            row[C_MSG] = "response_final"
            row[C_RID] = msg.request_id
            _qos(row, msg.qos)
            _timestamp(row, msg.timestamp)
        case Declare():
            _declare(row, msg)
        case Interest():
            row[C_MSG] = "interest"
            row[C_IID] = msg.interest_id
            row[C_IMODE] = _INTEREST_MODES.get(int(msg.mode), str(int(msg.mode)))
            row[C_IOPTS] = int(msg.options)
            row[C_IAGG] = msg.aggregate
            _wire(row, msg.wire_expr)
            _qos(row, msg.qos)
            _timestamp(row, msg.timestamp)
        case NetworkOam():
            row[C_MSG] = "oam"
            row[C_OAM] = msg.oam_id
            _qos(row, msg.qos)
            _timestamp(row, msg.timestamp)
            if isinstance(msg.body, bytes):
                row[C_PAYLOAD] = msg.body
                row[C_PSIZE] = len(msg.body)


def _push(row: list[Any], msg: Push) -> None:
    row[C_MSG] = "push"
    _wire(row, msg.wire_expr)
    _qos(row, msg.qos)
    _data(row, msg.body)
    if msg.timestamp is not None and row[C_TS] is None:
        _timestamp(row, msg.timestamp)


def _request(row: list[Any], msg: Request) -> None:
    row[C_MSG] = "request"
    row[C_RID] = msg.request_id
    _wire(row, msg.wire_expr)
    _qos(row, msg.qos)
    row[C_TARGET] = _TARGETS.get(int(msg.target), str(int(msg.target)))
    row[C_BUDGET] = msg.budget
    row[C_TIMEOUT] = msg.timeout_ms
    q: Query = msg.body
    row[C_BODY] = "query"
    if q.consolidation is not None:
        row[C_CONS] = _CONSOLIDATION.get(q.consolidation, "auto")
    row[C_PARAMS] = q.parameters
    if q.body is not None:
        row[C_PAYLOAD] = q.body.payload
        row[C_PSIZE] = len(q.body.payload)
        row[C_ENC] = _encoding(q.body.encoding)
    else:
        row[C_PSIZE] = 0
    if q.attachment is not None:
        row[C_ATT] = len(q.attachment)
    if q.source_info is not None:
        row[C_SRCZID] = str(q.source_info.zid)
        row[C_SRCEID] = q.source_info.eid
    _timestamp(row, msg.timestamp)


def _response(row: list[Any], msg: Response) -> None:
    row[C_MSG] = "response"
    row[C_RID] = msg.request_id
    _wire(row, msg.wire_expr)
    _qos(row, msg.qos)
    if msg.responder is not None:
        row[C_RZID] = str(msg.responder.zid)
        row[C_REID] = msg.responder.eid
    match msg.body:
        case Reply() as reply:
            row[C_RKIND] = "reply"
            _data(row, reply.body)
            if reply.consolidation is not None:
                row[C_CONS] = _CONSOLIDATION.get(reply.consolidation, "auto")
        case Err() as err:
            row[C_RKIND] = "err"
            row[C_BODY] = "err"
            row[C_PAYLOAD] = err.payload
            row[C_PSIZE] = len(err.payload)
            row[C_ENC] = _encoding(err.encoding)
            if err.source_info is not None:
                row[C_SRCZID] = str(err.source_info.zid)
                row[C_SRCEID] = err.source_info.eid
    if row[C_TS] is None:
        _timestamp(row, msg.timestamp)


def _declare(row: list[Any], msg: Declare) -> None:
    row[C_MSG] = "declare"
    row[C_IID] = msg.interest_id
    _qos(row, msg.qos)
    _timestamp(row, msg.timestamp)
    b = msg.body
    row[C_BODY], row[C_DKIND], row[C_DOP] = _DECLS[type(b)]
    match b:
        case DeclareKeyExpr() | UndeclareKeyExpr():
            row[C_EID] = b.expr_id
        case DeclareFinal():
            pass
        case _:
            row[C_EID] = b.entity_id
    match b:
        case DeclareQueryable():
            row[C_QCOMPLETE] = b.complete
            row[C_QDIST] = b.distance
            _wire(row, b.wire_expr)
        case DeclareKeyExpr() | DeclareSubscriber() | DeclareToken():
            _wire(row, b.wire_expr)


def message_row(
    seg: int,
    rec: int,
    run: int,
    seq: int,
    time_ns: int,
    link: int,
    link_info: tuple[str | None, str | None, str | None] | None,
    direction: str,
    cause: int,
    key: str | None,
    raw: bytes | memoryview,
) -> tuple[Any, ...]:
    """One ``messages`` row for a recorded network message (decoded with pyzenoh's codec)."""
    row = list(decode_template(bytes(raw)))
    row[0] = seg
    row[1] = rec
    row[2] = run
    row[3] = seq
    row[4] = time_ns
    row[5] = time_ns // 1000
    row[C_LINK] = link
    if link_info is not None:
        row[C_ZID], row[C_WHATAMI], row[C_REMOTE] = link_info
    row[C_DIRECTION] = direction
    row[C_CAUSE] = cause
    if key is not None:
        row[C_KEY] = key
    return tuple(row)


# Decoded message columns by raw bytes: a router sends the very same bytes to every
# subscriber of a PUSH, so fan-out copies decode once.
DECODE_CACHE_SIZE = 4096
_DECODED: dict[bytes, tuple[Any, ...]] = {}


def decode_template(raw: bytes) -> tuple[Any, ...]:
    """A full-width row holding only what the message bytes determine (from ``msg_type``
    on, plus ``key`` for an unscoped wire key); the rest is None. Cached by bytes."""
    template = _DECODED.get(raw)
    if template is None:
        template = _decode_template(raw)
        if len(_DECODED) >= DECODE_CACHE_SIZE:
            _DECODED.clear()
        _DECODED[raw] = template
    return template


def _push_template(raw: bytes) -> tuple[Any, ...] | None:
    """The template of a common-shape PUSH(PUT/DEL) read field by field, without building
    codec objects; None for any other shape. Equal to the codec path's (tests check)."""
    f = scan_push(raw, 0, len(raw))
    if f is None or f[0] != len(raw):
        return None
    _, scope, suffix, mapping, qos, _, kind, ts, enc, a, b, _ = f
    row: list[Any] = [None] * _N
    row[C_RAWSIZE] = len(raw)
    row[C_MSG] = "push"
    row[C_SCOPE] = scope
    row[C_SUFFIX] = suffix
    row[C_MAPPING] = mapping
    _qos(row, qos)
    if kind == ID_DEL:
        row[C_BODY] = "del"
        row[C_PSIZE] = 0
    else:
        row[C_BODY] = "put"
        row[C_PAYLOAD] = raw[a:b]
        row[C_PSIZE] = b - a
        row[C_ENC] = _encoding(enc)
    _timestamp(row, ts)
    if scope == 0 and suffix:
        row[C_KEY] = suffix
    return tuple(row)


def _decode_template(raw: bytes) -> tuple[Any, ...]:
    if raw and raw[0] & 0x1F == ID_PUSH:
        fast = _push_template(raw)
        if fast is not None:
            return fast
    return _codec_template(raw)


def _codec_template(raw: bytes) -> tuple[Any, ...]:
    row: list[Any] = [None] * _N
    row[C_RAWSIZE] = len(raw)
    try:
        _fill(row, decode_network_message(raw))
    except DecodeError as exc:
        row = _invalid(row, str(exc), raw)
    except Exception as exc:  # noqa: BLE001 - a codec bug must not kill the job either
        row = _invalid(row, f"decoder failure: {type(exc).__name__}: {exc}", raw)
    if row[C_SCOPE] == 0 and row[C_SUFFIX]:
        row[C_KEY] = row[C_SUFFIX]  # an unscoped wire key is the full key (the record's wins)
    return tuple(row)


def invalid_row(
    seg: int,
    rec: int,
    run: int,
    seq: int,
    time_ns: int,
    link: int,
    error: str,
    raw: bytes,
) -> tuple[Any, ...]:
    """A ``messages`` row for a record whose container could not even be parsed."""
    row: list[Any] = [None] * _N
    row[0:6] = [seg, rec, run, seq, time_ns, time_ns // 1000]
    row[C_LINK] = link
    row[C_RAWSIZE] = len(raw)
    return tuple(_invalid(row, error, raw))


def _invalid(row: list[Any], error: str, raw: bytes | memoryview) -> list[Any]:
    keep = row[: C_KEY + 1]
    row = keep + [None] * (_N - len(keep))
    row[C_MSG] = "invalid"
    row[C_RAWSIZE] = len(raw)
    row[C_RAW] = bytes(raw)
    row[C_ERROR] = error
    return row


def route_row(
    seg: int,
    rec: int,
    run: int,
    seq: int,
    time_ns: int,
    cause: int,
    key: str,
    links: Sequence[int],
) -> tuple[Any, ...]:
    return (seg, rec, run, seq, time_ns, time_ns // 1000, cause, key, list(links))


def link_row(
    seg: int,
    rec: int,
    run: int,
    seq: int,
    time_ns: int,
    event: str,
    link: int,
    zid: str | None,
    whatami: str | None,
    remote: str | None,
    reason: str | None,
    carried: bool,
    cause: int | None = None,
    flow: str | None = None,
    message: str | None = None,
    key: str | None = None,
) -> tuple[Any, ...]:
    return (
        seg,
        rec,
        run,
        seq,
        time_ns,
        time_ns // 1000,
        event,
        link,
        zid,
        whatami,
        remote,
        reason,
        carried,
        cause,
        flow,
        message,
        key,
    )


class BatchBuilder:
    """Accumulates row tuples and emits Arrow record batches of a fixed schema."""

    def __init__(self, schema: pa.Schema, batch_rows: int = BATCH_ROWS) -> None:
        self.schema = schema
        self.batch_rows = batch_rows
        self.rows: list[tuple[Any, ...]] = []

    def add(self, row: tuple[Any, ...]) -> pa.RecordBatch | None:
        self.rows.append(row)
        if len(self.rows) >= self.batch_rows:
            return self.flush()
        return None

    def flush(self) -> pa.RecordBatch | None:
        if not self.rows:
            return None
        import pyarrow as pa

        rows, self.rows = self.rows, []
        columns = list(zip(*rows, strict=True))
        arrays = [pa.array(col, type=field.type) for col, field in zip(columns, self.schema, strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def spark_schema(ddl: str) -> StructType:
    """The Spark schema of one of the tables above, built without a JVM."""
    from pyspark.sql import types as t

    simple: dict[str, t.DataType] = {
        "INT": t.IntegerType(),
        "BIGINT": t.LongType(),
        "STRING": t.StringType(),
        "BINARY": t.BinaryType(),
        "BOOLEAN": t.BooleanType(),
        "DOUBLE": t.DoubleType(),
        "TIMESTAMP": t.TimestampType(),
        "ARRAY<INT>": t.ArrayType(t.IntegerType()),
    }
    fields = []
    for part in ddl.split(", "):
        name, typ = part.strip().split(" ", 1)
        fields.append(t.StructField(name, simple[typ], nullable=True))
    return t.StructType(fields)


def arrow_schema(schema: StructType | str) -> pa.Schema:
    """The exact Arrow schema Spark expects for batches of a table with this schema."""
    from pyspark.sql.pandas.types import to_arrow_schema

    if isinstance(schema, str):
        schema = spark_schema(schema)
    return to_arrow_schema(schema, timezone="UTC")


def rows_to_batches(
    rows: Iterator[tuple[Any, ...]], schema: pa.Schema, batch_rows: int = BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    builder = BatchBuilder(schema, batch_rows)
    for row in rows:
        batch = builder.add(row)
        if batch is not None:
            yield batch
    last = builder.flush()
    if last is not None:
        yield last

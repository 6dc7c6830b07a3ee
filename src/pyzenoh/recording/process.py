"""The recorder in a child process of its own, fed by the router in batches.

:class:`RecorderProcess` takes the same calls as :class:`~pyzenoh.recording.recorder.Recorder`
and replays them on one in a child process: the router then pays for queuing its calls
(under half a microsecond per routed PUSH, batches marshalled and piped included) instead
of packing, CRCs and writes (over a microsecond, and what the kernel charges for
page-cache writes varies with the disk).
"""

from __future__ import annotations

import contextlib
import json
import logging
import marshal
import os
import signal
import struct
import subprocess
import sys
from collections.abc import Sequence
from typing import BinaryIO, Self

from pyzenoh.errors import DecodeError, UsageError
from pyzenoh.recording import format as fmt
from pyzenoh.recording.recorder import (
    FILTER_CACHE_SIZE,
    Recorder,
    accepts,
    check_denial,
    check_options,
    direction_code,
)
from pyzenoh.recording.runs import plain_ends

# -- the recorder in a process of its own ---------------------------------------------------

# The calls a RecorderProcess forwards, as (op, now_ns, ...) tuples.
(
    _CALL_OPEN,
    _CALL_CLOSE,
    _CALL_MESSAGE,
    _CALL_MESSAGES,
    _CALL_ROUTED,
    _CALL_ROUTE,
    _CALL_TICK,
    _CALL_DENIED,
    _CALL_ROUTED_RUN,
) = range(9)
# The router sends its queued calls when it holds this many, or on the first call at
# least this much router time after the previous batch (and on every tick).
BATCH_CALLS = 512
BATCH_NS = 50_000_000
# Seconds close() waits for the recorder process to write its last chunk and summary.
CLOSE_TIMEOUT_S = 60.0
_BATCH_HEAD = struct.Struct("<Q")  # length of the marshalled batch that follows
_MARSHAL_VERSION = 2  # no object references: the fastest to write for these tuples
_F_SETPIPE_SZ = 1031  # Linux fcntl
_PIPE_BYTES = 1 << 20
_REF_MEMO = 1 << 16

log = logging.getLogger(__name__)

_CHILD = "import sys; from pyzenoh.recording.process import serve; sys.exit(serve(sys.argv[1]))"


class RecorderProcess:
    """A :class:`Recorder` in a child process, fed by the router in batches.

    Same calls as :class:`Recorder`; each costs the router only its queuing (a tuple),
    plus one ``marshal`` and one pipe write per batch of :data:`BATCH_CALLS` calls:
    packing records, CRCs, indexes and file writes happen in the child, which replays
    the calls in order on a :class:`Recorder` and so writes exactly the files the router
    would have written itself.

    The child assigns seqs, so :meth:`message`, :meth:`messages`, :meth:`routed` and
    :meth:`access_denied` return a *reference* to their first record instead of its
    seq: pass it as the ``cause`` of later calls, like a seq (-1 still means "filtered
    out", "no cause").

    Durability: the child writes chunks on the router's time (the ``now_ns`` of the
    calls), like a Recorder in process. A batch waits in the router at most
    :data:`BATCH_NS` of router time while calls come, and until the next :meth:`tick`
    when they stop. If the router dies, the child writes what it received and closes the
    segment cleanly. If the child dies, recording stops (logged) and routing goes on.
    Bad calls (a key too long to record, link ids out of range) are logged and skipped
    by the child instead of raising here; an :meth:`access_denied` with bad values is
    logged and skipped here.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_segment_bytes: int = 64 << 20,
        max_segment_seconds: float = 300.0,
        key_filter: str | None = None,
        zid: str | None = None,
    ) -> None:
        check_options(max_segment_bytes, max_segment_seconds, key_filter)
        options = {
            "zid": zid,
            "directory": os.fspath(directory),
            "max_segment_bytes": max_segment_bytes,
            "max_segment_seconds": max_segment_seconds,
            "key_filter": key_filter,
        }
        # A session of its own: a Ctrl-C meant for the router does not cut the child
        # short; it ends when the router closes the pipe (or dies).
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        status = self._proc.stdout.readline()
        self._proc.stdout.close()
        if status != b"ok\n":
            self._proc.stdin.close()
            self._proc.wait()
            detail = status.decode("utf-8", "replace").strip() or "exited"
            raise UsageError(f"recorder process: {detail}")
        self._pipe = self._proc.stdin
        self._fd = self._pipe.fileno()
        with contextlib.suppress(OSError, ImportError):  # a bigger pipe, on Linux
            import fcntl

            fcntl.fcntl(self._fd, _F_SETPIPE_SZ, _PIPE_BYTES)
        self._filter = key_filter
        self._verdicts: dict[str, bool] = {}
        self._calls: list[tuple[object, ...]] = []
        self._base = 0  # reference of the first queued call
        self._send_at = 0
        self._run_bytes = 0  # bytes of the runs queued (routed_run)
        self._closed = False
        self._failed = False

    # -- the router's API ----------------------------------------------------------------

    def link_opened(self, now_ns: int, link_id: int, zid: str, whatami: str, remote: str) -> None:
        self._queue(now_ns, (_CALL_OPEN, now_ns, link_id, zid, whatami, remote))

    def link_closed(self, now_ns: int, link_id: int, reason: str) -> None:
        self._queue(now_ns, (_CALL_CLOSE, now_ns, link_id, reason))

    def access_denied(
        self,
        now_ns: int,
        cause: int,
        link_id: int,
        flow: str,
        message: str,
        key: str | None,
        reason: str,
    ) -> int:
        """:meth:`Recorder.access_denied` (``cause`` a reference, as other calls'):
        returns a reference, -1 when the key filter drops it. Bad values are logged and
        the call skipped here (they never reach the batch)."""
        return self._stopped(fmt.DENIED, now_ns, cause, link_id, flow, message, key, reason)

    def intercepted(
        self,
        now_ns: int,
        cause: int,
        link_id: int,
        flow: str,
        message: str,
        key: str | None,
        reason: str,
    ) -> int:
        """:meth:`Recorder.intercepted`, as :meth:`access_denied`."""
        return self._stopped(fmt.INTERCEPTED, now_ns, cause, link_id, flow, message, key, reason)

    def _stopped(
        self, event: str, now_ns: int, cause: int, link_id: int, flow: str, message: str, key: str | None, reason: str
    ) -> int:
        self._check_open()
        try:
            check_denial(now_ns, cause, link_id, flow, message, key, reason)
        except UsageError as exc:
            log.warning("%s skipped: %s", "access_denied" if event == fmt.DENIED else event, exc)
            return -1
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        # The key stays whole: the child's key filter decides on it as a Recorder's does.
        call = (
            _CALL_DENIED,
            now_ns,
            cause,
            link_id,
            flow[: fmt.MAX_DENIED_NAME_CHARS],
            message[: fmt.MAX_DENIED_NAME_CHARS],
            key,
            reason[: fmt.MAX_DENIED_TEXT_CHARS],
            event,
        )
        return self._queue(now_ns, call)

    def message(
        self,
        now_ns: int,
        link_id: int,
        direction: str,
        key: str | None,
        raw: bytes | bytearray | memoryview,
        cause: int = -1,
    ) -> int:
        """Record one network message; returns its reference (-1: filtered out)."""
        if self._closed:
            raise UsageError("recorder is closed")
        d = direction_code(direction)
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        if type(raw) is not bytes:
            raw = bytes(raw)  # the caller may reuse its buffer before the batch goes
        return self._queue(now_ns, (_CALL_MESSAGE, now_ns, link_id, d, key, raw, cause))

    def messages(
        self,
        now_ns: int,
        direction: str,
        key: str | None,
        sends: Sequence[tuple[int, bytes | bytearray | memoryview]],
        cause: int = -1,
    ) -> int:
        """:meth:`Recorder.messages`; returns a reference to the first record."""
        if self._closed:
            raise UsageError("recorder is closed")
        d = direction_code(direction)
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        if not sends:
            return -1
        return self._queue(now_ns, (_CALL_MESSAGES, now_ns, d, key, _frozen(sends), cause))

    def routed(
        self,
        now_ns: int,
        link_id: int,
        key: str | None,
        raw: bytes,
        copies: Sequence[tuple[int, bytes]],
    ) -> int:
        """:meth:`Recorder.routed`; returns a reference to the rx record.

        The router's hot path: ``raw`` and the copies' raw bytes must be ``bytes`` (they
        are kept until the batch is sent), and ``copies`` must not change afterwards.
        """
        if self._closed:
            raise UsageError("recorder is closed")
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        calls = self._calls
        ref = self._base + len(calls)
        calls.append((_CALL_ROUTED, now_ns, link_id, key, raw, copies))
        if len(calls) >= BATCH_CALLS or now_ns >= self._send_at:
            self._send(now_ns)
        return ref

    def routed_run(
        self,
        now_ns: int,
        link_id: int,
        key: str | None,
        data: bytes,
        ends: Sequence[int] | int,
        copies: Sequence[tuple[int, bytes, Sequence[int] | int]],
        expected: list[int] | None = None,
    ) -> int:
        """:meth:`Recorder.routed_run`; returns a reference to the first rx record. One
        queued call for the whole run: the child builds its records."""
        if self._closed:
            raise UsageError("recorder is closed")
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        calls = self._calls
        ref = self._base + len(calls)
        calls.append(
            (
                _CALL_ROUTED_RUN,
                now_ns,
                link_id,
                key,
                data,
                plain_ends(ends),
                [(link, d, plain_ends(e)) for link, d, e in copies],
                expected,
            )
        )
        # A run carries up to a batch of bytes per copy: the batch goes by its size too,
        # so one pipe write stays about the pipe's size.
        self._run_bytes += len(data) * (1 + len(copies))
        if len(calls) >= BATCH_CALLS or now_ns >= self._send_at or self._run_bytes >= _PIPE_BYTES:
            self._send(now_ns)
        return ref

    def route(self, now_ns: int, cause: int, key: str, expected_links: list[int]) -> None:
        self._check_open()
        if self._filter is not None and not self._accept(key):
            return
        self._queue(now_ns, (_CALL_ROUTE, now_ns, cause, key, list(expected_links)))

    def tick(self, now_ns: int) -> None:
        """Send the queued calls and let the child's recorder see the time pass."""
        self._check_open()
        self._calls.append((_CALL_TICK, now_ns))
        self._send(now_ns)

    def close(self) -> None:
        """Send the queued calls and wait for the child to close its last segment."""
        if self._closed:
            return
        self._send(0)
        self._closed = True
        with contextlib.suppress(OSError):
            self._pipe.close()
        try:
            code = self._proc.wait(timeout=CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.error("recorder process did not finish in %.0f s; killing it", CLOSE_TIMEOUT_S)
            self._proc.kill()
            code = self._proc.wait()
        if code != 0:
            log.error("recorder process exited with status %s", code)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int:
        """The recorder process's id."""
        return self._proc.pid

    # -- internals -----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("recorder is closed")

    def _accept(self, key: str) -> bool:
        verdict = self._verdicts.get(key)
        if verdict is None:
            assert self._filter is not None
            if len(self._verdicts) >= FILTER_CACHE_SIZE:
                self._verdicts.clear()
            verdict = self._verdicts[key] = accepts(self._filter, key)
        return verdict

    def _queue(self, now_ns: int, call: tuple[object, ...]) -> int:
        self._check_open()
        calls = self._calls
        ref = self._base + len(calls)
        calls.append(call)
        if len(calls) >= BATCH_CALLS or now_ns >= self._send_at:
            self._send(now_ns)
        return ref

    def _send(self, now_ns: int) -> None:
        self._send_at = now_ns + BATCH_NS
        self._run_bytes = 0
        calls = self._calls
        if not calls:
            return
        self._calls = []
        self._base += len(calls)
        if self._failed:
            return
        body = marshal.dumps(calls, _MARSHAL_VERSION)
        try:
            _write_all(self._fd, [_BATCH_HEAD.pack(len(body)), body])
        except OSError as exc:
            self._failed = True
            log.error("recorder process gone (%s): recording stopped", exc)


def _frozen(
    sends: Sequence[tuple[int, bytes | bytearray | memoryview]],
) -> Sequence[tuple[int, bytes | bytearray | memoryview]]:
    """``sends`` as they are now: raw bytes that are not ``bytes`` are copied (the
    caller may reuse its buffers before the batch is sent)."""
    for _, raw in sends:
        if type(raw) is not bytes:
            return [(link, bytes(data)) for link, data in sends]
    return sends


def _write_all(fd: int, parts: list[bytes]) -> None:
    total = sum(len(p) for p in parts)
    written = os.writev(fd, parts)
    if written != total:
        rest = memoryview(b"".join(parts))[written:]
        while rest:
            rest = rest[os.write(fd, rest) :]


def serve(options_json: str) -> int:
    """The recorder process: replays the batches of calls read on stdin on a Recorder.

    Prints ``ok`` (or the error) once the Recorder is open; returns when stdin closes,
    after closing the Recorder.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format="recorder process: %(message)s")
    opts = json.loads(options_json)
    try:
        rec = Recorder(
            opts["directory"],
            max_segment_bytes=opts["max_segment_bytes"],
            max_segment_seconds=opts["max_segment_seconds"],
            key_filter=opts["key_filter"],
            zid=opts.get("zid"),
        )
    except (UsageError, OSError, DecodeError) as exc:
        sys.stdout.write(f"{type(exc).__name__}: {exc}\n")
        return 1
    sys.stdout.write("ok\n")
    sys.stdout.close()
    src = sys.stdin.buffer
    try:
        _replay(src, rec)
    finally:
        rec.close()
    return 0


def _replay(src: BinaryIO, rec: Recorder) -> None:
    # Reference of a call -> seq of its (first) record, for the calls' causes.
    seqs: dict[int, int] = {}
    older: dict[int, int] = {}

    def seq_of(ref: int) -> int:
        if ref < 0:
            return -1
        seq = seqs.get(ref)
        return older.get(ref, -1) if seq is None else seq

    routed = rec.routed
    ref = 0
    while True:
        head = src.read(_BATCH_HEAD.size)
        if len(head) < _BATCH_HEAD.size:
            return
        (size,) = _BATCH_HEAD.unpack(head)
        body = src.read(size)
        if len(body) < size:
            return  # the router died while sending: this batch is incomplete
        for call in marshal.loads(body):
            op = call[0]
            try:
                if op == _CALL_ROUTED:
                    _, now, link, key, raw, copies = call
                    seqs[ref] = routed(now, link, key, raw, copies)
                elif op == _CALL_ROUTED_RUN:
                    seqs[ref] = rec.routed_run(*call[1:])
                elif op == _CALL_MESSAGE:
                    now, link, d, key, raw, cause = call[1:]
                    seqs[ref] = rec.message(now, link, fmt.DIRECTIONS[d], key, raw, seq_of(cause))
                elif op == _CALL_MESSAGES:
                    now, d, key, sends, cause = call[1:]
                    seqs[ref] = rec.messages(now, fmt.DIRECTIONS[d], key, sends, seq_of(cause))
                elif op == _CALL_ROUTE:
                    now, cause, key, links = call[1:]
                    rec.route(now, seq_of(cause), key, links)
                elif op == _CALL_OPEN:
                    rec.link_opened(*call[1:])
                elif op == _CALL_CLOSE:
                    rec.link_closed(*call[1:])
                elif op == _CALL_TICK:
                    rec.tick(call[1])
                elif op == _CALL_DENIED:
                    now, cause, link, flow, message, key, reason, event = call[1:]
                    stop = rec.intercepted if event == fmt.INTERCEPTED else rec.access_denied
                    seqs[ref] = stop(now, seq_of(cause), link, flow, message, key, reason)
            except (
                UsageError,
                struct.error,
                OverflowError,
                TypeError,
                ValueError,
            ) as exc:
                log.warning("call %d skipped: %s", op, exc)
            ref += 1
        if len(seqs) >= _REF_MEMO:
            older, seqs = seqs, {}

"""``pyzenoh replay``: recorded samples played into a live router or mesh, as a client;
``pyzenoh export-mcap``: the same samples written as MCAP with a schema per key.

The selection and the pacing are :mod:`.replay`'s; here are the session, the waits and the
progress line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
import time
from typing import Any

from pyzenoh.codec.network import QOS_BLOCK, QOS_EXPRESS
from pyzenoh.errors import UsageError
from pyzenoh.recording.reader import read_records
from pyzenoh.recording.replay import Pacing, RecordedSample, recorded_samples

log = logging.getLogger(__name__)

#: Seconds between two progress lines.
PROGRESS_EVERY_S = 1.0


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "replay",
        help="play recorded samples into a live router or mesh",
        description=(
            "Play the PUT/DELETE samples of one or more recordings (pyzenoh router --record "
            "directories; several for the routers of one mesh) into a router as a client: keys, "
            "payloads, encodings, attachments, QoS and the timestamps the recording router gave "
            "them, each sample once and in recorded order, at recorded pace times --speed."
        ),
    )
    p.add_argument("recordings", nargs="+", metavar="REC", help="a recording directory")
    p.add_argument("-e", "--connect", action="append", required=True, metavar="ENDPOINT", help="router endpoint")
    p.add_argument("--speed", type=float, default=1.0, help="pace factor (2: twice as fast; 0: no waiting)")
    p.add_argument("--keys", metavar="KEYEXPR", help="only samples whose key intersects KEYEXPR")
    p.add_argument("--from", dest="start", metavar="T", help="start: seconds after the first sample, or ISO time")
    p.add_argument("--to", dest="end", metavar="T", help="end: seconds after the first sample, or ISO time")
    p.add_argument("--no-timestamps", action="store_true", help="let the router stamp the samples anew")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(handler=_run)

    x = subparsers.add_parser(
        "export-mcap",
        help="write recorded samples as an MCAP file with a JSON Schema per key (Foxglove, mcap tools)",
        description=(
            "Write the samples of one or more recordings (each once, as pyzenoh replay plays them) "
            "to an MCAP file: one channel per key with a JSON Schema, JSON messages; JSON and "
            "numeric text payloads become fields Foxglove can plot."
        ),
    )
    x.add_argument("recordings", nargs="+", metavar="REC", help="a recording directory")
    x.add_argument("-o", "--output", required=True, metavar="FILE", help="the MCAP file to write")
    x.add_argument("--keys", metavar="KEYEXPR", help="only samples whose key intersects KEYEXPR")
    x.set_defaults(handler=_export)


def _when(value: str | None) -> tuple[float | None, int | None]:
    """(seconds after the first sample, wall-clock ns) of a --from/--to value."""
    if value is None:
        return None, None
    try:
        return float(value), None
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError as exc:
        raise UsageError(f"{value!r} is neither seconds nor an ISO time") from exc
    if when.tzinfo is None:
        when = when.astimezone()
    return None, int(when.timestamp() * 1e9)


def _run(args: argparse.Namespace) -> int:
    import pyzenoh
    from pyzenoh.session import types as t

    if args.speed < 0:
        raise UsageError("--speed must be >= 0")
    from_s, start_ns = _when(args.start)
    to_s, end_ns = _when(args.end)
    samples = recorded_samples(
        [read_records(path) for path in args.recordings],
        keys=args.keys,
        start_ns=start_ns,
        end_ns=end_ns,
        from_s=from_s,
        to_s=to_s,
    )
    config = {"mode": "client", "connect": {"endpoints": args.connect}, "scouting": {"multicast": {"enabled": False}}}
    played = deletes = 0
    started = time.monotonic()
    pacing = Pacing(args.speed, started)
    next_progress = started + PROGRESS_EVERY_S
    with pyzenoh.open(config) as session:
        for sample in samples:
            wait = pacing.due(sample.time_ns) - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            _play(session, t, sample, stamped=not args.no_timestamps)
            played += 1
            deletes += not sample.put
            now = time.monotonic()
            if not args.quiet and now >= next_progress:
                print(f"\rreplayed {played} samples ({now - started:.1f} s)", end="", file=sys.stderr, flush=True)
                next_progress = now + PROGRESS_EVERY_S
    took = time.monotonic() - started
    if not args.quiet:
        print(file=sys.stderr)
    print(f"replayed {played} samples ({played - deletes} puts, {deletes} deletes) in {took:.2f} s")
    return 0


def _export(args: argparse.Namespace) -> int:
    from pyzenoh.recording.mcap_export import export

    samples = recorded_samples([read_records(path) for path in args.recordings], keys=args.keys)
    counts = export(samples, args.output)
    print(f"wrote {sum(counts.values())} samples on {len(counts)} channels to {args.output}")
    return 0


def _play(session: Any, t: Any, sample: RecordedSample, *, stamped: bool) -> None:
    qos = sample.qos
    common: dict[str, Any] = {
        "priority": t.Priority(qos & 0x07 or t.Priority.DATA.value),  # 0 (control) is no data priority
        "congestion_control": t.CongestionControl.BLOCK if qos & QOS_BLOCK else t.CongestionControl.DROP,
        "express": bool(qos & QOS_EXPRESS),
        "attachment": sample.attachment,
        "timestamp": t.Timestamp.from_wire(sample.timestamp) if stamped and sample.timestamp is not None else None,
    }
    if sample.put:
        encoding = None if sample.encoding is None else t.Encoding.from_wire(sample.encoding)
        session.put(sample.key, sample.payload, encoding=encoding, **common)
    else:
        session.delete(sample.key, **common)

"""``pyzenoh decode``: print the messages of a captured Zenoh byte stream."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pyzenoh.codec.batch import BatchReader, decode_batch
from pyzenoh.codec.pretty import render
from pyzenoh.errors import DecodeError

#: The captures of real 1.10.2 sessions that ship with the test suite.
DEFAULT_CAPTURE = Path(__file__).resolve().parents[3] / "tests" / "vectors" / "zenoh-sessions.json"


def decode_stream(data: bytes, out: Any = sys.stdout, prefix: str = "") -> int:
    """Decode a TCP byte stream batch by batch; return the number of messages printed."""
    reader = BatchReader()
    count = 0
    try:
        for payload in reader.feed(data):
            for msg in decode_batch(payload):
                print(f"{prefix}{render(msg)}", file=out)
                count += 1
    except DecodeError as exc:
        print(f"{prefix}!! {exc}", file=out)
    return count


def _decode(args: argparse.Namespace) -> int:
    if args.hex:
        decode_stream(bytes.fromhex(args.hex))
        return 0
    doc = json.loads(Path(args.capture).read_text())
    for scenario in doc["scenarios"]:
        if args.scenario and scenario["name"] != args.scenario:
            continue
        print(f"== {scenario['name']}: {scenario['description']}")
        streams: dict[tuple[int, str], bytearray] = {}
        for rec in scenario["records"]:
            streams.setdefault((rec["conn"], rec["dir"]), bytearray()).extend(bytes.fromhex(rec["hex"]))
        for (conn, direction), data in streams.items():
            print(f"-- conn {conn} {direction}")
            decode_stream(bytes(data), prefix="   ")
    return 0


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser("decode", help="decode captured Zenoh streams and print them")
    p.add_argument("--capture", default=str(DEFAULT_CAPTURE), help="sessions JSON file")
    p.add_argument("--scenario", help="only this scenario (e.g. client_router)")
    p.add_argument("--hex", help="decode this hex byte stream (with length prefixes) instead")
    p.set_defaults(handler=_decode)

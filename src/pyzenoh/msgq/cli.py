"""``pyzenoh msgq``: run the BIND 10-compatible message daemon."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from pyzenoh.msgq.core import DEFAULT_FRAME_STALL_TIMEOUT, DEFAULT_HANDSHAKE_TIMEOUT
from pyzenoh.msgq.frame import DEFAULT_MAX_FRAME_SIZE
from pyzenoh.msgq.server import (
    DEFAULT_MAX_CLIENTS,
    DEFAULT_MAX_QUEUE_BYTES,
    DEFAULT_MAX_QUEUE_MESSAGES,
    DEFAULT_SLOW_READER_TIMEOUT,
    DEFAULT_SOCKET_FILE,
    SOCKET_FILE_ENV,
    SlowReaderPolicy,
    serve_msgq,
)


def _timeout(text: str) -> float | None:
    """Seconds; ``0`` or ``none`` for no limit."""
    if text.strip().lower() in ("0", "none", "off"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return value


def _run(args: argparse.Namespace) -> int:
    asyncio.run(
        serve_msgq(
            args.socket_file,
            args.tcp,
            unix=not args.no_unix,
            max_frame_size=args.max_frame_size,
            max_queue_bytes=args.max_queue_bytes,
            max_queue_messages=args.max_queue_messages,
            slow_reader=args.slow_reader,
            slow_reader_timeout=args.slow_reader_timeout,
            max_clients=args.max_clients,
            handshake_timeout=args.handshake_timeout,
            frame_stall_timeout=args.frame_stall_timeout,
            enforce_from=args.enforce_from,
        )
    )
    return 0


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "msgq",
        help="run the BIND 10 msgq-compatible message daemon (Skan wire format)",
        description=(
            "BIND 10 msgq-compatible daemon. Unix socket: --socket-file, else "
            f"${SOCKET_FILE_ENV}, else {DEFAULT_SOCKET_FILE}."
        ),
    )
    p.add_argument("-s", "--socket-file", help="Unix socket path")
    p.add_argument(
        "--tcp",
        action="append",
        default=[],
        metavar="tcp/HOST:PORT",
        help="also listen on TCP (repeatable)",
    )
    p.add_argument("--no-unix", action="store_true", help="TCP listeners only")
    p.add_argument(
        "--slow-reader",
        choices=[policy.value for policy in SlowReaderPolicy],
        default=SlowReaderPolicy.DISCONNECT.value,
        help="what to do when a client's outgoing queue is full (default: disconnect)",
    )
    p.add_argument(
        "--max-queue-bytes",
        type=int,
        default=None,
        help="bytes pending for one client before --slow-reader applies, at least two maximal "
        f"frames (default: {DEFAULT_MAX_QUEUE_BYTES}, or four maximal frames if larger)",
    )
    p.add_argument(
        "--max-queue-messages",
        type=int,
        default=DEFAULT_MAX_QUEUE_MESSAGES,
        help="frames waiting for one client before --slow-reader applies",
    )
    p.add_argument(
        "--slow-reader-timeout",
        type=_timeout,
        default=DEFAULT_SLOW_READER_TIMEOUT,
        metavar="SECONDS",
        help="disconnect a client that reads nothing of its pending data for this long (0: never)",
    )
    p.add_argument("--max-frame-size", type=int, default=DEFAULT_MAX_FRAME_SIZE)
    p.add_argument(
        "--max-clients",
        type=int,
        default=DEFAULT_MAX_CLIENTS,
        help="connections at once; at the cap a newcomer evicts the oldest one that never issued a valid command",
    )
    p.add_argument(
        "--handshake-timeout",
        type=_timeout,
        default=DEFAULT_HANDSHAKE_TIMEOUT,
        metavar="SECONDS",
        help="close a connection that issues no valid command (e.g. getlname) within this (0: never)",
    )
    p.add_argument(
        "--frame-stall-timeout",
        type=_timeout,
        default=DEFAULT_FRAME_STALL_TIMEOUT,
        metavar="SECONDS",
        help="close a client that stops in the middle of a frame for this long (0: never)",
    )
    p.add_argument(
        "--enforce-from",
        action="store_true",
        help="drop sends whose 'from' is not the sender's lname",
    )
    p.set_defaults(handler=_run)

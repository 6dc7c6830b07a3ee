"""``pyzenoh msgq``: run the BIND 10-compatible message daemon."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from pyzenoh.msgq.frame import DEFAULT_MAX_FRAME_SIZE
from pyzenoh.msgq.server import (
    DEFAULT_MAX_CLIENTS,
    DEFAULT_MAX_QUEUE_BYTES,
    DEFAULT_SOCKET_FILE,
    SOCKET_FILE_ENV,
    SlowReaderPolicy,
    serve_msgq,
)


def _run(args: argparse.Namespace) -> int:
    asyncio.run(
        serve_msgq(
            args.socket_file,
            args.tcp,
            unix=not args.no_unix,
            max_frame_size=args.max_frame_size,
            max_queue_bytes=args.max_queue_bytes,
            slow_reader=args.slow_reader,
            max_clients=args.max_clients,
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
    p.add_argument("--max-queue-bytes", type=int, default=DEFAULT_MAX_QUEUE_BYTES)
    p.add_argument("--max-frame-size", type=int, default=DEFAULT_MAX_FRAME_SIZE)
    p.add_argument("--max-clients", type=int, default=DEFAULT_MAX_CLIENTS)
    p.add_argument(
        "--enforce-from",
        action="store_true",
        help="drop sends whose 'from' is not the sender's lname",
    )
    p.set_defaults(handler=_run)

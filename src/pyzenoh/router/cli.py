"""``pyzenoh router``: a zenohd replacement for clients and peers."""

from __future__ import annotations

import argparse
import logging
from dataclasses import replace
from typing import Any

from pyzenoh.errors import UsageError
from pyzenoh.loop import run as run_loop
from pyzenoh.router.config import MsgqSettings, RouterConfig, load_config

log = logging.getLogger(__name__)


def config_from_args(args: argparse.Namespace) -> RouterConfig:
    config = load_config(args.config) if args.config else RouterConfig()
    if args.listen:
        config = replace(config, listen=tuple(args.listen))
    if args.connect:
        config = replace(config, connect=config.connect + tuple(args.connect))
    if args.id:
        config = replace(config, id=args.id)
    if args.record:
        config = replace(config, record=replace(config.record, dir=args.record))
    if args.msgq is not None:
        config = replace(config, msgq=MsgqSettings(socket_file=args.msgq or None, tcp=config.msgq.tcp, enabled=True))
    if args.no_timestamp:
        config = replace(config, timestamping=False)
    return config


async def run_router(config: RouterConfig) -> None:
    from pyzenoh.router.app import RouterApp

    app = RouterApp(config)
    await app.serve_forever()


def _router(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
    except UsageError as exc:
        log.error("%s", exc)
        return 2
    try:
        tls = any(ep.split("/", 1)[0] == "tls" for ep in (*config.listen, *config.connect))
        run_loop(run_router(config), tls=tls)
    except UsageError as exc:  # found at start-up (e.g. a TLS file), before serving
        log.error("%s", exc)
        return 2
    return 0


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser("router", help="run a Zenoh router (zenohd replacement)")
    p.add_argument("-l", "--listen", action="append", metavar="ENDPOINT",
                   help="listen endpoint, repeatable (default tcp/[::]:7447)")
    p.add_argument("-e", "--connect", action="append", metavar="ENDPOINT",
                   help="endpoint to connect to, repeatable")
    p.add_argument("-c", "--config", metavar="FILE", help="JSON5 configuration file")
    p.add_argument("--id", metavar="HEX", help="the router's ZenohId")
    p.add_argument("--record", metavar="DIR", help="record all traffic into DIR (MCAP segments)")
    p.add_argument("--msgq", metavar="PATH", nargs="?", const="",
                   help="also run a BIND 10 msgq daemon on this Unix socket, bridged to Zenoh")
    p.add_argument("--no-timestamp", action="store_true", help="do not stamp PUTs lacking a timestamp")
    p.set_defaults(handler=_router)

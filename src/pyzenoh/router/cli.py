"""``pyzenoh router``: a zenohd replacement, with zenohd 1.10's command line flag for flag.

The flags edit the config tree in zenohd's order (``zenohd/src/main.rs``): the tree is an
inline ``--cfg :{...}`` (empty key: the whole config, winning over ``-c``), else ``-c``'s
file, else empty; then ``-i``, ``--rest-http-port``, ``-P``, ``-e`` (replacing
``connect/endpoints``), ``-l`` (replacing ``listen/endpoints``), ``--no-timestamp``,
``--no-multicast-scouting``, ``--adminspace-permissions``; then every ``--cfg KEY:VALUE``
(a JSON5 value at that path; one that fails is logged and skipped, as zenohd does). The
tree is checked once, as a ``-c`` file is. pyzenoh's own ``--record`` and ``--msgq`` come
last. ``RUST_LOG`` filters the log as zenohd's (default ``z=info``).
"""

from __future__ import annotations

import argparse
import logging
import os
from dataclasses import replace
from typing import Any

from pyzenoh.config import insert_problems, loads
from pyzenoh.config.paths import insert_at
from pyzenoh.errors import UsageError
from pyzenoh.loop import run as run_loop
from pyzenoh.router.config import (
    MsgqSettings,
    RouterConfig,
    config_from_dict,
    load_tree,
)

log = logging.getLogger(__name__)

PERMISSIONS = {"r": (True, False), "w": (False, True), "rw": (True, True), "none": (False, False)}


def _cfg_pairs(values: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for item in values:
        key, sep, value = item.partition(":")
        if not sep:
            raise UsageError(f"--cfg accepts KEY:VALUE pairs. {item} is not a valid KEY:VALUE pair.")
        pairs.append((key, value))
    return pairs


def tree_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The config tree zenohd would build from these flags (not checked yet)."""
    pairs = _cfg_pairs(args.cfg or [])
    inline = [value for key, value in pairs if key == ""]
    tree: dict[str, Any]
    if inline:
        parsed = loads(inline[-1])
        if not isinstance(parsed, dict):
            raise UsageError("--cfg ':VALUE': the whole config must be a JSON5 object")
        tree = parsed
    elif args.config:
        tree = load_tree(args.config)
    else:
        tree = {}
    if args.id:
        tree = insert_at(tree, "id", args.id)
    if args.rest_http_port is not None and args.rest_http_port.lower() != "none":
        tree = insert_at(tree, "plugins/rest/http_port", args.rest_http_port)
        tree = insert_at(tree, "plugins/rest/__required__", True)
    for plugin in args.plugin or []:
        name, sep, path = plugin.partition(":")
        tree = insert_at(tree, f"plugins/{name}/__required__", True)
        if sep:
            tree = insert_at(tree, f"plugins/{name}/__path__", path)
    if args.connect:
        tree = insert_at(tree, "connect/endpoints", list(args.connect))
    if args.listen:
        tree = insert_at(tree, "listen/endpoints", list(args.listen))
    if args.no_timestamp:
        tree = insert_at(tree, "timestamping/enabled", False)
    if args.no_multicast_scouting:
        tree = insert_at(tree, "scouting/multicast/enabled", False)
    if args.adminspace_permissions is not None:
        perms = PERMISSIONS.get(args.adminspace_permissions)
        if perms is None:
            raise UsageError(
                f"Invalid option: --adminspace-permissions={args.adminspace_permissions} - "
                'Accepted values: "r", "w", "rw" or "none"'
            )
        tree = insert_at(tree, "adminspace/permissions", {"read": perms[0], "write": perms[1]})
    for key, value in pairs:
        if key == "":
            continue
        tree = _apply_cfg(tree, key, value)
    return tree


def _apply_cfg(tree: dict[str, Any], key: str, text: str) -> dict[str, Any]:
    """One ``--cfg KEY:VALUE``: inserted when zenoh would take it, else a warning (zenohd)."""
    try:
        value = loads(text)
    except UsageError as exc:
        log.warning("Couldn't perform configuration %s:%s: %s", key, text, exc)
        return tree
    problems = insert_problems(key, value)
    if problems:
        log.warning("Couldn't perform configuration %s:%s: %s", key, text, "; ".join(p.text for p in problems))
        return tree
    try:
        return insert_at(tree, key, value)
    except UsageError as exc:
        log.warning("Couldn't perform configuration %s:%s: %s", key, text, exc)
        return tree


def config_from_args(args: argparse.Namespace) -> RouterConfig:
    config = config_from_dict(tree_from_args(args))
    if args.record:
        config = replace(config, record=replace(config.record, dir=args.record))
    if args.msgq is not None:
        config = replace(config, msgq=MsgqSettings(socket_file=args.msgq or None, tcp=config.msgq.tcp, enabled=True))
    return config


def apply_rust_log(spec: str | None) -> None:
    """Filter the log as ``RUST_LOG`` says (zenohd's EnvFilter; targets match by prefix, so
    ``z``, ``zenoh`` and ``zenohd`` name pyzenoh's loggers). Unset: as ``--log-level``."""
    if not spec:
        return
    from pyzenoh.session.logs import ROOT, parse_filter

    levels, bad = parse_filter(spec)
    for directive in bad:
        log.warning("RUST_LOG: ignoring `%s`: not a level filter", directive)
    named_root = False
    for name, level in levels.items():
        if name == "zenohd" or "zenoh".startswith(name):
            name = ROOT
        named_root = named_root or name == ROOT or name.startswith(ROOT + ".")
        logging.getLogger(name).setLevel(level)
    if not named_root:
        logging.getLogger(ROOT).setLevel(logging.CRITICAL + 10)  # EnvFilter: what no directive names is off


async def run_router(config: RouterConfig) -> None:
    from pyzenoh.router.app import RouterApp

    app = RouterApp(config)
    await app.serve_forever()


def _workers(args: argparse.Namespace, count: int) -> int:
    """``--workers N`` (N > 1): supervise N routers of one mesh (router/workers.py)."""
    from pyzenoh.router.workers import Supervisor

    tree = tree_from_args(args)
    if args.record:
        tree = insert_at(tree, "pyzenoh/record/dir", args.record)
    if args.msgq is not None:
        tree = insert_at(tree, "pyzenoh/msgq/enabled", True)
        if args.msgq:
            tree = insert_at(tree, "pyzenoh/msgq/socket_file", args.msgq)
    supervisor = Supervisor(tree, count, log_level=args.log_level)
    log.info("%d workers behind %s", count, ", ".join(supervisor.trees[0]["listen"]["endpoints"][:-1]))
    return run_loop(supervisor.run(), tls=False)


def _router(args: argparse.Namespace) -> int:
    apply_rust_log(os.environ.get("RUST_LOG"))
    try:
        from pyzenoh.router.workers import parse_workers

        count = parse_workers(args.workers)
        if count > 1:
            return _workers(args, count)
        config = config_from_args(args)
    except UsageError as exc:
        log.error("%s", exc)
        return 2
    try:
        tls = any(ep.split("/", 1)[0] == "tls" for ep in (*config.listen, *config.connect))
        run_loop(run_router(config), tls=tls)
    except UsageError as exc:  # found at start-up (e.g. a TLS file, a required plugin), before serving
        log.error("%s", exc)
        return 2
    return 0


def _version() -> str:
    from pyzenoh.router.admin import version_string

    return f"pyzenoh router {version_string()}"


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser("router", help="run a Zenoh router (zenohd replacement, same flags)")
    p.add_argument("-c", "--config", metavar="PATH", help="configuration file (JSON5, or YAML if .yaml/.yml)")
    p.add_argument(
        "-l",
        "--listen",
        action="append",
        metavar="ENDPOINT",
        help="listen endpoint, repeatable; replaces listen/endpoints (default tcp/[::]:7447)",
    )
    p.add_argument(
        "-e",
        "--connect",
        action="append",
        metavar="ENDPOINT",
        help="endpoint to connect to, repeatable; replaces connect/endpoints",
    )
    p.add_argument("-i", "--id", metavar="HEX", help="the router's ZenohId (hex, at most 32 chars)")
    p.add_argument(
        "-P",
        "--plugin",
        action="append",
        metavar="NAME[:PATH]",
        help="a plugin that must start (built-in: rest, storage_manager; or a "
        "'pyzenoh.plugins' entry point); repeatable",
    )
    p.add_argument(
        "--plugin-search-dir",
        action="append",
        metavar="PATH",
        help="accepted for zenohd compatibility (pyzenoh plugins are Python packages)",
    )
    p.add_argument("--no-timestamp", action="store_true", help="do not stamp PUTs lacking a timestamp")
    p.add_argument("--no-multicast-scouting", action="store_true", help="do not answer multicast scouting")
    p.add_argument(
        "--rest-http-port", metavar="SOCKET", help="start the REST plugin on PORT or IP:PORT ('none': do not)"
    )
    p.add_argument(
        "--cfg",
        action="append",
        metavar="KEY:VALUE",
        help="a JSON5 VALUE at config path KEY (empty KEY: the whole config); repeatable",
    )
    p.add_argument(
        "--adminspace-permissions",
        metavar="[r|w|rw|none]",
        help="read and/or write permissions on the admin space (default r)",
    )
    p.add_argument(
        "--workers",
        metavar="N",
        default="1",
        help="run N router processes behind the same endpoints, as one Zenoh mesh ('auto': one per core); default 1",
    )
    p.add_argument("-V", "--version", action="version", version=_version())
    p.add_argument("--record", metavar="DIR", help="record all traffic into DIR (MCAP segments)")
    p.add_argument(
        "--msgq",
        metavar="PATH",
        nargs="?",
        const="",
        help="also run a BIND 10 msgq daemon on this Unix socket, bridged to Zenoh",
    )
    p.set_defaults(handler=_router)

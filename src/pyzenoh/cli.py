"""The ``pyzenoh`` command line.

Each layer contributes its own sub-commands through a ``register_cli(subparsers)``
function in ``pyzenoh.<layer>.cli``; this module only collects them, so adding a command
never means editing a central table by hand.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

# Modules that may contribute sub-commands; a missing one is simply skipped.
_CLI_MODULES = (
    "pyzenoh.demo",
    "pyzenoh.codec.cli",
    "pyzenoh.session.cli",
    "pyzenoh.router.cli",
    "pyzenoh.scouting.udp",  # pyzenoh scout
    "pyzenoh.msgq.cli",
    "pyzenoh.pipeline.cli",
    "pyzenoh.recording.cli",  # pyzenoh replay
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyzenoh", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="logging level (default: info)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _CLI_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register_cli(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    result = handler(args)
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())

"""``pyzenoh demo``: the main job on embedded defaults.

Until the router lands this decodes a captured real 1.10.2 session and prints it.
"""

from __future__ import annotations

import argparse
from typing import Any

from pyzenoh.codec.cli import DEFAULT_CAPTURE, _decode


def _demo(args: argparse.Namespace) -> int:
    ns = argparse.Namespace(hex=None, capture=str(DEFAULT_CAPTURE), scenario="client_router")
    return _decode(ns)


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser("demo", help="run the main job on embedded defaults")
    p.set_defaults(handler=_demo)

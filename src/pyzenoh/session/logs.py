"""zenoh-python's ``init_log_from_env_or`` and ``try_init_log_from_env`` on Python logging.

zenoh reads a ``RUST_LOG``-style filter: comma-separated directives, each a level
(``warn``) or ``target=level`` (``zenoh=debug``, ``zenoh::net::routing=trace``);
levels are ``off``, ``error``, ``warn``, ``info``, ``debug``, ``trace`` or 0-5. Here a
bare level applies to every pyzenoh logger, and targets map to Python loggers: ``zenoh``
(and ``pyzenoh``) is the ``pyzenoh`` logger, ``zenoh_transport`` or ``zenoh::transport``
is ``pyzenoh.transport``, any other target is taken as a Python logger name (``::``
read as ``.``). Records go to stdout, as zenoh's do. A directive that does not parse is
named on stderr and skipped, as zenoh does; the first call configures logging, later
ones change nothing.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["init_log_from_env_or", "parse_filter", "try_init_log_from_env"]

#: Python has no TRACE level: it is logged at this level, below DEBUG.
TRACE = 5
logging.addLevelName(TRACE, "TRACE")

_LEVELS = {
    "off": logging.CRITICAL + 10,
    "error": logging.ERROR,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": TRACE,
    "0": logging.CRITICAL + 10,
    "1": logging.ERROR,
    "2": logging.WARNING,
    "3": logging.INFO,
    "4": logging.DEBUG,
    "5": TRACE,
}
ROOT = "pyzenoh"
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_configured = False


def _logger_name(target: str) -> str:
    target = target.strip().replace("::", ".")
    if target in ("zenoh", ROOT):
        return ROOT
    for prefix in ("zenoh_", "zenoh."):
        if target.startswith(prefix):
            return f"{ROOT}.{target[len(prefix) :].replace('_', '.')}"
    return target


def parse_filter(spec: str) -> tuple[dict[str, int], list[str]]:
    """``{logger name: level}`` of a RUST_LOG-style filter, and the directives it skipped."""
    levels: dict[str, int] = {}
    bad: list[str] = []
    for raw in spec.split(","):
        directive = raw.strip()
        if not directive:
            continue
        target, sep, level_text = directive.rpartition("=")
        if not sep:
            target, level_text = "", directive
        level = _LEVELS.get(level_text.strip().lower())
        if level is None or (sep and not target.strip()) or "[" in target:
            bad.append(directive)
            continue
        levels[_logger_name(target) if target else ROOT] = level
    return levels, bad


def _init(spec: str) -> None:
    global _configured
    if _configured:
        return
    _configured = True
    levels, bad = parse_filter(spec)
    for directive in bad:
        print(
            f"ignoring `{directive}`: not a level filter (off, error, warn, info, debug, trace, 0-5)", file=sys.stderr
        )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter(_FORMAT))
    for name, level in levels.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        if not any(getattr(h, "_pyzenoh_env", False) for h in logger.handlers):
            handler._pyzenoh_env = True  # type: ignore[attr-defined]
            logger.addHandler(handler)
            logger.propagate = False


def try_init_log_from_env() -> None:
    """Log to stdout as ``RUST_LOG`` says; nothing when it is not set."""
    spec = os.environ.get("RUST_LOG")
    if spec:
        _init(spec)


def init_log_from_env_or(level: str) -> None:
    """Log to stdout as ``RUST_LOG`` says, or as ``level`` (a filter of the same form)
    when it is not set."""
    _init(os.environ.get("RUST_LOG") or level)

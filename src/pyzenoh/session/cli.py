"""Client sub-commands: ``pyzenoh put|delete|sub|get|queryable|liveliness``.

Every command takes ``-e/--connect ENDPOINT`` (repeatable, default tcp/127.0.0.1:7447)
and ``-m/--mode client|peer``. Long-running ones stop on Ctrl-C, after ``--count`` items
or after ``--duration`` seconds, whichever comes first.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from typing import Any, TextIO

from pyzenoh.errors import PyZenohError
from pyzenoh.session import api
from pyzenoh.session import types as t
from pyzenoh.session.handlers import ChannelClosedError

log = logging.getLogger(__name__)

_TARGETS = {"best": t.QueryTarget.BEST_MATCHING, "all": t.QueryTarget.ALL, "complete": t.QueryTarget.ALL_COMPLETE}
#: How often a waiting command checks its stop conditions.
POLL_S = 0.2


def _config(args: argparse.Namespace) -> dict[str, Any]:
    cfg: dict[str, Any] = {"mode": args.mode}
    if args.connect:
        cfg["connect"] = {"endpoints": args.connect}
    return cfg


class _Stopper:
    """Stop conditions of a long-running command: Ctrl-C/SIGTERM, count, duration."""

    def __init__(self, count: int | None, duration: float | None) -> None:
        self.count = count
        self.seen = 0
        self.deadline = None if duration is None else time.monotonic() + duration
        self.event = threading.Event()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self.event.set())

    def tick(self) -> None:
        self.seen += 1
        if self.count is not None and self.seen >= self.count:
            self.event.set()

    def remaining(self) -> float:
        if self.deadline is None:
            return POLL_S
        return max(0.0, min(POLL_S, self.deadline - time.monotonic()))

    @property
    def done(self) -> bool:
        if self.event.is_set():
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline

    def wait(self) -> None:
        while not self.done:
            self.event.wait(self.remaining() or POLL_S)


def _show_sample(out: TextIO, sample: t.Sample, as_json: bool) -> None:
    payload = sample.payload.to_bytes()
    text = payload.decode("utf-8", "replace")
    if as_json:
        rec: dict[str, Any] = {
            "key": str(sample.key_expr),
            "kind": sample.kind.name,
            "payload": text,
            "encoding": str(sample.encoding),
        }
        if sample.timestamp is not None:
            rec["timestamp"] = str(sample.timestamp)
        if sample.attachment is not None:
            rec["attachment"] = sample.attachment.to_bytes().decode("utf-8", "replace")
        out.write(json.dumps(rec) + "\n")
    else:
        kind = "" if sample.kind is t.SampleKind.PUT else " DELETE"
        out.write(f"{sample.key_expr}{kind}: {text}\n")
    out.flush()


def _put(args: argparse.Namespace) -> int:
    with api.open(_config(args)) as s:
        s.put(
            args.key,
            args.value,
            encoding=args.encoding,
            attachment=None if args.attachment is None else args.attachment.encode(),
            congestion_control=t.CongestionControl.BLOCK,
        )
    return 0


def _delete(args: argparse.Namespace) -> int:
    with api.open(_config(args)) as s:
        s.delete(args.key, congestion_control=t.CongestionControl.BLOCK)
    return 0


def _sub(args: argparse.Namespace) -> int:
    stop = _Stopper(args.count, args.duration)
    with api.open(_config(args)) as s:
        sub = s.declare_subscriber(args.keyexpr)
        log.info("ready: subscribed to %s", args.keyexpr)
        try:
            while not stop.done:
                try:
                    sample = sub.recv(timeout=stop.remaining() or POLL_S)
                except TimeoutError:
                    continue
                except ChannelClosedError:
                    return 1
                _show_sample(sys.stdout, sample, args.json)
                stop.tick()
        except KeyboardInterrupt:
            pass
    return 0


def _get(args: argparse.Namespace) -> int:
    with api.open(_config(args)) as s:
        replies = s.get(args.selector, target=_TARGETS[args.target], timeout=args.timeout, payload=args.payload)
        failed = False
        for reply in replies:
            if reply.ok is not None:
                _show_sample(sys.stdout, reply.ok, args.json)
            else:
                assert reply.err is not None
                failed = True
                sys.stdout.write(f"ERROR: {reply.err.payload.to_bytes().decode('utf-8', 'replace')}\n")
    return 1 if failed else 0


def _queryable(args: argparse.Namespace) -> int:
    stop = _Stopper(args.count, args.duration)
    key = args.keyexpr

    def answer(query: t.Query) -> None:
        try:
            reply_key = key if "*" not in key else str(query.key_expr)
            query.reply(reply_key, args.value)
            log.info("answered %s", query.selector)
        finally:
            query.drop()
            stop.tick()

    with api.open(_config(args)) as s:
        s.declare_queryable(key, answer, complete=args.complete)
        log.info("ready: queryable on %s", key)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0


def _liveliness(args: argparse.Namespace) -> int:
    with api.open(_config(args)) as s:
        liv = s.liveliness()
        if args.action == "get":
            for reply in liv.get(args.keyexpr, timeout=args.timeout):
                if reply.ok is not None:
                    print(reply.ok.key_expr, flush=True)
            return 0
        stop = _Stopper(args.count, args.duration)
        if args.action == "token":
            token = liv.declare_token(args.keyexpr)  # undeclared when dropped, as zenoh's
            log.info("ready: token %s", args.keyexpr)
            try:
                stop.wait()
            except KeyboardInterrupt:
                pass
            token.undeclare()
            return 0
        sub = liv.declare_subscriber(args.keyexpr, history=args.history)
        log.info("ready: liveliness subscriber on %s", args.keyexpr)
        try:
            while not stop.done:
                try:
                    sample = sub.recv(timeout=stop.remaining() or POLL_S)
                except TimeoutError:
                    continue
                except ChannelClosedError:
                    return 1
                state = "alive" if sample.kind is t.SampleKind.PUT else "dropped"
                print(f"{sample.key_expr} {state}", flush=True)
                stop.tick()
        except KeyboardInterrupt:
            pass
    return 0


def _wrap(fn: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            return int(fn(args))
        except (PyZenohError, ConnectionError, OSError) as exc:
            log.error("%s", exc)
            return 2

    return run


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-e",
        "--connect",
        action="append",
        metavar="ENDPOINT",
        help="endpoint of the router, repeatable (default tcp/127.0.0.1:7447)",
    )
    p.add_argument("-m", "--mode", choices=["client", "peer"], default="client", help="session mode (default client)")


def _bounds(p: argparse.ArgumentParser) -> None:
    p.add_argument("--count", type=int, metavar="N", help="stop after N items")
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long")


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser("put", help="publish one value")
    p.add_argument("key")
    p.add_argument("value")
    p.add_argument("--encoding", help="encoding, e.g. text/plain")
    p.add_argument("--attachment", help="attachment (UTF-8 text)")
    _common(p)
    p.set_defaults(handler=_wrap(_put))

    p = subparsers.add_parser("delete", help="publish a DELETE")
    p.add_argument("key")
    _common(p)
    p.set_defaults(handler=_wrap(_delete))

    p = subparsers.add_parser("sub", help="print samples matching a key expression")
    p.add_argument("keyexpr")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    _common(p)
    _bounds(p)
    p.set_defaults(handler=_wrap(_sub))

    p = subparsers.add_parser("get", help="query and print the replies")
    p.add_argument("selector", help="key expression, optionally ?param=value;...")
    p.add_argument("--target", choices=sorted(_TARGETS), default="best", help="query target (default best)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds (default 10)")
    p.add_argument("--payload", help="a value sent with the query")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    _common(p)
    p.set_defaults(handler=_wrap(_get))

    p = subparsers.add_parser("queryable", help="answer queries with a fixed value")
    p.add_argument("keyexpr")
    p.add_argument("--value", required=True, help="the reply payload")
    p.add_argument("--complete", action="store_true", help="declare the queryable complete")
    _common(p)
    _bounds(p)
    p.set_defaults(handler=_wrap(_queryable))

    p = subparsers.add_parser("liveliness", help="liveliness tokens: declare, watch or list")
    p.add_argument("action", choices=["token", "sub", "get"])
    p.add_argument("keyexpr")
    p.add_argument("--history", action="store_true", help="sub: report tokens already alive")
    p.add_argument("--timeout", type=float, default=10.0, help="get: seconds (default 10)")
    _common(p)
    _bounds(p)
    p.set_defaults(handler=_wrap(_liveliness))

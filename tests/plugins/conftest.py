"""``pyzenoh router`` with plugins, started as the router tests start it
(tests.fixtures.pyzenoh_router.run_router), plus the REST port it serves and small HTTP helpers."""

from __future__ import annotations

import functools
import http.client
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyzenoh.localnet import free_port, wait_listening
from tests.fixtures.pyzenoh_router import (
    STARTUP_TIMEOUT,
    RouterProc,
    run_router,
    zenoh,
    zenoh_config,
)
from tests.waits import value_of

WAIT = 15.0
#: Poll ``check`` (bounded by this package's WAIT) until it returns something truthy.
eventually = functools.partial(value_of, timeout=WAIT)


@dataclass
class PluginRouter:
    router: RouterProc
    http: int

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.http, timeout=WAIT)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def get_json(self, path: str) -> Any:
        status, _, body = self.request("GET", path)
        assert status == 200, body
        return json.loads(body)

    def open(self) -> Any:
        return zenoh.open(zenoh_config(self.router.endpoint))


@contextmanager
def plugin_router(tmp: Path, *extra: str, rest: bool = True, ready: tuple[str, ...] = ()) -> Iterator[PluginRouter]:
    """The router, once its zenoh port listens and every plugin in ``ready`` (and ``rest``)
    reports itself started in the admin space (they start before the listeners open; a
    plugin that failed is not waited for forever: the wait is bounded)."""
    http_port = free_port() if rest else 0
    args = ["--rest-http-port", f"127.0.0.1:{http_port}"] if rest else []
    with run_router(tmp, *args, *extra) as router:
        r = PluginRouter(router, http_port)
        wanted = set(ready) | ({"rest"} if rest else set())
        if wanted:
            session = r.open()
            try:
                eventually(lambda: wanted <= started(session), f"plugins {sorted(wanted)} started")
            finally:
                session.close()
        if rest:
            wait_listening(http_port, router.proc, STARTUP_TIMEOUT)
        yield r


def started(session: Any) -> set[str]:
    out = set()
    for reply in session.get("@/*/router/plugins/*"):
        if reply.ok is not None and json.loads(reply.ok.payload.to_bytes()).get("state") == "Started":
            out.add(str(reply.ok.key_expr).rsplit("/", 1)[1])
    return out


def zget(session: Any, selector: str, **kw: Any) -> list[Any]:
    return [r.ok for r in session.get(selector, **kw) if r.ok is not None]


def zid_of(session: Any) -> str:
    [reply] = [r for r in session.get("@/*/router") if r.ok is not None]
    return str(reply.ok.key_expr).split("/")[1]

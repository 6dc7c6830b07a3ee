"""The REST plugin (zenoh-plugin-rest 1.10) served by aiohttp on the router's event loop.

Every path ``/<key_expr>``: GET and POST query (or subscribe, with ``Accept:
text/event-stream``), PUT and PATCH put (``Content-Type`` is the encoding, default
``zenoh/bytes``), DELETE deletes. 200 and an empty body on success, 400 on an invalid
key expression, 500 with the error's text. Every response carries
``Access-Control-Allow-Origin: *``. The rules are in :mod:`.values`.

Slow clients: a query's replies are collected before the response is written, and an
event stream's samples go through a bounded queue (``pyzenoh/rest/sse_queue_samples``):
routing only ever appends to it, and a client that lets it fill is dropped. Limits and
counters (router metrics ``pyzenoh_plugin_rest_*``) are in :mod:`.config`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from aiohttp import web

from pyzenoh.codec import Encoding
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExprError, validate
from pyzenoh.plugins.host import PluginContext
from pyzenoh.plugins.rest.config import RestConfig, parse_rest_config, parse_rest_limits
from pyzenoh.plugins.rest.values import (
    accept_mode,
    html_listing,
    json_sample,
    key_from_path,
    sse_event,
    wants_time_range,
)
from pyzenoh.plugins.session import LocalReply, LocalSample, LocalSession

log = logging.getLogger(__name__)

__all__ = ["RestPlugin"]

CORS = {"Access-Control-Allow-Origin": "*"}
ALLOW_METHODS = "GET, POST, PUT, PATCH, DELETE"
#: How long a stopping plugin waits for requests in progress (then they are cut).
SHUTDOWN_S = 2.0
#: The longest encoding schema the wire carries.
MAX_SCHEMA = 255
#: A comment line sent on an idle event stream, so a client that left is noticed.
SSE_KEEPALIVE_S = 15.0


class RestPlugin:
    def __init__(self, name: str, section: dict[str, Any], context: PluginContext) -> None:
        self.name = name
        self.context = context
        self.config: RestConfig = parse_rest_config(section)
        tree = context.daemon.config.tree or {}
        self.limits = parse_rest_limits((tree.get("pyzenoh") or {}).get("rest"))
        self.session: LocalSession | None = None
        self._runner: web.AppRunner | None = None
        self._streams: set[asyncio.Task[Any]] = set()
        self.port = self.config.port

    # --- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(client_max_size=self.limits.max_request_body_bytes)
        app.router.add_route("*", "/{key_expr:.*}", self._handle)
        app.on_response_prepare.append(_cors)
        max_line = self.limits.max_header_bytes
        runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=SHUTDOWN_S,
            max_line_size=max_line,
            max_field_size=max_line,
        )
        await runner.setup()
        # zenoh binds [::]:port dual-stack; asyncio makes "::" IPv6-only, so "all
        # interfaces" is asked for as no host (every family).
        host = None if self.config.host == "::" else self.config.host
        site = web.TCPSite(runner, host, self.config.port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise UsageError(
                f"plugins/rest/http_port: cannot listen on {self.config.host}:{self.config.port}: {exc.strerror or exc}"
            ) from None
        self._runner = runner
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        self.session = self.context.session()
        log.info("REST plugin listening on %s:%d", self.config.host, self.port)

    async def stop(self) -> None:
        for task in list(self._streams):
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def status(self) -> dict[str, Any]:
        from pyzenoh import __version__

        host = self.config.host
        addr = f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"
        section = self.context.section
        # zenoh-plugin-rest shows its whole Config, http_port as the socket address it binds
        port = {
            "http_port": addr,
            "work_thread_num": section.get("work_thread_num", 2),
            "max_block_thread_num": section.get("max_block_thread_num", 50),
            **{k: section.get(k) for k in ("__path__", "__required__", "__config__", "__plugin__")},
        }
        return {"version": __version__, "port": port}

    # --- requests -------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.context.count("requests")
        if request.method == "OPTIONS":  # CORS preflight
            return web.Response(
                headers={"Access-Control-Allow-Methods": ALLOW_METHODS, "Access-Control-Allow-Headers": "*"}
            )
        if request.method not in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):  # HEAD: a GET (axum's)
            return web.Response(status=405, headers={"Allow": ALLOW_METHODS})
        key = key_from_path(request.match_info.get("key_expr", ""), str(self.context.zid))
        try:
            validate(key)
        except KeyExprError as exc:
            self.context.count("bad_requests")
            return web.Response(status=400, text=str(exc))
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            self.context.count("too_large")
            return web.Response(status=413, text=f"request body larger than {self.limits.max_request_body_bytes} bytes")
        session = self.session
        if session is None:
            return web.Response(status=500, text="the REST plugin is stopping")
        content_type = request.headers.get("Content-Type")
        encoding = Encoding.from_str(content_type) if content_type else Encoding.DEFAULT
        try:
            if encoding.schema is not None and len(encoding.schema) > MAX_SCHEMA:
                # zenoh cannot encode it either (its put fails): refused before any face gets it
                raise ValueError(f"encoding schema longer than {MAX_SCHEMA} bytes")
            if request.method in ("PUT", "PATCH"):
                session.put(key, body, encoding)
                return web.Response()
            if request.method == "DELETE":
                session.delete(key)
                return web.Response()
            query_string = request.rel_url.raw_query_string
            mode = accept_mode(request.headers.get("Accept"), query_string)
            if mode == "sse":
                return await self._subscribe(request, session, key)
            queue = session.get(
                key, query_string, body or None, encoding if body else None, latest=not wants_time_range(query_string)
            )
            return await self._query_response(mode, queue)
        except (asyncio.CancelledError, web.HTTPException):
            raise
        except Exception as exc:  # noqa: BLE001 - the error's text, as zenoh's plugin answers
            self.context.count("errors")
            log.warning("REST %s /%s: %s", request.method, key, exc)
            return web.Response(status=500, text=str(exc))

    async def _query_response(self, mode: str, queue: asyncio.Queue[LocalReply | None]) -> web.StreamResponse:
        if mode == "raw":
            reply = await queue.get()
            if reply is None:
                return web.Response()
            encoding = str(reply.sample.encoding)
            headers = {"Content-Type": encoding} if _is_mime(encoding) else {}
            return web.Response(body=reply.sample.payload, headers=headers)
        replies: list[LocalReply] = []
        while (item := await queue.get()) is not None:
            replies.append(item)
        if mode == "html":
            items = [(r.sample.key if r.ok else "ERROR", r.sample.payload) for r in replies]
            return web.Response(text=html_listing(items), content_type="text/html")
        out = [_json_of(r) for r in replies]
        return web.Response(
            body=json.dumps(out, separators=(",", ":"), ensure_ascii=False).encode(), content_type="application/json"
        )

    async def _subscribe(self, request: web.Request, session: LocalSession, key: str) -> web.StreamResponse:
        if len(self._streams) >= self.limits.max_sse_streams:
            self.context.count("sse_refused")
            return web.Response(status=503, text=f"too many event streams (limit {self.limits.max_sse_streams})")
        task = asyncio.current_task()
        assert task is not None
        queue: asyncio.Queue[LocalSample] = asyncio.Queue(self.limits.sse_queue_samples)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        response.force_close()
        await response.prepare(request)
        transport = request.transport
        dropped = False

        def on_sample(sample: LocalSample) -> None:
            nonlocal dropped
            if dropped:
                return
            try:
                queue.put_nowait(sample)
            except asyncio.QueueFull:  # the client does not keep up: drop it, never wait for it
                dropped = True
                self.context.count("sse_dropped")
                log.warning("REST: event stream on %s dropped: its client fell %d samples behind", key, queue.maxsize)
                if transport is not None:
                    transport.abort()  # closed at once (a pending write fails), its buffers dropped

        self._streams.add(task)
        self.context.count("sse_streams")
        sub = session.declare_subscriber(key, on_sample)
        try:
            while not dropped:
                try:
                    async with asyncio.timeout(SSE_KEEPALIVE_S):
                        sample = await queue.get()
                except TimeoutError:
                    await response.write(b": keep-alive\n\n")
                    continue
                if dropped:
                    break
                data = json_sample(sample.key, sample.payload, sample.encoding, sample.timestamp)
                await response.write(sse_event(sample.kind, data))
                self.context.count("sse_samples")
        except (asyncio.CancelledError, ConnectionError):
            pass  # the client went away (aiohttp cancels the handler), or was dropped
        finally:
            self._streams.discard(task)
            if self.session is not None:
                session.undeclare_subscriber(sub)
        if dropped:
            return response
        with contextlib.suppress(Exception):
            await response.write_eof()
        return response


def _json_of(reply: LocalReply) -> dict[str, Any]:
    s = reply.sample
    if not reply.ok:
        return json_sample("ERROR", s.payload, s.encoding, None)
    return json_sample(s.key, s.payload, s.encoding, s.timestamp)


def _is_mime(text: str) -> bool:
    main, sep, rest = text.partition("/")
    return bool(sep and main and rest and all(c.isprintable() and c not in "\r\n" for c in text))


async def _cors(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(CORS)

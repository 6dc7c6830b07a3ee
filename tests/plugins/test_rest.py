"""The REST plugin with a real HTTP client (http.client, curl) and real eclipse-zenoh 1.10.2
clients, against ``pyzenoh router --rest-http-port`` started as a subprocess."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.pyzenoh_router import zenoh
from tests.plugins.conftest import WAIT, PluginRouter, eventually, plugin_router
from tests.waits import routed

pytestmark = pytest.mark.interop

ZID = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
LIMITS = "pyzenoh/rest:{max_request_body_bytes:4096,max_header_bytes:2048,max_sse_streams:3,sse_queue_samples:20}"
DEMO = 'plugins/storage_manager/storages/demo:{key_expr:"demo/example/**",volume:"memory"}'


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PluginRouter]:
    with plugin_router(
        tmp_path_factory.mktemp("rest"), "-i", ZID, "--cfg", DEMO, "--cfg", LIMITS, ready=("storage_manager",)
    ) as r:
        yield r
        assert r.router.proc.poll() is None, r.router.log.read_text()


@pytest.fixture
def client(rest: PluginRouter) -> Iterator[Any]:
    session = rest.open()
    yield session
    session.close()


def test_zenoh_getting_started_with_curl(rest: PluginRouter) -> None:
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    base = f"http://127.0.0.1:{rest.http}"
    subprocess.run(
        [curl, "-sf", "-X", "PUT", "-d", '"Hello World!"', f"{base}/demo/example/test"], check=True, timeout=WAIT
    )
    out = subprocess.run([curl, "-sf", f"{base}/demo/example/test"], check=True, capture_output=True, timeout=WAIT)
    [sample] = json.loads(out.stdout)
    # curl -d sends application/x-www-form-urlencoded: not a JSON or string encoding, so base64
    assert sample["key"] == "demo/example/test"
    assert sample["encoding"] == "application/x-www-form-urlencoded"
    assert sample["value"] == "IkhlbGxvIFdvcmxkISI="
    ntp, zid = sample["timestamp"].split("/")
    assert int(ntp) > 0 and zid == ZID  # stamped by the router


def test_put_json_and_string_values_and_a_zenoh_client_sees_them(rest: PluginRouter, client: Any) -> None:
    got: list[Any] = []
    event = threading.Event()

    def on_sample(sample: Any) -> None:
        got.append(sample)
        if len(got) == 3:
            event.set()

    sub = client.declare_subscriber("demo/example/v/**", on_sample)
    eventually(lambda: _subscribed(rest, "demo/example/v/**"), "the router knows the subscriber")
    assert rest.request("PUT", "/demo/example/v/json", b'{"a": [1, 2]}', {"Content-Type": "application/json"})[0] == 200
    assert rest.request("PATCH", "/demo/example/v/text", "héllo".encode(), {"Content-Type": "text/plain"})[0] == 200
    assert rest.request("DELETE", "/demo/example/v/text")[0] == 200
    assert event.wait(WAIT)
    assert [(str(s.key_expr), str(s.kind)) for s in got] == [
        ("demo/example/v/json", "SampleKind.PUT"),
        ("demo/example/v/text", "SampleKind.PUT"),
        ("demo/example/v/text", "SampleKind.DELETE"),
    ]
    assert str(got[0].encoding) == "application/json"
    sub.undeclare()
    values = {s["key"]: s["value"] for s in rest.get_json("/demo/example/v/**")}
    assert values == {"demo/example/v/json": {"a": [1, 2]}}  # the storage forgot the deleted key


def _subscribed(rest: PluginRouter, key: str) -> bool:
    """The router knows a subscriber on exactly ``key`` (its admin space's own view)."""
    return any(s["key"] == f"@/{ZID}/router/subscriber/{key}" for s in rest.get_json("/@/local/router/subscriber/**"))


def test_get_and_post_reach_queryables_with_parameters_and_payload(rest: PluginRouter, client: Any) -> None:
    seen: list[tuple[str, str, bytes | None]] = []

    def on_query(query: Any) -> None:
        payload = None if query.payload is None else query.payload.to_bytes()
        seen.append((str(query.key_expr), str(query.parameters), payload))
        if query.key_expr.intersects("q/a"):
            query.reply("q/a", b"1", encoding=zenoh.Encoding.TEXT_PLAIN)
        if query.key_expr.intersects("q/b"):
            query.reply("q/b", b"\x00\x01")

    qbl = client.declare_queryable("q/**", on_query)
    eventually(lambda: rest.get_json("/q/**") != [], "the queryable is reachable")
    status, headers, body = rest.request("GET", "/q/**?x=1;y")
    assert status == 200 and headers["access-control-allow-origin"] == "*"
    assert headers["content-type"].startswith("application/json")
    assert sorted((s["key"], s["value"], s["encoding"]) for s in json.loads(body)) == [
        ("q/a", "1", "text/plain"),
        ("q/b", "AAE=", "zenoh/bytes"),
    ]
    assert seen[-1][1] == "x=1;y"
    status, _, body = rest.request("POST", "/q/**", b"question", {"Content-Type": "text/plain"})
    assert status == 200 and seen[-1][2] == b"question"
    status, headers, body = rest.request("GET", "/q/a?_raw")
    assert status == 200 and body == b"1" and headers["content-type"] == "text/plain"
    status, headers, body = rest.request("HEAD", "/q/a")
    assert status == 200 and body == b"" and headers["content-type"].startswith("application/json")
    assert rest.request("TRACE", "/q/a")[0] == 405
    status, headers, body = rest.request("GET", "/q/**", headers={"Accept": "text/html"})
    assert headers["content-type"].startswith("text/html")
    assert body.decode().startswith("<dl>\n") and "<dt>q/a</dt>\n<dd>1</dd>\n" in body.decode()
    qbl.undeclare()


def test_at_local_is_the_routers_admin_space(rest: PluginRouter) -> None:
    [info] = rest.get_json("/@/local/router")
    assert info["key"] == f"@/{ZID}/router"
    assert info["value"]["zid"] == ZID
    assert info["value"]["plugins"] == {
        "rest": {"name": "rest", "path": "builtin"},
        "storage_manager": {"name": "storage_manager", "path": "builtin"},
    }
    status = {
        s["key"].split("/status/plugins/")[1]: s["value"] for s in rest.get_json("/@/local/router/status/plugins/**")
    }
    assert status["rest/port"] == {
        "http_port": f"127.0.0.1:{rest.http}",
        "work_thread_num": 2,
        "max_block_thread_num": 50,
        "__path__": None,
        "__required__": True,
        "__config__": None,
        "__plugin__": None,
    }
    assert status["storage_manager/storages/demo"] == {"key_expr": "demo/example/**", "volume": "memory"}
    [record] = rest.get_json("/@/local/router/plugins/rest")
    assert record["value"]["state"] == "Started"


def test_bad_requests_get_errors_and_the_router_keeps_serving(rest: PluginRouter) -> None:
    status, headers, body = rest.request("GET", "/a//b")
    assert status == 400 and b"a//b" in body and headers["access-control-allow-origin"] == "*"
    assert rest.request("GET", "/")[0] == 400
    assert rest.request("PUT", "/a/$x")[0] == 400
    status, _, body = rest.request("PUT", "/demo/example/enc", b"1", {"Content-Type": "a/" + "b" * 300})
    assert status == 500 and body == b"encoding schema longer than 255 bytes"
    status, _, _ = rest.request("PUT", "/demo/example/big", b"x" * 5000)
    assert status == 413
    status, _, _ = rest.request("GET", "/demo/**", headers={"X-Huge": "h" * 4000})
    assert status in (400, 431)
    with socket.create_connection(("127.0.0.1", rest.http), timeout=WAIT) as raw:
        raw.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
        assert b" 400 " in raw.recv(64)
    with socket.create_connection(
        ("127.0.0.1", rest.http), timeout=WAIT
    ) as raw:  # more header lines than aiohttp takes (128)
        raw.sendall(b"GET /demo/** HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(200)))
        assert b" 400 " in raw.recv(64)
    with socket.create_connection(("127.0.0.1", rest.http), timeout=WAIT) as idle:
        idle.sendall(b"GET /demo/** HTTP/1.1\r\n")  # a request that never ends its headers
        assert rest.request("PUT", "/demo/example/after", b"ok")[0] == 200
    assert [s["key"] for s in rest.get_json("/demo/example/after")] == ["demo/example/after"]
    metrics = rest.request("GET", "/@/local/router/metrics?compression=false;_raw")[2].decode()
    assert "pyzenoh_plugin_rest_bad_requests" in metrics and "pyzenoh_plugin_rest_too_large" in metrics


class EventStream:
    """An SSE client on a raw socket: reads events while asked to, or never (stalled)."""

    def __init__(self, port: int, key: str, *, rcvbuf: int | None = None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(WAIT)
        self.sock.connect(("127.0.0.1", port))
        self.sock.sendall(f"GET /{key} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.buf = b""

    def head(self) -> bytes:
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.sock.recv(4096)
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        return head

    def event(self) -> tuple[str, dict[str, Any]]:
        while True:
            text = self.buf.decode("utf-8", "replace")
            for block in text.split("\n\n")[:-1]:
                lines = [line.split(":", 1) for line in block.replace("\r\n", "\n").split("\n") if ":" in line]
                fields = {k: v.strip() for k, v in lines if k in ("event", "data")}
                consumed = (block + "\n\n").encode()
                self.buf = self.buf[self.buf.index(consumed) + len(consumed) :]
                if "event" in fields:
                    return fields["event"], json.loads(fields["data"])
            chunk = self.sock.recv(4096)
            assert chunk, "stream closed"
            self.buf += chunk

    def close(self) -> None:
        self.sock.close()


def _matching(publisher: Any, want: bool) -> bool:
    return bool(publisher.matching_status.matching) == want


def test_event_stream_follows_publishers_coming_and_going(rest: PluginRouter, client: Any) -> None:
    stream = EventStream(rest.http, "sse/**")
    assert b"200 OK" in stream.head()
    routed(client, "sse/a")
    client.put("sse/a", b'{"n": 1}', encoding=zenoh.Encoding.APPLICATION_JSON)
    kind, data = stream.event()
    assert kind == "PUT" and data["key"] == "sse/a" and data["value"] == {"n": 1}
    assert data["encoding"] == "application/json" and data["timestamp"].endswith(f"/{ZID}")
    other = rest.open()  # a second publisher comes, publishes, deletes, and goes
    try:
        routed(other, "sse/b")
        other.put("sse/b", "two")
        other.delete("sse/b")
    finally:
        other.close()
    assert stream.event()[1]["key"] == "sse/b"
    kind, data = stream.event()
    assert kind == "DELETE" and data["key"] == "sse/b" and data["value"] is None
    client.put("sse/a", b"3")
    assert stream.event()[1]["value"] == "Mw=="
    publisher = client.declare_publisher("sse/a")
    stream.close()  # the client goes: its subscriber goes with it
    eventually(lambda: _matching(publisher, False), "the stream's subscriber is undeclared")
    publisher.undeclare()


def test_concurrent_streams_are_limited(rest: PluginRouter) -> None:
    streams = [EventStream(rest.http, f"lim/{i}") for i in range(3)]
    try:
        for s in streams:
            assert b"200 OK" in s.head()
        status, _, body = rest.request("GET", "/lim/x", headers={"Accept": "text/event-stream"})
        assert status == 503 and b"limit 3" in body
    finally:
        for s in streams:
            s.close()


def test_a_stalled_stream_is_dropped_and_never_slows_routing(rest: PluginRouter, client: Any) -> None:
    stalled = EventStream(rest.http, "stall/**", rcvbuf=4096)
    assert b"200 OK" in stalled.head()
    got: list[int] = []
    done = threading.Event()
    n = 400

    def count(sample: Any) -> None:
        got.append(1)
        if len(got) == n:
            done.set()

    listener = rest.open()
    try:
        marker = threading.Event()
        listener.declare_subscriber("stall/marker", lambda s: marker.set())
        listener.declare_subscriber("stall/x", count)
        publisher = client.declare_publisher("stall/x", congestion_control=zenoh.CongestionControl.BLOCK)
        eventually(lambda: client.put("stall/marker", b"") or marker.is_set(), "the listener subscribes")
        payload = b"p" * 16_384
        for _ in range(n):
            publisher.put(payload)
        assert done.wait(WAIT), f"{len(got)} of {n}"  # every sample reached the other subscriber
        publisher.undeclare()
    finally:
        listener.close()

    def dropped() -> str | None:
        text = rest.request("GET", "/@/local/router/metrics?compression=false;_raw")[2].decode()
        return text if "pyzenoh_plugin_rest_sse_dropped" in text else None

    text = eventually(dropped, "the stalled stream is counted as dropped")
    assert "pyzenoh_plugin_rest_sse_dropped_total 1" in text
    stalled.close()

"""zenoh-plugin-rest's rules (pyzenoh.plugins.rest.values), and its config."""

from __future__ import annotations

import pytest

from pyzenoh.codec import Encoding, Timestamp, ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.plugins.rest.config import parse_rest_config
from pyzenoh.plugins.rest.values import (
    accept_mode,
    html_listing,
    json_sample,
    key_from_path,
    parameters,
    payload_to_json,
    sse_event,
    wants_time_range,
)


@pytest.mark.parametrize(
    ("payload", "encoding", "value"),
    [
        (b"", "application/json", None),
        (b'{"a":[1,2]}', "application/json", {"a": [1, 2]}),
        (b'"x"', "text/json", "x"),
        (b"not json", "text/json5", "bm90IGpzb24="),
        (b"hello", "text/plain", "hello"),
        (b"hello", "zenoh/string", "hello"),
        (b"\xff\xfe", "text/plain", "//4="),
        (b"hello", "zenoh/bytes", "aGVsbG8="),
        (b"1", "text/plain;charset=utf-8", "1"),
    ],
)
def test_value_rules_per_encoding(payload: bytes, encoding: str, value: object) -> None:
    assert payload_to_json(payload, encoding) == value


def test_json_sample_shape() -> None:
    ts = Timestamp(7713215938998700580, ZenohId(0xE242AA002F9F301A106DC298A61B73C0))
    sample = json_sample("a/b", b"1", Encoding.from_str("application/json"), ts)
    assert sample == {
        "key": "a/b",
        "value": 1,
        "encoding": "application/json",
        "timestamp": "7713215938998700580/e242aa002f9f301a106dc298a61b73c0",
    }
    assert json_sample("a", b"", Encoding.DEFAULT, None)["timestamp"] is None


@pytest.mark.parametrize(
    ("accept", "query", "mode"),
    [
        (None, "", "json"),
        ("text/event-stream", "_raw", "sse"),
        ("text/html, */*", "", "html"),
        ("text/html", "_raw", "raw"),
        ("application/json;q=1", "a=1;_raw", "raw"),
        ("*/*, text/event-stream", "", "json"),
    ],
)
def test_response_mode_from_the_first_accepted_type(accept: str | None, query: str, mode: str) -> None:
    assert accept_mode(accept, query) == mode


def test_parameters_and_time_range() -> None:
    assert parameters("a=1;b;a=2") == {"a": "1", "b": ""}
    assert wants_time_range("_time=[now(-1h)..]") and not wants_time_range("time=1")


def test_at_local_names_the_router() -> None:
    assert key_from_path("@/local/router", "abc") == "@/abc/router"
    assert key_from_path("@/local", "abc") == "@/abc"
    assert key_from_path("@/localhost/x", "abc") == "@/localhost/x"


def test_html_and_sse() -> None:
    assert html_listing([("a", b"<b>")]) == "<dl>\n<dt>a</dt>\n<dd>&lt;b&gt;</dd>\n</dl>\n"
    assert sse_event("PUT", {"key": "a"}) == b'event: PUT\ndata: {"key":"a"}\n\n'


@pytest.mark.parametrize(
    ("section", "host", "port"),
    [
        ({"http_port": 8000}, "::", 8000),
        ({"http_port": "8000"}, "::", 8000),
        ({"http_port": "127.0.0.1:8001", "work_thread_num": 2, "max_block_thread_num": 50}, "127.0.0.1", 8001),
        ({"http_port": "[::1]:8002"}, "::1", 8002),
    ],
)
def test_rest_config(section: dict[str, object], host: str, port: int) -> None:
    config = parse_rest_config(section)
    assert (config.host, config.port) == (host, port)


@pytest.mark.parametrize(
    ("section", "named"),
    [
        ({}, "http_port"),
        ({"http_port": "localhost:80"}, "http_port"),
        ({"http_port": 70000}, "http_port"),
        ({"http_port": 8000, "http_prot": 1}, "http_prot"),
        ({"http_port": 8000, "work_thread_num": -1}, "work_thread_num"),
    ],
)
def test_bad_rest_config_names_the_key(section: dict[str, object], named: str) -> None:
    with pytest.raises(UsageError, match=named):
        parse_rest_config(section)

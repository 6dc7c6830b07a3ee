"""``pyzenoh export-mcap`` (:mod:`pyzenoh.recording.mcap_export`): samples on one channel
per key with a JSON Schema, read back with the ``mcap`` library's reader; end to end on
real eclipse-zenoh traffic through a recording router (the replay tests' recording)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcap.reader import make_reader

from pyzenoh.codec import Encoding, Timestamp, ZenohId
from pyzenoh.recording.mcap_export import export, sample_message, schema_of
from pyzenoh.recording.replay import RecordedSample
from tests.hyp import FUZZ
from tests.recording.test_replay import recording  # noqa: F401 (the fixture)

TS = Timestamp(0x6000_0000_8000_0000, ZenohId(0xAB))


def _sample(key: str, payload: bytes, encoding: str | None, put: bool = True, **kw: Any) -> RecordedSample:
    enc = Encoding.from_str(encoding) if encoding else None
    return RecordedSample(kw.get("t", 1_000), key, put, payload, enc, kw.get("att"), kw.get("ts", TS), 5)


def _read(path: Path) -> dict[str, list[tuple[dict[str, Any], dict[str, Any], int]]]:
    """topic -> [(schema, message, log_time)] as the mcap reader decodes them."""
    out: dict[str, list[tuple[dict[str, Any], dict[str, Any], int]]] = {}
    with path.open("rb") as f:
        for schema, channel, message in make_reader(f).iter_messages(log_time_order=False):
            assert schema is not None and schema.encoding == "jsonschema" and channel.message_encoding == "json"
            out.setdefault(channel.topic, []).append(
                (json.loads(schema.data), json.loads(message.data), message.log_time)
            )
    return out


def test_channels_schemas_and_plottable_values(tmp_path: Path) -> None:
    samples = [
        _sample("h/temp", b"21.5", "application/json"),
        _sample("h/temp", b"22", "application/json"),
        _sample("h/env", b'{"t": 1.5, "ok": true, "tags": ["a"]}', "application/json", att=b"m"),
        _sample("h/name", b"kitchen", "text/plain"),
        _sample("h/count", b" 42\n", "text/plain"),
        _sample("h/raw", b"\x00\xff", None),
        _sample("h/temp", b"", None, put=False, ts=None, t=5_000),
    ]
    counts = export(samples, tmp_path / "out.mcap")
    assert counts == {"h/temp": 3, "h/env": 1, "h/name": 1, "h/count": 1, "h/raw": 1}
    got = _read(tmp_path / "out.mcap")
    schema, first, log_time = got["h/temp"][0]
    assert first["value"] == 21.5 and schema["properties"]["value"] == {"type": "number"}
    assert log_time == (TS.time >> 32) * 1_000_000_000 + 500_000_000  # the HLC time
    assert got["h/temp"][2][1]["zenoh"]["kind"] == "delete" and got["h/temp"][2][2] == 5_000
    env_schema, env, _ = got["h/env"][0]
    assert env["t"] == 1.5 and env_schema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert env["zenoh"]["attachment_base64"] == "bQ=="
    assert got["h/name"][0][1]["value"] == "kitchen" and got["h/count"][0][1]["value"] == 42.0
    assert got["h/raw"][0][1]["base64"] == "AP8=" and got["h/raw"][0][1]["zenoh"]["encoding"] == "zenoh/bytes"


@FUZZ
@given(st.binary(max_size=64), st.sampled_from([None, "application/json", "text/plain", "zenoh/string"]))
def test_any_payload_becomes_a_json_message(payload: bytes, encoding: str | None) -> None:
    message = sample_message(_sample("k", payload, encoding))
    json.dumps(message, allow_nan=False)
    assert schema_of(message)["type"] == "object"


@pytest.mark.interop
def test_real_traffic_exported_and_read_back(
    recording: tuple[Path, list[tuple[object, ...]]],  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    rec, seen = recording
    out = tmp_path / "rec.mcap"
    done = subprocess.run(
        [sys.executable, "-m", "pyzenoh", "--log-level", "warning", "export-mcap", str(rec), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "wrote" in done.stdout
    got = _read(out)
    # what the subscriber saw, each sample once, by key (the probe keys of the fixture aside)
    seen_keys = sorted(str(s[0]) for s in seen)
    assert sorted(k for k, msgs in got.items() if k.startswith("rp/") for _ in msgs) == seen_keys
    temps = [m for _, m, _ in got["rp/temp/a"] if m["zenoh"]["kind"] == "put"]
    assert [m["value"] for m in temps] == [21.5, 22.0]
    assert all(m["zenoh"]["hlc_ns"] for m in temps)  # the router's stamp (it stamps PUTs, as zenohd)

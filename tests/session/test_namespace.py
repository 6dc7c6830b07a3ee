"""``import pyzenoh as zenoh``: every public name of zenoh-python 1.10's stubs (the
installed eclipse-zenoh wheel's ``.pyi`` files) exists in pyzenoh, with the same
parameter names; value types behave as the real ones (compared side by side)."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
import zenoh

import pyzenoh
from pyzenoh.errors import DecodeError, PeerError, UsageError
from pyzenoh.keyexpr import KeyExprError
from pyzenoh.session import logs
from pyzenoh.session.handlers import ChannelClosedError, Handler
from tests.session.stubnames import reports


@pytest.mark.parametrize("report", reports(["__init__", "handlers", "shm"]), ids=lambda r: r.module)
def test_every_stub_name_exists(report: object) -> None:
    assert not report.missing, report.missing  # type: ignore[attr-defined]
    assert not report.param_problems, report.param_problems  # type: ignore[attr-defined]


def test_submodules_and_lazy_ext() -> None:
    import pyzenoh.handlers
    import pyzenoh.shm

    assert pyzenoh.handlers.FifoChannel is pyzenoh.session.handlers.FifoChannel
    assert pyzenoh.shm.SUPPORTED is False
    assert pyzenoh.Handler is Handler


def test_zerror_is_the_base_of_pyzenoh_errors() -> None:
    for cls in (UsageError, KeyExprError, ChannelClosedError, PeerError, DecodeError):
        assert issubclass(cls, pyzenoh.ZError)
    assert issubclass(UsageError, ValueError) and issubclass(KeyExprError, ValueError)
    with pytest.raises(pyzenoh.ZError):
        pyzenoh.KeyExpr("a//b")
    with pytest.raises(pyzenoh.ZError):
        pyzenoh.open(
            {
                "mode": "client",
                "connect": {"endpoints": ["tcp/127.0.0.1:1"]},
                "transport": {"unicast": {"open_timeout": 200}},
            }
        )


def test_closed_channel_raises_zerror() -> None:
    h: Handler[int] = Handler(4)
    h.push(1)
    h.close()
    assert h.try_recv() == 1  # what is queued is still read
    with pytest.raises(pyzenoh.ZError):
        h.try_recv()
    with pytest.raises(pyzenoh.ZError):
        h.recv()
    assert list(h) == []


def test_handler_types() -> None:
    cb = pyzenoh.handlers.Callback(print, indirect=False)
    assert cb.callback is print and cb.drop is None and cb.indirect is False
    assert pyzenoh.handlers.FifoChannel(3).capacity == 3 and pyzenoh.handlers.RingChannel(2).capacity == 2
    pyzenoh.handlers.DefaultHandler()


@pytest.mark.parametrize(("secs", "nanos"), [(10, 500), (1, 999_999_999), (0, 1), (5, 123_456_789), (1_719_841_872, 0)])
def test_ntp64_as_zenoh(secs: int, nanos: int) -> None:
    ours, real = pyzenoh.NTP64(secs, nanos), zenoh.NTP64(secs, nanos)
    assert str(ours) == str(real)
    assert ours.as_secs() == real.as_secs() and ours.subsec_nanos() == real.subsec_nanos()
    assert ours.as_nanos() == real.as_nanos() and ours.as_secs_f64() == real.as_secs_f64()
    assert ours.to_datetime() == real.to_datetime()
    assert ours.to_string_rfc3339_lossy() == real.to_string_rfc3339_lossy()
    text = real.to_string_rfc3339_lossy()
    assert str(pyzenoh.NTP64.parse_rfc3339(text)) == str(zenoh.NTP64.parse_rfc3339(text))


def test_timestamp_as_zenoh() -> None:
    when = dt.datetime(2024, 7, 1, 13, 51, 12, 129693, tzinfo=dt.UTC)
    for tid in (b"\x33", bytes(range(1, 17))):
        ours, real = pyzenoh.Timestamp(when, tid), zenoh.Timestamp(when, tid)
        assert str(ours) == str(real)
        assert ours.to_string_rfc3339_lossy() == real.to_string_rfc3339_lossy()
        assert ours.get_time() == real.get_time()
        assert str(ours.get_time_as_ntp64()) == str(real.get_time_as_ntp64())
        assert str(ours.get_id()) == str(real.get_id()) and bytes(ours.get_id()) == bytes(real.get_id())
        back = pyzenoh.Timestamp.parse_rfc3339(real.to_string_rfc3339_lossy())
        assert str(back) == str(zenoh.Timestamp.parse_rfc3339(real.to_string_rfc3339_lossy()))
    with pytest.raises(pyzenoh.ZError):
        pyzenoh.Timestamp.parse_rfc3339("garbage")
    a = pyzenoh.Timestamp(pyzenoh.NTP64(1, 0), pyzenoh.TimestampId(b"\x01"))
    b = pyzenoh.Timestamp(pyzenoh.NTP64(2, 0), b"\x01")
    assert a < b and b >= a and a.get_diff_duration(b) == dt.timedelta(seconds=-1)


def test_parameters_as_zenoh() -> None:
    for text in ("b=1;a=2", "a=1;b=2", "a=1;b", "x=1|2"):
        ours, real = pyzenoh.Parameters(text), zenoh.Parameters(text)
        assert ours.is_ordered() == real.is_ordered() and list(ours) == list(real)
        assert ours.insert("c", "3") == real.insert("c", "3")
        assert ours.insert("c", "4") == real.insert("c", "4")
        assert ours.remove("a") == real.remove("a") and str(ours) == str(real)


def test_selector_and_consolidation() -> None:
    s = pyzenoh.Selector("a/b?x=1")
    s.key_expr = "c/d"  # type: ignore[assignment]
    s.parameters = "y=2"  # type: ignore[assignment]
    assert str(s) == "c/d?y=2" and isinstance(s.key_expr, pyzenoh.KeyExpr)
    latest = pyzenoh.QueryConsolidation(pyzenoh.ConsolidationMode.LATEST)
    assert latest.mode is pyzenoh.ConsolidationMode.LATEST
    assert pyzenoh.QueryConsolidation.DEFAULT.mode is pyzenoh.ConsolidationMode.AUTO


def test_whatami_matcher_as_zenoh() -> None:
    for spec in ("router", "router|peer", "client|peer|router"):
        assert str(pyzenoh.WhatAmIMatcher(spec)) == str(zenoh.WhatAmIMatcher(spec))
    m = pyzenoh.WhatAmIMatcher.empty()
    assert m.is_empty() and str(m.router().peer()) == str(zenoh.WhatAmIMatcher.empty().router().peer())
    assert pyzenoh.WhatAmIMatcher("peer").matches(pyzenoh.WhatAmI.PEER)


def test_instrumentation_builder() -> None:
    b = pyzenoh.TimestampInstrumentationBuilder()
    instr = b.set_send(True).set_receive(True).build()
    assert instr.is_instrumented(pyzenoh.InterceptionPoint.SEND)
    assert not instr.is_instrumented(pyzenoh.InterceptionPoint.ROUTE)
    with pytest.raises(pyzenoh.ZError):
        pyzenoh.TimestampInstrumentationBuilder().build()


def test_source_info_checks() -> None:
    gid = pyzenoh.EntityGlobalId(pyzenoh.ZenohId.from_str("a1"), 3)
    assert pyzenoh.SourceInfo(gid, 7).source_id.eid == 3
    with pytest.raises(pyzenoh.ZError):
        pyzenoh.SourceInfo(None, 1)  # type: ignore[arg-type]


def test_shm_names_fail_with_a_reason() -> None:
    shm = pyzenoh.shm
    for use in (
        lambda: shm.ShmProvider.default_backend(1024),
        lambda: shm.AllocAlignment.ALIGN_8_BYTE,
        lambda: shm.BlockOn(shm.GarbageCollect()),
        lambda: shm.ZShm(),
    ):
        with pytest.raises(pyzenoh.ZError, match="shared memory is not supported"):
            use()
    with pytest.raises(AttributeError, match="shared memory"):
        shm.NotAName  # noqa: B018
    assert pyzenoh.ZBytes(b"x").as_shm() is None
    assert not hasattr(shm.ShmProvider, "__wrapped__")


@pytest.mark.parametrize(
    ("spec", "expected", "skipped"),
    [
        ("warn", {"pyzenoh": logging.WARNING}, []),
        ("zenoh=debug,info", {"pyzenoh": logging.INFO}, []),
        ("info,zenoh_transport=trace", {"pyzenoh": logging.INFO, "pyzenoh.transport": logs.TRACE}, []),
        ("zenoh::net::routing=error,off", {"pyzenoh.net.routing": logging.ERROR, "pyzenoh": logging.CRITICAL + 10}, []),
        ("bogus==,debug", {"pyzenoh": logging.DEBUG}, ["bogus=="]),
        ("myapp=4", {"myapp": logging.DEBUG}, []),
    ],
)
def test_rust_log_filters(spec: str, expected: dict[str, int], skipped: list[str]) -> None:
    assert logs.parse_filter(spec) == (expected, skipped)


def test_init_log_from_env_or(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(logs, "_configured", False)
    monkeypatch.delenv("RUST_LOG", raising=False)
    logger = logging.getLogger("pyzenoh.test_logs")
    pz_logger = logging.getLogger("pyzenoh")
    old = (pz_logger.level, list(pz_logger.handlers), pz_logger.propagate)
    try:
        pyzenoh.try_init_log_from_env()  # RUST_LOG unset: nothing
        assert not logs._configured
        monkeypatch.setenv("RUST_LOG", "zenoh=info")
        pyzenoh.init_log_from_env_or("error")
        logger.info("visible")
        logger.debug("hidden")
        out = capsys.readouterr().out
        assert "visible" in out and "hidden" not in out
    finally:
        pz_logger.setLevel(old[0])
        pz_logger.handlers[:] = old[1]
        pz_logger.propagate = old[2]

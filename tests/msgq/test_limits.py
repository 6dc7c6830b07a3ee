"""The sans-IO side of the daemon's limits: core deadlines, the output queue, the event log."""

from __future__ import annotations

import argparse
import logging

import pytest

from pyzenoh.errors import UsageError
from pyzenoh.msgq.cli import register_cli
from pyzenoh.msgq.core import (
    DEFAULT_FRAME_STALL_TIMEOUT,
    DEFAULT_HANDSHAKE_TIMEOUT,
    Disconnect,
    MsgqCore,
)
from pyzenoh.msgq.flow import EventLog, OutputQueue
from pyzenoh.msgq.protocol import encode_message
from pyzenoh.msgq.server import (
    DEFAULT_MAX_QUEUE_BYTES,
    DEFAULT_MAX_QUEUE_MESSAGES,
    DEFAULT_SLOW_READER_TIMEOUT,
    MsgqDaemon,
)

GETLNAME = encode_message({"type": "getlname"})
EPOCH = 1_700_000_000.0


def kicked(actions: list[object]) -> list[int]:
    return [action.client for action in actions if isinstance(action, Disconnect)]


# -- handshake deadline -----------------------------------------------------------------------


def test_silent_connection_is_closed_at_the_handshake_deadline() -> None:
    core = MsgqCore(handshake_timeout=5.0)
    silent, talker = core.connect(EPOCH), core.connect(EPOCH)
    assert core.oldest_unestablished() == silent
    assert kicked(core.tick(100.0)) == []  # clocks start here
    core.receive(talker, GETLNAME)
    assert core.established(talker) and not core.established(silent)
    assert core.oldest_unestablished() == silent
    assert kicked(core.tick(104.9)) == []
    assert kicked(core.tick(105.0)) == [silent]
    assert core.clients == [talker]
    assert core.counters.handshake_timeouts == 1
    assert core.oldest_unestablished() is None
    assert kicked(core.tick(10_000.0)) == []  # an established client is never reaped for quiet


@pytest.mark.parametrize(
    ("header", "establishes"),
    [
        ({"type": "getlname"}, True),
        ({"type": "subscribe", "group": "g", "instance": "*"}, True),
        ({"type": "unsubscribe", "group": "g", "instance": "*"}, True),
        ({"type": "send", "group": "g", "instance": "*", "to": "*"}, True),
        ({"type": "ping"}, True),
        ({"type": "stats"}, True),
        ({"type": "send", "group": "g"}, False),  # invalid: ignored
        ({"type": "subscribe"}, False),
        ({"type": "nonsense"}, False),
        ({"no": "type"}, False),
    ],
)
def test_what_establishes_a_client(header: dict[str, str], establishes: bool) -> None:
    core = MsgqCore()
    cid = core.connect(EPOCH)
    core.receive(cid, encode_message(header))
    assert core.established(cid) is establishes
    assert core.established_count == int(establishes)


def test_partial_first_frame_is_reaped_by_the_handshake_deadline() -> None:
    core = MsgqCore(handshake_timeout=2.0, frame_stall_timeout=None)
    cid = core.connect(EPOCH)
    core.tick(0.0)
    gone: list[int] = []
    for step in range(1, 4):  # a byte now and then does not buy more time
        core.receive(cid, GETLNAME[step - 1 : step])
        gone += kicked(core.tick(float(step)))
        assert (step >= 2) == (gone == [cid])
    assert core.counters.handshake_timeouts == 1


def test_handshake_deadline_can_be_disabled() -> None:
    core = MsgqCore(handshake_timeout=None)
    cid = core.connect(EPOCH)
    for now in (0.0, 1e6, 1e9):
        assert kicked(core.tick(now)) == []
    assert core.clients == [cid]


def test_oldest_unestablished_is_in_connection_order() -> None:
    core = MsgqCore()
    first, second, third = (core.connect(EPOCH) for _ in range(3))
    assert core.oldest_unestablished() == first
    core.receive(first, GETLNAME)
    assert core.oldest_unestablished() == second
    core.disconnect(second)
    assert core.oldest_unestablished() == third


# -- partial frames ----------------------------------------------------------------------------


def test_stalled_partial_frame_is_closed() -> None:
    core = MsgqCore(frame_stall_timeout=3.0, handshake_timeout=None)
    cid = core.connect(EPOCH)
    core.receive(cid, GETLNAME)
    core.receive(cid, GETLNAME[:4])
    core.tick(0.0)
    core.receive(cid, GETLNAME[4:8])  # progress restarts the clock
    assert kicked(core.tick(2.5)) == []
    assert kicked(core.tick(5.0)) == []
    assert kicked(core.tick(5.5)) == [cid]
    assert core.counters.frame_stalls == 1


def test_quiet_client_between_frames_is_not_a_stall() -> None:
    core = MsgqCore(frame_stall_timeout=1.0)
    cid = core.connect(EPOCH)
    core.receive(cid, GETLNAME)
    for now in range(0, 100, 10):
        assert kicked(core.tick(float(now))) == []


# -- output queue ------------------------------------------------------------------------------


def test_empty_queue_admits_any_frame() -> None:
    queue = OutputQueue(max_bytes=10, max_messages=1)
    assert queue.admits(1_000_000, in_transport=0)
    assert not queue.admits(1, in_transport=10)  # something in the transport: limits apply
    assert queue.admits(5, in_transport=5)


def test_queue_limits_bytes_and_messages() -> None:
    queue = OutputQueue(max_bytes=100, max_messages=2)
    queue.push(b"a" * 40)
    assert queue.admits(60, in_transport=0)
    assert not queue.admits(61, in_transport=0)
    queue.push(b"b" * 10)
    assert not queue.admits(1, in_transport=0)  # two frames held
    assert queue.pop() == b"a" * 40
    assert queue.queued == 10 and queue.handed == 40 and len(queue) == 1
    assert queue.pending(in_transport=30) == 40


def test_stall_is_judged_on_progress_not_size() -> None:
    queue = OutputQueue(max_bytes=1 << 30, max_messages=10)
    queue.handed_over(1000)
    assert not queue.stalled(0.0, in_transport=1000, timeout=5.0)  # starts the clock
    assert not queue.stalled(4.0, in_transport=1000, timeout=5.0)
    assert not queue.stalled(6.0, in_transport=999, timeout=5.0)  # one byte taken: progress
    assert not queue.stalled(10.0, in_transport=999, timeout=5.0)
    queue.handed_over(50_000_000)  # more data written is not progress
    assert queue.stalled(11.0, in_transport=50_000_999, timeout=5.0)
    assert not queue.stalled(11.0, in_transport=50_000_999, timeout=None)


def test_idle_queue_never_stalls() -> None:
    queue = OutputQueue(max_bytes=100, max_messages=10)
    for now in range(0, 1000, 100):
        assert not queue.stalled(float(now), in_transport=0, timeout=1.0)
    queue.push(b"x")  # the clock runs from the last check that saw the queue empty (900)
    assert not queue.stalled(900.5, in_transport=0, timeout=1.0)
    assert queue.stalled(901.0, in_transport=0, timeout=1.0)


# -- event log ---------------------------------------------------------------------------------


def test_event_log_logs_each_kind_once_then_summarises(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("tests.msgq.eventlog")
    events = EventLog(logger, interval=60.0)
    events.flush(0.0)
    with caplog.at_level(logging.INFO, logger=logger.name):
        for n in range(1000):
            events.event("bad_frames", logging.WARNING, "bad frame %d", n)
            events.event("handshake_timeouts", logging.WARNING, "silent %d", n)
        events.flush(30.0)  # too early for a summary
        assert len(caplog.records) == 2
        events.flush(61.0)
        assert len(caplog.records) == 4
        assert "999 more bad_frames events" in caplog.text
        events.event("bad_frames", logging.WARNING, "bad frame again")  # a new period
        assert len(caplog.records) == 5
        events.flush(200.0)  # nothing suppressed: no summary
        assert len(caplog.records) == 5


def test_core_floods_log_a_bounded_number_of_lines(caplog: pytest.LogCaptureFixture) -> None:
    core = MsgqCore()
    with caplog.at_level(logging.INFO, logger="pyzenoh.msgq"):
        for _ in range(500):
            cid = core.connect(EPOCH)
            core.receive(cid, encode_message({"no": "type"}))
            core.receive(cid, b"\x00\x00\x00\x01\x00\x00")
    assert core.counters.bad_frames == 500 and core.counters.invalid_headers == 500
    assert len([r for r in caplog.records if r.levelno >= logging.INFO]) == 2


# -- configuration -----------------------------------------------------------------------------


def test_queue_must_hold_two_maximal_frames() -> None:
    with pytest.raises(UsageError):
        MsgqDaemon("/x", max_frame_size=1_000_000, max_queue_bytes=2_000_007)
    assert MsgqDaemon("/x", max_frame_size=1_000_000, max_queue_bytes=2_000_008).max_queue_bytes == 2_000_008
    assert MsgqDaemon("/x").max_queue_bytes == DEFAULT_MAX_QUEUE_BYTES
    assert MsgqDaemon("/x", max_frame_size=100 << 20).max_queue_bytes == 4 * (4 + (100 << 20))


@pytest.mark.parametrize("name", ["slow_reader_timeout", "handshake_timeout", "frame_stall_timeout"])
def test_timeouts_are_positive_or_none(name: str) -> None:
    for bad in (0, -1.0):
        with pytest.raises(UsageError):
            MsgqDaemon("/x", **{name: bad})
    MsgqDaemon("/x", **{name: None})


def test_tick_interval_follows_the_shortest_timeout() -> None:
    assert MsgqDaemon("/x").tick_interval == 1.0
    assert MsgqDaemon("/x", handshake_timeout=0.4).tick_interval == pytest.approx(0.1)
    assert MsgqDaemon("/x", slow_reader_timeout=0.01).tick_interval == 0.05
    daemon = MsgqDaemon("/x", handshake_timeout=None, frame_stall_timeout=None, slow_reader_timeout=None)
    assert daemon.tick_interval == 1.0


def test_cli_options() -> None:
    parser = argparse.ArgumentParser()
    register_cli(parser.add_subparsers())
    args = parser.parse_args(["msgq"])
    assert args.handshake_timeout == DEFAULT_HANDSHAKE_TIMEOUT
    assert args.frame_stall_timeout == DEFAULT_FRAME_STALL_TIMEOUT
    assert args.slow_reader_timeout == DEFAULT_SLOW_READER_TIMEOUT
    assert args.max_queue_messages == DEFAULT_MAX_QUEUE_MESSAGES and args.max_queue_bytes is None
    args = parser.parse_args(
        ["msgq", "--handshake-timeout", "0", "--slow-reader-timeout", "2.5", "--frame-stall-timeout", "none"]
    )
    assert args.handshake_timeout is None and args.frame_stall_timeout is None
    assert args.slow_reader_timeout == 2.5
    with pytest.raises(SystemExit):
        parser.parse_args(["msgq", "--handshake-timeout", "-3"])

"""What the router calls on a recorder: :class:`RouterRecorder`.

Two recorders take these calls: :class:`~pyzenoh.recording.recorder.Recorder` in the
router's process and :class:`~pyzenoh.recording.process.RecorderProcess`, which feeds one
in a child process. The router holds either as a ``RouterRecorder``; mypy checks that
both are one (below).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

Bytes = bytes | bytearray | memoryview


class RouterRecorder(Protocol):
    """The calls a router makes while it records. Times are wall-clock nanoseconds; a
    call that writes a record returns its seq (the ``cause`` of the records it caused)."""

    def link_opened(self, now_ns: int, link_id: int, zid: str, whatami: str, remote: str) -> None: ...
    def link_closed(self, now_ns: int, link_id: int, reason: str) -> None: ...
    def access_denied(
        self, now_ns: int, cause: int, link_id: int, flow: str, message: str, key: str | None, reason: str
    ) -> int: ...
    def intercepted(
        self, now_ns: int, cause: int, link_id: int, flow: str, message: str, key: str | None, reason: str
    ) -> int: ...
    def message(
        self, now_ns: int, link_id: int, direction: str, key: str | None, raw: Bytes, cause: int = -1
    ) -> int: ...
    def messages(
        self, now_ns: int, direction: str, key: str | None, sends: Sequence[tuple[int, Bytes]], cause: int = -1
    ) -> int: ...
    def routed(
        self, now_ns: int, link_id: int, key: str | None, raw: bytes, copies: Sequence[tuple[int, bytes]]
    ) -> int: ...
    def routed_run(
        self,
        now_ns: int,
        link_id: int,
        key: str | None,
        data: bytes,
        ends: Sequence[int] | int,
        copies: Sequence[tuple[int, bytes, Sequence[int] | int]],
        expected: list[int] | None = None,
    ) -> int: ...
    def route(self, now_ns: int, cause: int, key: str, expected_links: list[int]) -> None: ...
    def tick(self, now_ns: int) -> None: ...
    def close(self) -> None: ...


if TYPE_CHECKING:  # both recorders are RouterRecorders (checked by mypy, not at run time)
    from pyzenoh.recording.process import RecorderProcess
    from pyzenoh.recording.recorder import Recorder

    _in_process: type[RouterRecorder] = Recorder
    _child_process: type[RouterRecorder] = RecorderProcess

"""Fixtures for the msgq tests: a short socket directory and an in-process daemon."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.msgq.support import DaemonThread


@pytest.fixture
def sock_dir() -> Iterator[str]:
    # pytest's tmp_path can exceed the 107-byte limit of AF_UNIX paths; use a short one.
    path = tempfile.mkdtemp(prefix="mq")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def sock_path(sock_dir: str) -> str:
    return os.path.join(sock_dir, "msgq_socket")


@pytest.fixture
def daemon(sock_path: str) -> Iterator[DaemonThread]:
    with DaemonThread(sock_path) as running:
        yield running

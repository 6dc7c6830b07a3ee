"""``unixsock-stream/PATH`` links: framed as TCP (2-byte length prefix, batches up to
65535 bytes, as zenoh's UNIXSOCKSTREAM link), over a Unix stream socket.

This module holds the socket file's rules; the link itself is :class:`TcpLink`.
A listener replaces a stale socket file (one nobody accepts on, left by a process
that died) and refuses a live one; it removes its file when it closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat

from pyzenoh.errors import UsageError

log = logging.getLogger(__name__)

#: The protocol name of ``unixsock-stream/PATH`` endpoints.
UNIXSOCK = "unixsock-stream"


async def replace_stale_socket(path: str) -> None:
    """Remove ``path`` if it is a socket file nobody listens on; :class:`UsageError` if
    something listens there or the path is not a socket."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise UsageError(f"{UNIXSOCK}/{path}: the path exists and is not a socket")
    try:
        _, writer = await asyncio.open_unix_connection(path)
    except (ConnectionRefusedError, FileNotFoundError):
        log.info("%s/%s: replacing a stale socket file", UNIXSOCK, path)
        remove_socket_file(path)
        return
    except OSError as exc:
        raise UsageError(f"{UNIXSOCK}/{path}: cannot check the existing socket: {exc}") from exc
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    raise UsageError(f"{UNIXSOCK}/{path}: address in use (another process listens there)")


def remove_socket_file(path: str) -> None:
    """Remove the listener's socket file (gone already is fine)."""
    try:
        if stat.S_ISSOCK(os.stat(path).st_mode):
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("%s/%s: cannot remove the socket file: %s", UNIXSOCK, path, exc)

"""One exec's output, and bytes handed to its stdin over the exec's own connection.

Why: a command's input must reach it without lying in the workspace, where any process of the
agent's could read it (sandbox.feed says the same of the local backend). docker attaches the
exec's stdin to the API connection: the bytes go over it (a thread writes, as a command may
read slowly), the connection's write side is closed for the end of input, and the output
arrives on the same connection in docker's frames.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

from docker.utils.socket import frames_iter


def start_exec(
    api: Any, container: str, cmd: list[str], *, workdir: str, user: str, stdin: bytes | None
) -> tuple[str, Iterator[bytes]]:
    """Create and start an exec; its id and its output (stdout and stderr, in order)."""
    exec_id = api.exec_create(container, cmd, workdir=workdir, user=user, stdin=stdin is not None)
    if stdin is None:
        return exec_id["Id"], api.exec_start(exec_id["Id"], stream=True)
    conn = api.exec_start(exec_id["Id"], socket=True)
    raw: socket.socket = getattr(conn, "_sock", conn)
    threading.Thread(target=_write, args=(raw, stdin), daemon=True).start()
    return exec_id["Id"], _output(conn)


def _write(raw: socket.socket, data: bytes) -> None:
    try:
        raw.sendall(data)
    except OSError:  # the command ended before reading it all
        return
    try:
        raw.shutdown(socket.SHUT_WR)  # the end of the command's input
    except OSError:
        pass


def _output(conn: Any) -> Iterator[bytes]:
    try:
        for _stream, chunk in frames_iter(conn, tty=False):
            yield chunk
    finally:
        conn.close()

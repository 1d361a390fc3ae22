"""The gate a bwrap box waits at until the worker has put it under its limits.

bwrap writes the pid of the box's first process to `--info-fd` as soon as it has cloned it,
and that process builds the box, then waits on `--block-fd` before it starts the command. The
worker reads the pid, puts the process into the run's pids group and under its rlimits
(inherited by everything the command starts), then opens the gate. This replaces a `prlimit`
and a shell exec'd before bwrap on every run. The box also holds the gate's write end: if the
worker dies before opening it, the box waits for good instead of starting unlimited.
"""

from __future__ import annotations

import json
import os
import select

OPEN_TIMEOUT_SEC = 30.0  # bwrap writes its info right after its clone: far longer is a hang


class BoxGate:
    """Two pipes between the worker and one bwrap start."""

    def __init__(self) -> None:
        self._info_read, self._info_write = os.pipe()
        self._block_read, self._block_write = os.pipe()
        self._parent_only = False

    def options(self) -> list[str]:
        """bwrap's options for the gate (before its other options)."""
        return ["--info-fd", str(self._info_write), "--block-fd", str(self._block_read)]

    @property
    def child_fds(self) -> tuple[int, ...]:
        """The fds bwrap inherits (Popen's pass_fds)."""
        return (self._info_write, self._block_read, self._block_write)

    def box_pid(self) -> int | None:
        """The box's first process (a pid of the worker's namespace) once bwrap has cloned it;
        None when bwrap ended before (a bad option: it says why on stderr)."""
        self._close_child_ends()
        chunks = []
        while True:
            ready, _, _ = select.select([self._info_read], [], [], OPEN_TIMEOUT_SEC)
            if not ready:
                raise TimeoutError(f"bwrap wrote no info within {OPEN_TIMEOUT_SEC:.0f} s")
            chunk = os.read(self._info_read, 4096)
            if not chunk:
                break
            chunks.append(chunk)
        try:
            return int(json.loads(b"".join(chunks))["child-pid"])
        except (ValueError, KeyError, TypeError):
            return None

    def open(self) -> None:
        """Let the box start its command."""
        try:
            os.write(self._block_write, b"1")
        except BrokenPipeError:  # the box ended before (it failed to build)
            pass

    def close(self) -> None:
        """Close the worker's ends (the gate stays shut if it was not opened)."""
        self._close_child_ends()
        for fd in (self._info_read, self._block_write):
            _close(fd)
        self._info_read = self._block_write = -1

    def _close_child_ends(self) -> None:
        if not self._parent_only:
            _close(self._info_write)
            _close(self._block_read)
            self._parent_only = True


def _close(fd: int) -> None:
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass

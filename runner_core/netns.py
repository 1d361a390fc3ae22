"""Network namespaces kept by a worker process and lent to one box at a time.

A box cut from the network (`automation.network: off`, or an engine behind its egress proxy)
needs a network namespace with nothing but its own loopback. bwrap's `--unshare-net` makes one
per box, and the kernel builds and tears it down again: about 1 ms of CPU per box. A process
here keeps the namespaces it made and starts such a box in a free one (its spawning thread
enters it around the spawn only), so bwrap makes none.

Lending one again is safe: it holds nothing of the box before. That box's processes were all
ended with its pid namespace, their sockets with them, and a box (no capabilities, /proc/sys
read-only) cannot change the namespace's interfaces, routes or settings. Two boxes at once
never share one.

Entering a namespace needs CAP_SYS_ADMIN (a worker running as root); without it, or under a
green-thread pool (gevent, eventlet: another green thread could open a socket while the
spawning thread is inside), boxes unshare as before.
"""

from __future__ import annotations

import ctypes
import fcntl
import logging
import os
import socket
import struct
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_IFREQ = "16sh22x"  # struct ifreq: the name, then the flags of its union
_THREAD_NS = "/proc/thread-self/ns/net"
_libc = ctypes.CDLL(None, use_errno=True)


class Namespaces:
    """The free namespaces of this process (a forked child starts with none of its parent's)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[int] = []
        self._pid = os.getpid()
        self._usable: bool | None = None

    @contextmanager
    def lease(self) -> Iterator[int | None]:
        """A namespace's fd, this box's alone until the block ends; None where none can be
        made (the box then unshares its own)."""
        fd = self._take()
        try:
            yield fd
        finally:
            if fd is not None:
                with self._lock:
                    if self._pid == os.getpid():
                        self._free.append(fd)

    def _take(self) -> int | None:
        with self._lock:
            if self._pid != os.getpid():  # a fork's copies: the parent may lend the same ones
                self._free, self._pid = [], os.getpid()
            if self._free:
                return self._free.pop()
            if self._usable is None:
                self._usable = _can_enter()
            if not self._usable:
                return None
        try:
            return _make()
        except OSError as exc:
            log.warning("sandbox: cannot make a network namespace (%s); boxes make their own", exc)
            with self._lock:
                self._usable = False
            return None


@contextmanager
def entered(fd: int) -> Iterator[None]:
    """The calling thread inside namespace `fd` (what it spawns is born there), then back in
    its own; nothing else may run on this thread meanwhile."""
    own = os.open(_THREAD_NS, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns(fd)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(own)


def _can_enter() -> bool:
    if os.geteuid() != 0:
        return False
    if subprocess.Popen.__module__ != "subprocess":  # monkey-patched for green threads
        return False
    return os.path.exists(_THREAD_NS)


def _make() -> int:
    """A new namespace with its loopback up, made on the calling thread, which stays in its
    own."""
    own = os.open(_THREAD_NS, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.unshare(CLONE_NEWNET) != 0:
            raise _error("unshare")
        try:
            made = os.open(_THREAD_NS, os.O_RDONLY | os.O_CLOEXEC)
            try:
                _loopback_up()
            except OSError:
                os.close(made)
                raise
        finally:
            _setns(own)
    finally:
        os.close(own)
    return made


def _loopback_up() -> None:
    """`ip link set lo up` of the thread's namespace (bwrap does the same in one it makes)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(_IFREQ, b"lo", 0)
        flags = struct.unpack(_IFREQ, fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        raise _error("setns")


def _error(call: str) -> OSError:
    errno = ctypes.get_errno()
    return OSError(errno, f"{call}: {os.strerror(errno)}")


NAMESPACES = Namespaces()

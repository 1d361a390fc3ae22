"""One object per process, rebuilt in a forked child: connections, threads and their locks do
not cross a fork, so a child must not use what its parent made."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar, cast

T = TypeVar("T")

_instances: weakref.WeakSet[PerProcess] = weakref.WeakSet()


class PerProcess(Generic[T]):
    """`get()` returns the object `factory()` made in this process, making it on first use."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._pid: int | None = None
        self._value: T | None = None
        self._lock = threading.Lock()
        _instances.add(self)

    def get(self) -> T:
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():
                    self._value = self._factory()
                    self._pid = os.getpid()
        return cast(T, self._value)  # set above for this process; T itself may allow None

    def made(self) -> bool:
        """Has this process made its object yet?"""
        return self._pid == os.getpid()


def _after_fork_in_child() -> None:
    # A lock held by another thread of the parent at the fork would stay locked forever.
    for instance in list(_instances):
        instance._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)

"""One object per process, rebuilt in a forked child (runner_core.per_process)."""

from __future__ import annotations

import os
import threading

from runner_core.per_process import PerProcess


def in_child(body) -> bytes:
    """Run `body()` (returning one byte) in a forked child; returns that byte."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, body())
        finally:
            os._exit(0)
    os.close(write)
    try:
        return os.read(read, 1)
    finally:
        os.close(read)
        os.waitpid(pid, 0)


def test_the_object_is_made_once_per_process():
    made = []
    single = PerProcess(lambda: made.append(1) or object())
    assert not single.made()
    first = single.get()
    assert single.get() is first and single.made() and made == [1]


def test_a_forked_child_makes_its_own():
    single = PerProcess(lambda: os.getpid())
    assert single.get() == os.getpid()
    assert in_child(lambda: b"1" if single.get() == os.getpid() else b"0") == b"1"
    assert single.get() == os.getpid()  # the parent's object is untouched


def test_threads_racing_the_first_use_get_the_same_object():
    start, made = threading.Barrier(8), []
    single = PerProcess(lambda: made.append(1) or object())
    seen = []

    def use():
        start.wait(5)
        seen.append(single.get())

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert made == [1] and len({id(obj) for obj in seen}) == 1


def test_a_lock_held_at_the_fork_does_not_block_the_child():
    holding, release, parent = threading.Event(), threading.Event(), os.getpid()

    def make() -> str:
        if os.getpid() == parent:  # the parent's first use stays inside get() until released
            holding.set()
            release.wait(5)
        return "made"

    single = PerProcess(make)

    thread = threading.Thread(target=single.get)
    thread.start()
    assert holding.wait(5)  # another thread is inside get(), holding the lock

    def child() -> bytes:  # in a thread, so a child stuck on the lock answers "0" in time
        got = []
        worker = threading.Thread(target=lambda: got.append(single.get()), daemon=True)
        worker.start()
        worker.join(5)
        return b"1" if got == ["made"] else b"0"

    try:
        assert in_child(child) == b"1"
    finally:
        release.set()
        thread.join(5)

"""The run pool's refill runs on a thread of the pool process, after the task has returned."""

from __future__ import annotations

import logging
import os
import threading

from worker.execution.refill import Refiller


def test_submit_returns_at_once_and_the_fill_runs_on_the_thread():
    refiller, release, done = Refiller(), threading.Event(), threading.Event()
    threads = []

    def fill():
        threads.append(threading.current_thread().name)
        release.wait(5)
        done.set()

    refiller.submit(fill, "run a")
    assert not done.is_set()  # the caller did not wait for the fill
    release.set()
    assert done.wait(5)
    assert threads == ["run-pool"]


def test_fills_run_in_order_and_a_failure_does_not_stop_the_thread(caplog):
    refiller, order, last = Refiller(), [], threading.Event()

    def broken():
        order.append("broken")
        raise OSError("disk full")

    with caplog.at_level(logging.WARNING, logger="worker.execution.refill"):
        refiller.submit(broken, "run a")
        refiller.submit(lambda: (order.append("next"), last.set()), "run b")
        assert last.wait(5)
    assert order == ["broken", "next"]
    assert "run pool refill after run a failed" in caplog.text


def test_a_forked_child_starts_its_own_thread():
    refiller, done = Refiller(), threading.Event()
    refiller.submit(done.set, "parent")
    assert done.wait(5)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's thread did not cross the fork
        ok = threading.Event()
        refiller.submit(ok.set, "child")
        os.write(write, b"1" if ok.wait(5) else b"0")
        os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.waitpid(pid, 0)

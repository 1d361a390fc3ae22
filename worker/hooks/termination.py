"""SIGTERM to a pool process while it executes a run (Flower's revoke with terminate, a worker
stopping) ends the run through `Terminated`, raised in the task's main thread; SIGUSR1 (Celery's
soft time limit) through `SoftTimeLimitExceeded`, as billiard's own handler raises it.

Never inside a database call: raised in SQLAlchemy or the driver mid-statement or mid-commit,
it can leave the connection's write transaction open (SQLite keeps its write lock, Postgres its
row locks), or a Postgres connection mid-command, which goes back to the pool and fails the
next statement made on it, while the task goes on to record the end, which then waits on itself
or fails. A signal that lands there is sent again a moment later, until it lands outside.

Only a task on the process's main thread (a prefork or solo pool) can be reached this way: a
pool of threads runs tasks on other threads, where no signal handler can be set, and Celery
cannot terminate a thread; there a revoke ends the run through its cancel (worker.hooks.revokes).

A correctness guard, kept on purpose (docs/internals.md, "Private library details"): not a
speed-up, and it uses no library's private API, so it has no setting to switch it off.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from celery.exceptions import SoftTimeLimitExceeded

RESEND_SEC = 0.005
_DATABASE_MODULES = ("sqlalchemy", "psycopg", "sqlite3")
_state: dict = {"run_id": None, "terminating": False, "soft_limited": False}


class Terminated(BaseException):
    """Raised in the task when its pool process gets SIGTERM."""


@contextmanager
def terminable(run_id: str) -> Iterator[None]:
    """While the block runs, SIGTERM raises Terminated and SIGUSR1 SoftTimeLimitExceeded (each
    once) in it (on the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state.update(run_id=run_id, terminating=False, soft_limited=False)
    # billiard installs its own handlers after the process initializer, so these cannot be set
    # once per pool process
    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, _on_sigterm),
        signal.SIGUSR1: signal.signal(signal.SIGUSR1, _on_soft_limit),
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _state.update(run_id=None, terminating=False, soft_limited=False)


def terminating() -> bool:
    """True once Terminated was raised in the current run."""
    on_main = threading.current_thread() is threading.main_thread()
    return on_main and bool(_state["terminating"])


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    if _state["terminating"]:  # once: a second SIGTERM must not interrupt the group kill
        return
    if in_database_call(frame):
        _send_again(signum, "terminating")
        return
    _state["terminating"] = True
    raise Terminated()


def _on_soft_limit(signum: int, frame: FrameType | None) -> None:
    if _state["soft_limited"] or _state["terminating"]:  # the run is ending already
        return
    if in_database_call(frame):
        _send_again(signum, "soft_limited")
        return
    _state["soft_limited"] = True
    raise SoftTimeLimitExceeded()


def _send_again(signum: int, done: str) -> None:
    """`signum` again in RESEND_SEC, unless the run ended or it was raised meanwhile."""
    run_id = _state["run_id"]

    def resend() -> None:
        if _state["run_id"] == run_id and not _state[done]:
            os.kill(os.getpid(), signum)

    threading.Timer(RESEND_SEC, resend).start()


def in_database_call(frame: FrameType | None) -> bool:
    """True when `frame` or a caller of it is in SQLAlchemy or a database driver."""
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith(_DATABASE_MODULES):
            return True
        frame = frame.f_back
    return False

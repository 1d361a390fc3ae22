"""Helper of tests/component/test_termination.py: forks writers that a signal (SIGTERM, or
Celery's soft time limit SIGUSR1) lands on at random moments and reports whether each could
record its end afterwards (`python -m tests.sigterm_writer DB N MODE [SIGNAL [STOP]]`; DB is a
SQLite file or a Postgres URL, SIGNAL TERM or USR1; STOP `any` ends the trials at the first
writer that could not record its end, an exit code at the first writer with that code: for a
hazard that is rare)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import sys
import time

from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy import text

from runner_core.store.db import make_engine
from worker.hooks import termination

WRITE = "UPDATE runs SET beat = :now WHERE id = 'r' RETURNING cancel"
END = "UPDATE runs SET cancel = 1 WHERE id = 'r'"


def writer(db: str, ready: int) -> None:
    """Beats like a run's watch until the signal's exception, then records the end: on SQLite
    from a connection of its own (a write lock left held fails it), on Postgres from the same
    engine, as the worker does (a connection left mid-command fails it)."""
    postgres = "://" in db
    engine = make_engine(db if postgres else f"sqlite:///{db}")
    try:
        with termination.terminable("r"):
            beats = 0
            while True:
                with engine.connect() as conn:
                    conn.execute(text(WRITE), {"now": time.time()}).first()
                    conn.commit()
                if beats == 0:  # ready once connected: on a loaded machine the signal would
                    os.write(ready, b".")  # otherwise land in the first connect, harmlessly
                beats += 1
                time.sleep(0.0002)
    except (termination.Terminated, SoftTimeLimitExceeded):
        os._exit(_record_end(engine, db, postgres))
    os._exit(4)


def _record_end(engine, db: str, postgres: bool) -> int:
    """0 when the end is recorded, 3 when the database refuses it (locked, or a broken
    connection), 1 for anything else."""
    if not postgres:
        end = sqlite3.connect(db, timeout=0.3)
        try:
            end.execute(END)
            end.commit()
            return 0
        except sqlite3.OperationalError:  # database is locked: the race this guards against
            return 3
    try:
        with engine.connect() as conn:
            conn.execute(text("SET lock_timeout = '300ms'"))
            conn.execute(text(END))
            conn.commit()
        return 0
    except Exception:  # another command in progress, a row lock held: the same race
        return 3


def _create(db: str) -> None:
    if "://" in db:
        engine = make_engine(db)
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE runs (id TEXT PRIMARY KEY, beat REAL, cancel INT)"))
            conn.execute(text("INSERT INTO runs VALUES ('r', 0, NULL)"))
        engine.dispose()
        return
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, beat REAL, cancel INTEGER)")
    conn.execute("INSERT INTO runs VALUES ('r', 0, NULL)")
    conn.commit()
    conn.close()


def _wait(pid: int, limit: float = 10.0) -> int | str:
    """The writer's exit code, or "hung" (killed) when it has not ended within `limit`
    seconds: unguarded, the exception can leave a Postgres connection mid-protocol, and the
    rollback on its return to the pool then waits for a reply that never comes."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "hung"


def main(db: str, trials: int, mode: str, signame: str = "TERM", stop: str = "") -> None:
    if mode == "unguarded":  # the control: every signal raises at once, wherever it lands
        termination.in_database_call = lambda _frame: False
    sent = signal.Signals[f"SIG{signame}"]
    _create(db)
    outcomes: dict[int | str, int] = {}
    for _ in range(trials):
        ready, told = os.pipe()
        pid = os.fork()
        if pid == 0:
            writer(db, told)
        os.read(ready, 1)
        os.close(ready)
        os.close(told)
        time.sleep(random.uniform(0.001, 0.01))
        os.kill(pid, sent)
        code = _wait(pid)
        outcomes[code] = outcomes.get(code, 0) + 1
        if (stop == "any" and code != 0) or stop == str(code):
            break
    print(" ".join(f"{code}:{n}" for code, n in sorted(outcomes.items(), key=str)))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], *sys.argv[4:6])

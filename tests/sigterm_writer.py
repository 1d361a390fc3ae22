"""Helper of tests/component/test_termination.py: forks writers that SIGTERM lands on at random moments and
reports whether each could record its end afterwards (`python -m tests.sigterm_writer DB N MODE`)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import sys
import time

from sqlalchemy import text

from runner_core.store.db import make_engine
from worker.hooks import termination

WRITE = "UPDATE runs SET beat = :now WHERE id = 'r' RETURNING cancel"


def writer(path: str, ready: int) -> None:
    """Beats like a run's watch until terminated, then records the end from a new engine."""
    engine = make_engine(f"sqlite:///{path}")
    try:
        with termination.terminable("r"):
            os.write(ready, b".")
            while True:
                with engine.connect() as conn:
                    conn.execute(text(WRITE), {"now": time.time()}).first()
                    conn.commit()
                time.sleep(0.0002)
    except termination.Terminated:
        end = sqlite3.connect(path, timeout=0.3)
        try:
            end.execute("UPDATE runs SET cancel = 1 WHERE id = 'r'")
            end.commit()
            os._exit(0)
        except sqlite3.OperationalError:  # database is locked: the race this guards against
            os._exit(3)
    os._exit(4)


def main(path: str, trials: int, mode: str) -> None:
    if mode == "unguarded":  # the control: every SIGTERM raises at once, wherever it lands
        termination.in_database_call = lambda _frame: False
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, beat REAL, cancel INTEGER)")
    db.execute("INSERT INTO runs VALUES ('r', 0, NULL)")
    db.commit()
    db.close()
    outcomes: dict[int, int] = {}
    for _ in range(trials):
        ready, told = os.pipe()
        pid = os.fork()
        if pid == 0:
            writer(path, told)
        os.read(ready, 1)
        os.close(ready)
        os.close(told)
        time.sleep(random.uniform(0.001, 0.01))
        os.kill(pid, signal.SIGTERM)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        outcomes[code] = outcomes.get(code, 0) + 1
    print(" ".join(f"{code}:{n}" for code, n in sorted(outcomes.items())))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])

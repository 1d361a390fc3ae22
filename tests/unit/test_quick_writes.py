"""QuickWrites: a worker's claim and finish try again within microseconds while another
connection holds SQLite's write lock, instead of sleeping in SQLite's busy handler."""
from __future__ import annotations

import sqlite3
import threading

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from runner_core.store.db import QuickWrites, make_engine


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "runs.db"
    engine = make_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)"))
        conn.execute(text("INSERT INTO t VALUES (1, 0)"))
    writes = QuickWrites(engine)
    yield path, writes
    writes.dispose()
    engine.dispose()


def hold_write_lock(path, seconds: float) -> threading.Event:
    """Another connection takes the write lock now and lets it go after `seconds`."""
    taken = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        taken.set()
        threading.Event().wait(seconds)
        conn.execute("COMMIT")
        conn.close()
    threading.Thread(target=hold, daemon=True).start()
    assert taken.wait(5)
    return taken


def bump(calls: list):
    def write(conn):
        calls.append(1)
        result = conn.execute(text("UPDATE t SET v = v + 1 WHERE id = 1"))
        conn.commit()
        return result.rowcount
    return write


def value(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT v FROM t WHERE id = 1").fetchone()[0]
    finally:
        conn.close()


def test_a_write_behind_a_short_lock_is_tried_again_until_it_goes_through(db, monkeypatch):
    path, writes = db
    monkeypatch.setattr(QuickWrites, "PAUSES", (0.005,) * 20)
    hold_write_lock(path, 0.02)
    calls: list = []
    engines = []

    def write(conn):
        engines.append(conn.engine)
        return bump(calls)(conn)
    assert writes.run(write) == 1
    assert len(calls) > 1  # the first tries met the lock and did not wait in SQLite
    assert engines[-1] is writes.quick  # went through on a quick try, not the waiting one
    assert value(path) == 1  # written once: the failed tries were rolled back


def test_a_lock_held_past_the_spin_is_waited_for_on_the_ordinary_connection(db, monkeypatch):
    path, writes = db
    monkeypatch.setattr(QuickWrites, "PAUSES", (0.001,) * 3)
    hold_write_lock(path, 0.15)
    calls: list = []
    assert writes.run(bump(calls)) == 1
    assert value(path) == 1
    assert len(calls) == 5  # four quick tries (the first and one after each pause), then the wait


def test_errors_other_than_the_lock_are_raised_at_once(db):
    _path, writes = db
    calls: list = []

    def broken(conn):
        calls.append(1)
        conn.execute(text("UPDATE no_such_table SET v = 1"))
    with pytest.raises(OperationalError, match="no such table"):
        writes.run(broken)
    assert len(calls) == 1


def test_other_databases_write_once_on_the_ordinary_engine():
    engine = make_engine("postgresql://nobody@127.0.0.1:1/none")  # never connected here
    writes = QuickWrites(engine)
    assert writes.quick is None
    engine.dispose()


def test_other_databases_write_on_the_callers_connection_when_given_one():
    engine = make_engine("postgresql://nobody@127.0.0.1:1/none")
    given = object()
    assert QuickWrites(engine).run(lambda conn: conn, given) is given
    engine.dispose()


def test_on_sqlite_the_callers_connection_is_the_last_resort(db, monkeypatch):
    path, writes = db
    monkeypatch.setattr(QuickWrites, "PAUSES", (0.001,))
    hold_write_lock(path, 0.1)
    used = []

    def write(conn):
        used.append(conn)
        conn.execute(text("UPDATE t SET v = v + 1 WHERE id = 1"))
        conn.commit()
    with writes.engine.connect() as mine:
        writes.run(write, mine)
        assert used[-1] is mine and len(used) >= 2
    assert value(path) == 1

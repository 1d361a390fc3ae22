"""SQLite checkpoints run on a background thread, not in the commits of requests and runs."""

from __future__ import annotations

import gc
import os
import select
import signal
import sqlite3
import threading
from types import SimpleNamespace

import pytest
from sqlalchemy import text

from runner_core.store import checkpoint
from runner_core.store.db import make_engine
from tests.helpers import wait_for


@pytest.fixture
def fast(monkeypatch):
    monkeypatch.setattr(checkpoint, "EVERY_SEC", 0.05)


def fill(engine, rows: int) -> None:
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT)"))
    for _ in range(rows):
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO t (v) VALUES (:v)"), {"v": "x" * 3000})


def threads_for(path) -> list[checkpoint.Checkpointer]:
    return [
        t
        for t in threading.enumerate()
        if isinstance(t, checkpoint.Checkpointer) and t.path == os.path.abspath(path)
    ]


def test_commits_leave_the_wal_to_the_checkpoint_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint, "EVERY_SEC", 60.0)  # the thread sleeps through the test
    db = tmp_path / "runs.db"
    engine = make_engine(f"sqlite:///{db}")
    fill(engine, 400)  # ~1,200 pages: past SQLite's own autocheckpoint of 1,000
    with engine.connect() as conn:
        assert (
            conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == checkpoint.FALLBACK_PAGES
        )
    assert os.path.getsize(db) <= 8192  # every page is still in the WAL only
    assert os.path.getsize(f"{db}-wal") > 1000 * 4096
    engine.dispose()


def test_the_thread_copies_the_wal_into_the_database(tmp_path, fast):
    db = tmp_path / "runs.db"
    engine = make_engine(f"sqlite:///{db}")
    fill(engine, 100)
    (thread,) = threads_for(db)
    # the file grows while the checkpoint runs, before the thread counts it: wait for both
    wait_for(lambda: os.path.getsize(db) > 100 * 3000 and thread.runs >= 1)
    with engine.connect() as conn:  # and the data is all there
        assert conn.exec_driver_sql("SELECT count(*) FROM t").scalar() == 100
    engine.dispose()


def test_a_wal_past_the_limit_is_emptied(tmp_path, fast, monkeypatch):
    monkeypatch.setattr(checkpoint, "TRUNCATE_BYTES", 256 * 1024)
    db = tmp_path / "runs.db"
    engine = make_engine(f"sqlite:///{db}")
    fill(engine, 200)
    wait_for(lambda: threads_for(db) and threads_for(db)[0].truncations >= 1)
    wait_for(lambda: os.path.getsize(f"{db}-wal") <= 256 * 1024)
    engine.dispose()


def test_one_thread_per_file_and_it_ends_with_its_engines(tmp_path, fast):
    db = tmp_path / "runs.db"
    first, second = make_engine(f"sqlite:///{db}"), make_engine(f"sqlite:///{db}")
    fill(first, 1)
    fill(second, 1)
    (thread,) = threads_for(db)
    first.dispose()
    del first
    gc.collect()
    runs = thread.runs  # two more checkpoints: it went on after the first engine was gone
    wait_for(lambda: thread.runs >= runs + 2)
    assert threads_for(db) == [thread]  # the second engine still uses the file
    second.dispose()
    del second
    gc.collect()
    wait_for(lambda: not threads_for(db))


def test_the_thread_never_creates_a_database_that_was_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint, "EVERY_SEC", 0.3)
    opened: list[str] = []

    def connect(database: str, **kwargs):
        opened.append(database)
        return sqlite3.connect(database, **kwargs)

    monkeypatch.setattr(
        checkpoint, "sqlite3", SimpleNamespace(connect=connect, Error=sqlite3.Error)
    )
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "runs.db"
    engine = make_engine(f"sqlite:///{db}")
    fill(engine, 1)
    (thread,) = threads_for(db)
    for name in os.listdir(folder):  # before the thread's first tick opened its connection
        os.remove(folder / name)
    # two ticks that tried to open the file (or one that opened it and checkpointed)
    wait_for(lambda: len(opened) >= 2 or thread.runs)
    assert not db.exists() and thread.runs == 0
    engine.dispose()


def test_memory_databases_get_no_thread():
    before = set(checkpoint._threads)
    engine = make_engine("sqlite://")
    with engine.connect() as conn:
        conn.exec_driver_sql("SELECT 1")
    assert set(checkpoint._threads) <= before
    engine.dispose()


def test_a_forked_child_gets_a_free_lock_and_its_own_thread(tmp_path, fast):
    db = tmp_path / "runs.db"
    engine = make_engine(f"sqlite:///{db}")
    fill(engine, 1)
    read, write = os.pipe()
    with checkpoint._lock:  # held by this process at the moment of the fork
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe
            try:  # still inside the `with`: the child's copy of the lock was never released
                child = make_engine(f"sqlite:///{db}")
                fill(child, 1)  # its first connection registers with the checkpointer
                try:
                    wait_for(lambda: threads_for(db) and threads_for(db)[0].runs >= 1, 3.0)
                    os.write(write, b"ok")
                except AssertionError:
                    os.write(write, b"no thread")
            finally:
                os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 10.0)
    if not ready:  # the child hangs on the lock it inherited
        os.kill(pid, signal.SIGKILL)
    answer = os.read(read, 100) if ready else b"hung"
    os.waitpid(pid, 0)
    assert answer == b"ok"
    engine.dispose()


def test_a_forgotten_engine_stops_its_checkpoint_thread(tmp_path, fast):
    """The Celery main process opens an engine once (startup reconciliation): after it, no
    thread of that process should go on checkpointing on the engine's behalf."""
    import os

    from sqlalchemy import text

    from runner_core.store.db import make_engine

    path = tmp_path / "runs.db"
    engine = make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    thread = checkpoint._threads[(os.getpid(), str(path.resolve()))]
    engine.dispose()
    checkpoint.forget(engine)
    thread.join(5)
    assert not thread.is_alive()
    assert engine is not None  # still referenced here: forget, not garbage collection, did it

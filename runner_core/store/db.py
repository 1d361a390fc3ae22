"""Engine and session factory; SQLite gets WAL and a busy timeout so API and workers share it,
and its checkpoints run on a background thread (runner_core.store.checkpoint)."""
from __future__ import annotations

import logging
import sqlite3
import time
import weakref
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from runner_core.store import checkpoint

log = logging.getLogger(__name__)
T = TypeVar("T")


def make_engine(url: str, *, busy_timeout_sec: float = 30.0) -> Engine:
    """An Engine for `url` with settings fit for concurrent API + worker processes
    (`busy_timeout_sec`: how long a SQLite statement waits for another writer's lock)."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": busy_timeout_sec,
                                                  "check_same_thread": False})
        ref = weakref.ref(engine)  # the listener must not keep the engine alive

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute(f"PRAGMA wal_autocheckpoint={checkpoint.FALLBACK_PAGES}")
            cur.close()
            live = ref()
            if live is not None:
                checkpoint.watch(live.url.database, live)

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)


class QuickWrites:
    """Short write transactions of a process whose time is the throughput: a worker's claim
    and finish.

    SQLite lets one writer in at a time, and its busy handler sleeps 1, 2, 5, 10 ms... between
    tries, while the lock of this service's short transactions is free again within ~0.1-0.3 ms:
    with 300 jobs at once on two worker processes, one claim in six slept over 1 ms. A quick
    write runs on a connection that does not wait (busy timeout 0) and tries again after
    PAUSES (50 microseconds, doubling: 0.75 ms in all); then once more on an ordinary
    connection, which waits as every other does. The tries are few: a lock held longer is
    waited for, not spun on. Each write must be safe to run again after a "database is locked"
    (the service's writes are guarded UPDATEs and INSERTs of new rows; a failed try is rolled
    back). Other databases lock rows, not the file: the write runs once.
    """

    PAUSES = (50e-6, 100e-6, 200e-6, 400e-6)

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.quick: Engine | None = None
        if engine.dialect.name == "sqlite":
            self.quick = make_engine(engine.url.render_as_string(hide_password=False),
                                     busy_timeout_sec=0)

    def run(self, write: Callable[[Connection], T], conn: Connection | None = None) -> T:
        """`write(c)` on a connection that commits what it writes: a quick one first on SQLite,
        then `conn` (or one of the ordinary engine's), which waits for the lock."""
        if self.quick is not None:
            for pause in (*self.PAUSES, None):
                try:
                    with self.quick.connect() as quick:
                        return write(quick)
                except OperationalError as exc:
                    if not locked(exc):
                        raise
                if pause is not None:
                    time.sleep(pause)
        if conn is not None:
            return write(conn)
        with self.engine.connect() as own:
            return write(own)

    def dispose(self) -> None:
        if self.quick is not None:
            self.quick.dispose()


def locked(exc: OperationalError) -> bool:
    """Is `exc` SQLite's "database is locked" (another connection holds the write lock)?"""
    orig = exc.orig
    return isinstance(orig, sqlite3.OperationalError) and "locked" in str(orig)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def normalize_url(url: str) -> str:
    """Use psycopg 3 for plain postgres URLs (psycopg2 is not a dependency)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def retry_unavailable(write: Callable[[], T], what: str, budget_sec: float,
                      first_delay: float = 0.2) -> T:
    """`write()`, tried again with growing pauses while the database does not answer
    (OperationalError: down, restarting, locked past the busy timeout) for up to `budget_sec`;
    then the last error is raised. For the writes that record what a run did, which a short
    outage must not lose."""
    delay, end = first_delay, time.monotonic() + budget_sec
    while True:
        try:
            return write()
        except OperationalError as exc:
            if time.monotonic() + delay > end:
                raise
            log.warning("%s: the database does not answer (%s); again in %.1f s", what,
                        exc.orig if exc.orig is not None else exc, delay)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)

"""Engine and session factory; SQLite gets WAL and a busy timeout so API and workers share it,
and its checkpoints run on a background thread (runner_core.store.checkpoint)."""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from runner_core.store import checkpoint

log = logging.getLogger(__name__)
T = TypeVar("T")


def make_engine(url: str) -> Engine:
    """An Engine for `url` with settings fit for concurrent API + worker processes."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
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


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def normalize_url(url: str) -> str:
    """Use psycopg 3 for plain postgres URLs (psycopg2 is not a dependency)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def retry_unavailable(
    write: Callable[[], T], what: str, budget_sec: float, first_delay: float = 0.2
) -> T:
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
            log.warning(
                "%s: the database does not answer (%s); again in %.1f s",
                what,
                exc.orig if exc.orig is not None else exc,
                delay,
            )
            time.sleep(delay)
            delay = min(delay * 2, 5.0)

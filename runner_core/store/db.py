"""Engine and session factory; SQLite gets WAL and a busy timeout so API and workers share it,
and its checkpoints run on a background thread (runner_core.store.checkpoint)."""
from __future__ import annotations

import weakref

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from runner_core.store import checkpoint


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
            return "postgresql+psycopg://" + url[len(prefix):]
    return url

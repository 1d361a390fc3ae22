"""SQLite WAL checkpoints on a background thread instead of inside a request's commit.

By default the commit that grows the WAL past 1,000 pages copies them back into the database
file and syncs it, so every so often one request pays for a whole checkpoint (the tail latency).
Our connections raise that threshold to FALLBACK_PAGES (reached only if this thread falls
behind), and one daemon thread per process and database file runs a PASSIVE checkpoint every
EVERY_SEC: it never blocks readers or writers, and sqlite3 releases the GIL while it copies.

A PASSIVE checkpoint cannot rewind the WAL while writes keep coming (the writer that would
restart it always finds frames newer than the checkpoint), so under sustained writes the file
grows; past TRUNCATE_BYTES the thread makes a TRUNCATE checkpoint, which holds writers back
for the few frames the last PASSIVE one left (at most BUSY_SEC) and empties the file.

With nothing written since its last checkpoint, the thread waits twice as long each time, up to
IDLE_MAX_SEC, so an idle service is not woken twice a second; the first write it sees brings it
back to EVERY_SEC.

The thread starts with the first connection a process opens (so a forked process gets its
own) and ends once no engine of that file is left in the process.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import weakref
from urllib.parse import quote

log = logging.getLogger(__name__)

EVERY_SEC = 0.5
IDLE_MAX_SEC = 8.0
FALLBACK_PAGES = 25_000  # ~100 MiB of WAL: the commit that passes it checkpoints itself
TRUNCATE_BYTES = 64 << 20
BUSY_SEC = 0.05

_threads: dict[tuple[int, str], Checkpointer] = {}
_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A fork while a checkpointer held the lock would leave it held forever in the child
    (Celery forks pool processes from a main process that may have one running)."""
    global _lock
    _lock = threading.Lock()
    _threads.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def watch(path: str | None, engine) -> None:
    """Make sure this process checkpoints the database at `path` while `engine` lives
    (None or ':memory:': nothing to do)."""
    if not path or path == ":memory:" or path.startswith("file::memory:"):
        return
    key = (os.getpid(), os.path.abspath(path))
    with _lock:
        thread = _threads.get(key)
        if thread is None:
            thread = _threads[key] = Checkpointer(key[1])
            thread.engines.add(engine)
            thread.start()
        else:
            thread.engines.add(engine)


def forget(engine) -> None:
    """`engine` was disposed: its file needs no checkpoints from this process on its behalf
    (the thread ends once no other engine of the file is left; a disposed engine caught in a
    reference cycle would otherwise keep it running until a full collection)."""
    with _lock:
        for thread in _threads.values():
            thread.engines.discard(engine)


class Checkpointer(threading.Thread):
    """Checkpoints one database file every EVERY_SEC while one of `engines` is alive."""

    def __init__(self, path: str) -> None:
        super().__init__(name="sqlite-checkpoint", daemon=True)
        self.path = path
        self.engines: weakref.WeakSet = weakref.WeakSet()
        self.runs = self.truncations = 0  # checkpoints made (for tests and debugging)

    def run(self) -> None:
        conn: sqlite3.Connection | None = None
        pause, last = EVERY_SEC, None
        try:
            while self._wanted():
                time.sleep(pause)
                try:
                    if conn is None:  # mode=rw: never create a database that is gone
                        conn = sqlite3.connect(
                            f"file:{quote(self.path)}?mode=rw",
                            uri=True,
                            timeout=BUSY_SEC,
                            check_same_thread=False,
                            isolation_level=None,
                        )
                    frames = self.checkpoint(conn)
                    pause = next_pause(pause, frames != last)
                    last = frames
                except sqlite3.Error as exc:  # busy, or the file is gone: try again later
                    log.debug("checkpoint of %s skipped: %s", self.path, exc)
                    if conn is not None:
                        conn.close()
                        conn = None
        finally:
            if conn is not None:
                conn.close()

    def checkpoint(self, conn: sqlite3.Connection) -> tuple:
        """One checkpoint; returns the WAL's (frames, frames checkpointed) after it."""
        _busy, *frames = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.runs += 1
        try:
            size = os.path.getsize(self.path + "-wal")
        except OSError:
            return tuple(frames)
        if size > TRUNCATE_BYTES:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            self.truncations += 1
        return tuple(frames)

    def _wanted(self) -> bool:
        with _lock:
            if len(self.engines):
                return True
            _threads.pop((os.getpid(), self.path), None)
            return False


def next_pause(pause: float, written: bool) -> float:
    """The wait before the next checkpoint: EVERY_SEC after a write, else twice the last
    (at most IDLE_MAX_SEC)."""
    return EVERY_SEC if written else min(max(pause, EVERY_SEC) * 2, IDLE_MAX_SEC)

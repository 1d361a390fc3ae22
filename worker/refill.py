"""The run pool's refill on a thread of the pool process.

After a run, the pool process makes the directory the next run of that skill will take
(runner_core.run_pool). Done inside the task, it delayed the task's result, and so Celery's
hand-off of the next message (result to the main process, ack, next message down the pipe),
by the ~1 ms the refill takes. On a thread it overlaps that hand-off: batches alternated with
the code that refilled inline gave 1.02-1.07x the noop throughput (medians of 12-16 pairs,
bench.ab, bench/RESULTS.md). A run that starts before the refill is done makes its own
directory, as when the pool is empty; a refill cut short by the process's end leaves a
`.building-` folder the sweep removes.
"""
from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Refiller:
    """One daemon thread per process runs the submitted fills in order (a forked child starts
    its own: threads do not cross a fork)."""

    def __init__(self) -> None:
        self._pid: int | None = None
        self._queue: queue.SimpleQueue | None = None
        self._lock = threading.Lock()

    def submit(self, fill: Callable[[], object], what: str) -> None:
        """Run `fill()` on the thread; a failure is logged (the pool only saves time)."""
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():
                    self._queue = queue.SimpleQueue()
                    threading.Thread(target=self._loop, args=(self._queue,), name="run-pool",
                                     daemon=True).start()
                    self._pid = os.getpid()
        self._queue.put((fill, what))

    @staticmethod
    def _loop(jobs: queue.SimpleQueue) -> None:
        while True:
            fill, what = jobs.get()
            try:
                fill()
            except Exception:
                log.warning("run pool refill after %s failed", what, exc_info=True)

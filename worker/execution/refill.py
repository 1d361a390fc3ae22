"""The run pool's refill on a thread of the pool process.

After a run, the pool process makes the directory the next run of that skill will take
(runner_core.run_pool). On a thread, that work overlaps Celery's hand-off of the next message
instead of delaying the task's result. A run that starts before the refill is done makes its
own directory, as when the pool is empty; a refill cut short by the process's end leaves a
`.building-` folder the sweep removes.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from runner_core.per_process import PerProcess

log = logging.getLogger(__name__)


class Refiller:
    """One daemon thread per process runs the submitted fills in order (a forked child starts
    its own: threads do not cross a fork)."""

    def __init__(self) -> None:
        self._queue: PerProcess[queue.SimpleQueue] = PerProcess(self._start)

    def submit(self, fill: Callable[[], object], what: str) -> None:
        """Run `fill()` on the thread; a failure is logged (the pool only saves time)."""
        self._queue.get().put((fill, what))

    def _start(self) -> queue.SimpleQueue:
        jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, args=(jobs,), name="run-pool", daemon=True).start()
        return jobs

    @staticmethod
    def _loop(jobs: queue.SimpleQueue) -> None:
        while True:
            fill, what = jobs.get()
            try:
                fill()
            except Exception:
                log.warning("run pool refill after %s failed", what, exc_info=True)

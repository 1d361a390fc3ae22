"""The single process's own children (the embedded broker, the demo LLM), started and waited on
by one thread of their own.

A run's orphans are adopted by the process's main thread, which ends them after the run
(worker.execution.strays): the service's own children must not be among them, so neither is
started from the main thread. The thread sleeps until one of them exits: a broker that exited
is started again (it held only messages the sweep sends again from SQL), a demo LLM that
exited stops the service.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable

from launcher.demo_llm import DemoLLM
from launcher.embedded_broker import EmbeddedBroker

NO_PIDFD_POLL_SEC = 5.0  # where pidfds are missing: how often to look


class ServiceChildren:
    """Start, watch and stop the broker (None: an external one) and the demo LLM (or None)."""

    def __init__(self, broker: EmbeddedBroker | None, demo: DemoLLM | None) -> None:
        self.broker = broker
        self.demo = demo
        self._stopping = threading.Event()

    def start(self, on_lost: Callable[[str], None]) -> None:
        """Start both on the watching thread; raises what starting them raised."""
        started = threading.Event()
        failed: list[BaseException] = []

        def run() -> None:
            try:
                self._start_all()
            except BaseException as exc:
                failed.append(exc)
                return
            finally:
                started.set()
            self._watch(on_lost)

        threading.Thread(target=run, name="service-children", daemon=True).start()
        started.wait()
        if failed:
            self.stop()
            raise failed[0]

    def stop(self) -> None:
        self._stopping.set()
        if self.demo is not None and self.demo.proc is not None:
            self.demo.proc.kill()
            self.demo.proc.wait()
        if self.broker is not None:
            self.broker.stop()

    def _start_all(self) -> None:
        if self.demo is not None:
            self.demo.start()
        if self.broker is not None:
            self.broker.start()

    def _procs(self) -> list[subprocess.Popen]:
        parts = (self.broker, self.demo)
        return [p.proc for p in parts if p is not None and p.proc is not None]

    def _watch(self, on_lost: Callable[[str], None]) -> None:
        while not self._stopping.is_set():
            _wait_any(self._procs())
            if self._stopping.is_set():
                return
            if self.demo is not None and self.demo.proc and self.demo.proc.poll() is not None:
                on_lost(f"the demo LLM exited with code {self.demo.proc.returncode}")
                return
            broker = self.broker
            if broker is not None and broker.proc and broker.proc.poll() is not None:
                print("the embedded broker exited; restarting it", file=sys.stderr, flush=True)
                try:
                    broker.start()
                except RuntimeError as exc:
                    on_lost(str(exc))
                    return


def _wait_any(procs: list[subprocess.Popen]) -> None:
    """Sleep until one of `procs` exits (without reaping it)."""
    if not procs:
        threading.Event().wait()  # nothing to watch: the thread sleeps until the process ends
    fds = []
    try:
        for proc in procs:
            fds.append(os.pidfd_open(proc.pid))
    except (AttributeError, OSError):  # no pidfds: look now and then
        for fd in fds:
            os.close(fd)
        while all(p.poll() is None for p in procs):
            threading.Event().wait(NO_PIDFD_POLL_SEC)
        return
    try:
        select.select(fds, [], [])
    finally:
        for fd in fds:
            os.close(fd)

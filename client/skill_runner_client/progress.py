"""Batch progress on stderr: one line redrawn in place on a terminal, plain log lines (every
few seconds) otherwise."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, TextIO


class Progress:
    """Counts of a batch and their display; thread-safe."""

    def __init__(
        self, total: int, succeeded: int = 0, failed: int = 0, stream: TextIO | None = None
    ) -> None:
        self.total, self.succeeded, self.failed, self.running = total, succeeded, failed, 0
        self._resumed = succeeded + failed  # ended before this invocation: not in the rate
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self.tokens: dict[str, float] = {}  # this invocation's jobs' token_usage, added up

    def start(self) -> None:
        self._ticker.start()

    def submitted(self) -> None:
        with self._lock:
            self.running += 1

    def ended(
        self,
        ok: bool,
        key: str,
        was_running: bool = True,
        note: str = "",
        usage: Mapping[str, Any] | None = None,
    ) -> None:
        with self._lock:
            self.running -= 1 if was_running else 0
            for name, value in (usage or {}).items():
                if isinstance(value, (int, float)):
                    self.tokens[name] = self.tokens.get(name, 0) + value
            if ok:
                self.succeeded += 1
            else:
                self.failed += 1
        if not ok:
            self.log(f"failed: {key} {note}".rstrip())

    def log(self, text: str) -> None:
        """A line of its own (above the redrawn line on a terminal)."""
        with self._lock:
            prefix = "\r\033[K" if self.tty else ""
            self.stream.write(f"{prefix}{text}\n")
            self.stream.flush()

    def line(self) -> str:
        ended = self.succeeded + self.failed
        elapsed = max(time.monotonic() - self._started, 1e-6)
        rate = (ended - self._resumed) / elapsed
        left = self.total - ended
        eta = f"{left / rate:.0f}s" if rate > 0 else "-"
        return (
            f"{ended}/{self.total} done: {self.succeeded} succeeded, {self.failed} failed, "
            f"{self.running} running | {rate:.1f}/s | ETA {eta}{self._spent()}"
        )

    def _spent(self) -> str:
        """' | 41,227 tokens in, 53 out, $0.1611' once a job reported any."""
        if not self.tokens:
            return ""
        spent = (
            f" | {self.tokens.get('input_tokens', 0):,.0f} tokens in, "
            f"{self.tokens.get('output_tokens', 0):,.0f} out"
        )
        if "cost_usd" in self.tokens:
            spent += f", ${self.tokens['cost_usd']:.4f}"
        return spent

    def finish(self) -> None:
        self._stop.set()
        if self._ticker.is_alive():
            self._ticker.join()
        self.log(self.line())

    def _tick(self) -> None:
        interval = 0.5 if self.tty else 5.0
        while not self._stop.wait(interval):
            if self.tty:
                with self._lock:
                    self.stream.write("\r\033[K" + self.line())
                    self.stream.flush()
            else:
                self.log(self.line())

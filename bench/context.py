"""What every figure gets: counts (full or --quick), a scratch directory, a logger."""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP end a bench as Ctrl-C does: on the way out each figure stops the
    services it started (a signal's default action would leave them running)."""

    def stop(signum: int, _frame: object) -> None:
        for other in (signal.SIGTERM, signal.SIGHUP):  # once: a second must not cut the cleanup
            signal.signal(other, signal.SIG_IGN)
        print(f"bench: {signal.Signals(signum).name}: stopping its services", file=sys.stderr)
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)


@dataclass
class Context:
    """Shared state of one bench invocation."""

    quick: bool
    root: Path
    started: float = field(default_factory=time.monotonic)

    def count(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def scratch(self, name: str) -> Path:
        """A fresh directory for one figure (removed by `cleanup`)."""
        path = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.root))
        return path

    def cleanup(self, path: Path) -> None:
        """Remove a figure's scratch directory: at the end of the bench when it is under the
        bench's root (the command removes the root last), now when it is elsewhere (tmpfs).

        Why not at once: on ext4 without a journal a new file's inode is looked for past every
        inode freed in the last minutes, so a removal slows the next figure's service
        (bench/RESULTS.md, "What moves the numbers")."""
        if path.is_relative_to(self.root):
            return
        shutil.rmtree(path, ignore_errors=True)

    def log(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"  [{elapsed:7.1f}s] {message}", file=sys.stderr, flush=True)

"""What every figure gets: counts (full or --quick), a scratch directory, a logger."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


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

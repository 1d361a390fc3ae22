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

        Why not at once: on this machine's disk (ext4 without a journal) a new file's inode is
        looked for past every inode freed in the last minutes (the kernel's `recently_deleted`
        check), and the next figure's service lands in the block groups a removal just freed.
        Removing a service's ~55,000 files made the next service's pool processes spend ~1.5x
        the CPU per noop run in its first batches (bench/RESULTS.md, "Why the machine's phase
        moves figure 4")."""
        if path.is_relative_to(self.root):
            return
        shutil.rmtree(path, ignore_errors=True)

    def log(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"  [{elapsed:7.1f}s] {message}", file=sys.stderr, flush=True)

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
        shutil.rmtree(path, ignore_errors=True)

    def log(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"  [{elapsed:7.1f}s] {message}", file=sys.stderr, flush=True)

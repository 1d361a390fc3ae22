"""Per-skill file locks shared by the API processes (installs) and the workers (snapshots).

`flock(2)` locks belong to the open file description, so they exclude each other across
processes and across threads of one process alike, and the kernel drops them when a holder dies.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def locks_dir(data_dir: Path) -> Path:
    """Where the service keeps its lock files."""
    return data_dir / "locks"


def lock_path(locks_dir: Path, skill_id: str) -> Path:
    """The lock file of one skill id."""
    return locks_dir / "skills" / f"{skill_id}.lock"


@contextmanager
def skill_lock(locks_dir: Path, skill_id: str, *, shared: bool = False) -> Iterator[None]:
    """Hold the skill's lock: exclusive to install or update it, shared to copy it."""
    path = lock_path(locks_dir, skill_id)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except FileNotFoundError:  # the first lock of a new data dir
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock

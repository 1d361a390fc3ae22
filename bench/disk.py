"""What creating a file costs right now, in a given folder: the disk's phase, printed beside the
figures that create files (noop-throughput).

On a file system that walks recently freed inodes before it hands out a new one (ext4 without a
journal), creating a file is cheap in a calm moment and far dearer for minutes
after many files were removed nearby (bench/RESULTS.md, "What moves the numbers"). The
probe's files are left in place: removing them would slow the creations that follow.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import psutil


def creation_cost(parent: Path, n: int = 1000) -> float:
    """CPU seconds per file to create `n` one-byte files in a new folder under `parent`."""
    folder = tempfile.mkdtemp(prefix="disk-probe-", dir=parent)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    started = time.process_time()
    for i in range(n):
        fd = os.open(os.path.join(folder, f"f{i}"), flags, 0o644)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)
    return (time.process_time() - started) / n


def tmpfs_dir() -> Path | None:
    """/dev/shm when it is a tmpfs (Linux), else None."""
    for part in psutil.disk_partitions(all=True):
        if part.mountpoint == "/dev/shm" and part.fstype == "tmpfs":
            return Path(part.mountpoint)
    return None

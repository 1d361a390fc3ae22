"""Take back the run directory's runner-owned paths after a run's process ends.

A skill or agent may write anywhere in its run directory, symlinks included. The worker writes
its records (result/, raw/, logs/, bundle/, manifest.json, events.jsonl) by name afterwards and
must never follow a link the run planted there: that would write (or read) outside the run.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

log = logging.getLogger(__name__)

RUNNER_DIRS = ("result", "raw", "logs", "bundle")
# files the runner writes after the run's processes: a folder a run made there is removed
RUNNER_RECORDS = ("result/result.json", "result/output.json", "result/validation.json")
RUNNER_FILES = (
    "manifest.json",
    "events.jsonl",
    "input.json",
    "resolved_input.json",
    "input_manifest.json",
)


def reclaim(run_dir: Path) -> list[str]:
    """Remove every symlink in the runner's folders and at its records' names (their `.tmp`
    too), a folder made at a record's name, and put a real folder back where one of its
    folders was replaced. Returns the run-relative paths removed."""
    removed: list[str] = []
    for name in RUNNER_FILES:
        for candidate in (name, name + ".tmp"):
            if _drop_link(run_dir / candidate):
                removed.append(candidate)
    for name in RUNNER_DIRS:
        folder = run_dir / name
        if folder.is_symlink() or (os.path.lexists(folder) and not folder.is_dir()):
            _remove(folder)
            folder.mkdir()
            removed.append(name)
            continue
        for root, dirs, files in os.walk(folder):  # never enters a linked folder
            for entry in (*dirs, *files):
                path = Path(root) / entry
                if _drop_link(path):
                    removed.append(path.relative_to(run_dir).as_posix())
    for name in (*RUNNER_RECORDS, *RUNNER_FILES):
        if (run_dir / name).is_dir() and not (run_dir / name).is_symlink():
            shutil.rmtree(run_dir / name, ignore_errors=True)
            removed.append(name)
    if removed:
        log.warning("run %s: removed links planted at runner paths: %s", run_dir.name, removed)
    return removed


def _drop_link(path: Path) -> bool:
    if not path.is_symlink():
        return False
    path.unlink(missing_ok=True)
    return True


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)

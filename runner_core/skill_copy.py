"""An in-memory copy of a small skill's files, written out as a run's skill snapshot.

Copying a file opens the source, creates the target and copies the metadata: several system
calls per file, for every run. A skill version's files never change, so a worker process reads
them once (checked against the skill's tree signature before and after the read) and then only
creates the snapshot's folders and files. Skills over `MAX_BYTES`, or with symbolic links,
are copied from disk as before.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from runner_core.skills.memo import IGNORED, tree_signature

MAX_BYTES = 1 << 20  # a skill larger than this is copied from disk each time
_MAX_ENTRIES = 64
_lock = threading.Lock()
_cache: dict[tuple[str, tuple], SkillCopy] = {}


@dataclass(frozen=True)
class SkillCopy:
    """Folders (relative, parents first) and files (relative path, mode, bytes) of a skill."""

    dirs: tuple[str, ...]
    files: tuple[tuple[str, int, bytes], ...]

    def write(self, dest: Path) -> Path:
        """Create `dest` (its parent must exist) holding the copy; returns `dest`."""
        root = str(dest)
        os.mkdir(root)
        for rel in self.dirs:
            os.mkdir(os.path.join(root, rel))
        for rel, mode, data in self.files:
            fd = os.open(os.path.join(root, rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        return dest


def read_copy(source: Path, max_bytes: int = MAX_BYTES) -> SkillCopy | None:
    """The skill's files in memory; None when it holds a symlink or more than `max_bytes`."""
    dirs: list[str] = []
    files: list[tuple[str, int, bytes]] = []
    total = 0
    stack = [(str(source), "")]
    while stack:
        path, rel = stack.pop()
        with os.scandir(path) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name in IGNORED:
                    continue
                child = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_symlink():
                    return None
                if entry.is_dir():
                    dirs.append(child)
                    stack.append((entry.path, child))
                    continue
                st = entry.stat()
                total += st.st_size
                if total > max_bytes:
                    return None
                with open(entry.path, "rb") as fh:
                    files.append((child, st.st_mode & 0o7777, fh.read()))
    dirs.sort(key=lambda d: d.count("/"))
    return SkillCopy(tuple(dirs), tuple(files))


def cached_copy(source: Path, signature: tuple) -> SkillCopy | None:
    """The in-memory copy of `source` as of `signature` (read on first use); None when the
    skill is not cacheable or no longer has that signature."""
    key = (str(source), signature)
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    if tree_signature(source) != signature:
        return None
    try:
        copy = read_copy(source, MAX_BYTES)
    except OSError:
        return None
    if copy is None or tree_signature(source) != signature:  # changed while being read
        return None
    with _lock:
        for old in [k for k in _cache if k[0] == key[0]]:  # older versions of the same skill
            del _cache[old]
        if len(_cache) >= _MAX_ENTRIES:
            _cache.pop(next(iter(_cache)))
        _cache[key] = copy
    return copy

"""Run directories made ahead of time, so a run's start creates no files and folders.

Making a run directory means creating tens of files and folders (the run directory's sub-folders,
the skill snapshot, the git marker of engine runs), and creating an inode is the slowest file
operation on many disks, slower than writing the bytes. After a run ends, the worker builds
the directory the next run of the same skill version will need under `<data>/run-pool/<key>/`;
the next run's claim moves one into place with a single rename.

A key names what a directory holds: the skill id, the snapshot's folder and whether it has the
git marker (the "kind"), and a digest of the skill's file signature. A directory is only ever
taken for the signature it was built from, so a changed or reinstalled skill is never served
from the pool; directories of older signatures are removed when the pool is refilled.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from runner_core.skills.memo import signature_digest

log = logging.getLogger(__name__)

BUILDING = ".building-"  # prefix of directories still being built (never taken)
STALE_BUILD_SEC = 600.0  # a build this old was cut short (its process died): removed
IDLE_KEY_SEC = 86400.0  # a key unused this long (skill removed or no longer run): removed


def pool_key(skill_id: str, kind: str, signature: tuple) -> str:
    """`<skill_id>.<kind digest>.<signature digest>`: one folder of the pool."""
    kind_digest = hashlib.sha1(kind.encode()).hexdigest()[:8]
    return f"{skill_id}.{kind_digest}.{signature_digest(signature)}"


class RunDirPool:
    """Ready run directories per key under `root`; `size` of them at most per key."""

    def __init__(self, root: Path, size: int) -> None:
        self.root, self.size = Path(root), size

    def take(self, key: str, dest: Path) -> bool:
        """Move a ready directory of `key` to `dest` (which must not exist, or be empty);
        False when none is ready or the move is not possible."""
        if self.size <= 0:
            return False
        folder = self.root / key
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return False
        dest.parent.mkdir(parents=True, exist_ok=True)
        for name in names:
            if name.startswith(BUILDING):
                continue
            try:
                os.rename(folder / name, dest)
                return True
            except FileNotFoundError:
                continue  # another worker process took it first
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EXDEV):
                    log.warning("run pool: cannot move %s to %s: %s", name, dest, exc)
                return False
        return False

    def ready(self, key: str) -> int:
        """How many directories of `key` are ready."""
        try:
            return sum(not n.startswith(BUILDING) for n in os.listdir(self.root / key))
        except FileNotFoundError:
            return 0

    def fill(self, key: str, build: Callable[[Path], bool]) -> int:
        """Build directories of `key` until `size` are ready; returns how many were made.
        `build(path)` creates the directory at `path` and returns False when what it copied
        changed meanwhile (that directory is thrown away)."""
        if self.size <= 0:
            return 0
        folder = self.root / key
        try:
            folder.mkdir(parents=True)
            self.prune_siblings(key)  # a new signature: the older ones are not taken again
        except FileExistsError:
            pass
        made = 0
        for _ in range(self.size - self.ready(key)):
            name = uuid.uuid4().hex
            tmp = folder / f"{BUILDING}{name}"
            try:
                if not build(tmp):
                    shutil.rmtree(tmp, ignore_errors=True)
                    break
                os.rename(tmp, folder / name)
                made += 1
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return made

    def prune_siblings(self, key: str) -> None:
        """Remove the directories of the same skill and kind built from another signature."""
        prefix = key.rsplit(".", 1)[0] + "."
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return
        for name in names:
            if name.startswith(prefix) and name != key:
                shutil.rmtree(self.root / name, ignore_errors=True)

    def prune_idle(self, max_age_sec: float) -> int:
        """Remove the folders of keys nobody took from or filled for `max_age_sec` (a folder's
        mtime moves with every take and fill): skills that were removed or are no longer run;
        and in the others, builds cut short (their process died) more than STALE_BUILD_SEC ago."""
        removed = remove_older(self.root, time.time() - max_age_sec, lambda _name: True)
        try:
            keys = [e.path for e in os.scandir(self.root) if e.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            return removed
        for folder in keys:
            remove_older(
                Path(folder), time.time() - STALE_BUILD_SEC, lambda name: name.startswith(BUILDING)
            )
        return removed


def remove_older(folder: Path, cutoff: float, match: Callable[[str], bool]) -> int:
    """Remove the sub-folders of `folder` whose name matches and whose mtime is before `cutoff`."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return 0
    for entry in entries:
        try:
            if (
                match(entry.name)
                and entry.is_dir(follow_symlinks=False)
                and entry.stat().st_mtime < cutoff
            ):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed += 1
        except FileNotFoundError:
            continue
    return removed

"""Run snapshots linked from the service's own read-only copy of each skill version.

A run gets a complete copy of its skill, so editing or reinstalling the skill under
skills/ never reaches a run in flight. Creating a file is the slowest file operation on many
disks (far dearer than a new name for an existing file), and a skill
has from a few to hundreds of files. So the worker copies each skill version once into
`<data>/skill-copies/<skill_id>.<signature digest>/` (the "master"), makes its files read-only,
and gives each run its own folders holding hard links to the master's files.

What keeps a run's snapshot independent:
- the master is the service's copy, never the files under skills/ (which users may edit);
- its files are read-only, so a skill that writes into its own files fails instead of changing
  them for other runs (a skill that replaces a file, or writes new ones, only touches its run);
- before linking, each master file's size and mtime are checked against what was copied; a
  master that was written to anyway is discarded and rebuilt.
SKILL_RUNNER_SNAPSHOT=copy copies every file for every run instead.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner_core.run_pool import BUILDING, STALE_BUILD_SEC, remove_older
from runner_core.skills.memo import signature_digest, tree_signature

log = logging.getLogger(__name__)

INDEX = "index.json"
FILES = "files"


class MasterChanged(Exception):
    """A master file no longer holds what was copied (it was written to)."""


@dataclass(frozen=True)
class Master:
    """A skill version's copy: folders (relative, parents first) and files (relative, size,
    mtime_ns as copied)."""

    root: Path
    dirs: tuple[str, ...]
    files: tuple[tuple[str, int, int], ...]

    def link_into(self, dest: Path) -> Path:
        """Create `dest` (its parents as needed) with the master's folders and links to its
        files; raises MasterChanged or OSError (dest is then removed)."""
        files_root = str(self.root / FILES)
        target = str(dest)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.mkdir(target)
        try:
            for rel in self.dirs:
                os.mkdir(os.path.join(target, rel))
            for rel, size, mtime_ns in self.files:
                source = os.path.join(files_root, rel)
                st = os.stat(source)
                if st.st_size != size or st.st_mtime_ns != mtime_ns:
                    raise MasterChanged(source)
                os.link(source, os.path.join(target, rel))
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        return dest


class SkillCopies:
    """The masters under `root`, shared by every worker process of one data dir."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._known: dict[str, Master] = {}  # this process's view: name -> master

    def snapshot(self, source: Path, skill_id: str, signature: tuple, dest: Path) -> bool:
        """Make `dest` a snapshot of `source` as of `signature`, linked from its master.
        False when no master can serve it (the skill changed since `signature`, links are not
        possible here): the caller copies the files instead."""
        for _attempt in range(2):
            master = self._master(source, skill_id, signature)
            if master is None:
                return False
            try:
                master.link_into(dest)
                return True
            except MasterChanged:
                log.warning("skill copy %s was modified; rebuilding it", master.root)
                self._discard(master)
            except OSError as exc:
                if exc.errno == errno.ENOENT:  # removed meanwhile (a newer version, the sweep)
                    self._forget(master)
                elif exc.errno == errno.EMLINK:  # a file reached the link limit: a fresh copy
                    self._discard(master)
                else:  # EXDEV, EPERM...: links are not possible here
                    log.warning("cannot link the snapshot from %s: %s", master.root, exc)
                    return False
        return False

    def _master(self, source: Path, skill_id: str, signature: tuple) -> Master | None:
        name = f"{skill_id}.{signature_digest(signature)}"
        with self._lock:
            known = self._known.get(name)
        if known is not None:
            return known
        master = _load(self.root / name)
        if master is None:
            master = self._build(source, skill_id, signature, name)
        if master is not None:
            with self._lock:
                self._known[name] = master
        return master

    def _build(self, source: Path, skill_id: str, signature: tuple, name: str) -> Master | None:
        if tree_signature(source) != signature:
            return None
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f"{BUILDING}{uuid.uuid4().hex}"
        try:
            shutil.copytree(
                source, tmp / FILES, symlinks=False, ignore=shutil.ignore_patterns("__pycache__")
            )
            master = _index(tmp)
            if tree_signature(source) != signature:  # edited while being copied
                shutil.rmtree(tmp, ignore_errors=True)
                return None
            (tmp / INDEX).write_text(json.dumps({"dirs": master.dirs, "files": master.files}))
            try:
                os.rename(tmp, self.root / name)
            except OSError:  # another process made it first: use theirs
                shutil.rmtree(tmp, ignore_errors=True)
                return _load(self.root / name)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self._prune_versions(skill_id, keep=name)
        return _load(self.root / name)

    def _forget(self, master: Master) -> None:
        with self._lock:
            self._known.pop(master.root.name, None)

    def _discard(self, master: Master) -> None:
        """Drop a master (runs linked to it keep their files: a link is a name, not a copy)."""
        self._forget(master)
        trash = master.root.with_name(f"{BUILDING}{uuid.uuid4().hex}")
        try:
            os.rename(master.root, trash)
        except OSError:
            return  # already gone
        shutil.rmtree(trash, ignore_errors=True)

    def _prune_versions(self, skill_id: str, keep: str) -> None:
        """Remove the masters of the skill's other versions (a run still linking from one
        falls back to copying)."""
        for entry in _entries(self.root):
            if entry.name != keep and entry.name.rsplit(".", 1)[0] == skill_id:
                self._discard(Master(Path(entry.path), (), ()))

    def prune(self, current: Mapping[str, tuple | None]) -> int:
        """The sweep: keep only the masters of the installed skills' current versions
        (`current`: skill id -> signature, None when not installed) and builds still going."""
        removed = remove_older(
            self.root, time.time() - STALE_BUILD_SEC, lambda name: name.startswith(BUILDING)
        )
        for entry in _entries(self.root):
            if entry.name.startswith(BUILDING):
                continue
            skill_id, _, digest = entry.name.rpartition(".")
            signature = current.get(skill_id)
            if signature is None or signature_digest(signature) != digest:
                self._discard(Master(Path(entry.path), (), ()))
                removed += 1
        return removed


def installed_signatures(skills_dir: Path) -> dict[str, tuple]:
    """skill id -> tree signature of every skill installed under `skills_dir`."""
    out = {}
    for entry in _entries(skills_dir):
        if not entry.name.startswith((".", "_")):
            out[entry.name] = tree_signature(Path(entry.path))
    return out


def _index(root: Path) -> Master:
    """Make the copied files read-only and list them with what they hold."""
    files_root = root / FILES
    dirs, files = [], []
    for dirpath, dirnames, filenames in os.walk(files_root):
        rel_dir = os.path.relpath(dirpath, files_root)
        for name in sorted(dirnames):
            dirs.append(name if rel_dir == "." else f"{rel_dir}/{name}")
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            st = os.stat(path)
            os.chmod(path, st.st_mode & ~0o222)
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            files.append((rel, st.st_size, st.st_mtime_ns))
    dirs.sort(key=lambda d: d.count("/"))
    return Master(root, tuple(dirs), tuple(files))


def _load(root: Path) -> Master | None:
    try:
        data = json.loads((root / INDEX).read_text())
    except (OSError, ValueError):
        return None
    return Master(root, tuple(data["dirs"]), tuple(tuple(f) for f in data["files"]))


def _entries(root: Path) -> list[os.DirEntry]:
    try:
        return [e for e in os.scandir(root) if e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []

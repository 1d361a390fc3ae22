"""Loaded skills memoized by a signature of their file tree.

Loading validates SKILL.md, runner.json and three JSON Schemas; doing that on every request
and again in the worker would dominate a cache hit. A skill is reloaded as soon as any
file under it changes (mtime, size or inode), and an atomic install swap changes inodes.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path

from runner_core.bounded_cache import BoundedCache
from runner_core.skills.loader import load_skill
from runner_core.skills.model import SkillPackage

IGNORED = frozenset({"__pycache__", ".git"})
# (root, strict) -> (signature, package)
_memo: BoundedCache[tuple[str, bool], tuple[tuple, SkillPackage]] = BoundedCache(512)


def tree_signature(root: Path) -> tuple:
    """(relative path, inode, size, mtime_ns) of every file below `root`, and each folder's inode."""
    items: list[tuple[str, int | None, int | None, int | None]] = []
    stack = [(str(root), "")]
    while stack:
        path, rel = stack.pop()
        try:
            # A directory's own mtime moves when a cache file appears; its entries say enough.
            items.append((rel, os.stat(path).st_ino, None, None))
            with os.scandir(path) as it:
                for entry in it:
                    if entry.name in IGNORED:
                        continue
                    child = f"{rel}/{entry.name}" if rel else entry.name
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, child))
                    else:
                        est = entry.stat(follow_symlinks=True)
                        items.append((child, est.st_ino, est.st_size, est.st_mtime_ns))
        except (FileNotFoundError, NotADirectoryError):
            items.append((rel, None, None, None))
    return tuple(sorted(items))


def signature_digest(signature: tuple) -> str:
    """A short stable name for a tree signature (folder names of the run pool and skill copies)."""
    return hashlib.sha1(repr(signature).encode()).hexdigest()[:16]


def load_skill_cached(root: Path, *, strict: bool = False) -> SkillPackage:
    """`load_skill(root)`, reused while the skill's files are unchanged."""
    return load_skill_signed(root, strict=strict)[0]


def load_skill_signed(root: Path, *, strict: bool = False) -> tuple[SkillPackage, tuple]:
    """`load_skill_cached(root)` and the tree signature it was checked against."""
    key = (os.path.abspath(root), strict)  # no resolve(): it stats every path component
    signature = tree_signature(root)
    hit = _memo.get(key)
    if hit and hit[0] == signature:
        return hit[1], signature
    pkg = load_skill(root, strict=strict)
    _memo.put(key, (signature, pkg))
    return pkg, signature


def memo_signature(pkg: SkillPackage) -> tuple | None:
    """The signature `pkg` was memoized under, when it is the memo's current object for its
    root (what `load_skill_cached` just handed out); else None."""
    hit = _memo.get((os.path.abspath(pkg.root), False))
    return hit[0] if hit and hit[1] is pkg else None


def relocated(pkg: SkillPackage, root: Path) -> SkillPackage:
    """The same validated package, read from a verbatim copy at `root` (a run's snapshot)."""
    return replace(pkg, root=root)

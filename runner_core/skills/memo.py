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


# A resumed turn reloads its run's snapshot: each run's folders and patched SKILL.md are its
# own, so the path-keyed memo above never hits; this one is keyed by what the files are.
_snapshots: BoundedCache[tuple, SkillPackage] = BoundedCache(64)


def snapshot_signature(root: Path, patch_marker: str) -> tuple:
    """tree_signature without the folders' inodes, and SKILL.md by its text before
    `patch_marker` (what the runner appended names the run): two runs' snapshots of one skill
    version (files linked from the same read-only copy) match."""
    items: list[tuple] = []
    for rel, ino, size, mtime in tree_signature(root):
        if size is None:  # a folder, or a missing path
            items.append((rel, ino is not None))
        elif rel == "SKILL.md":
            own = (root / rel).read_bytes().split(patch_marker.encode(), 1)[0]
            items.append((rel, hashlib.sha1(own).hexdigest()))
        else:
            items.append((rel, ino, size, mtime))
    return tuple(items)


def load_snapshot_cached(root: Path, patch_marker: str) -> SkillPackage:
    """`load_skill(root)` of a run's snapshot whose SKILL.md the runner patched after
    `patch_marker`, validated once for every snapshot with the same files (a copied snapshot
    has inodes of its own: it is loaded afresh). The body is the skill's own, without the patch."""
    signature = snapshot_signature(root, patch_marker)
    hit = _snapshots.get(signature)
    if hit is None:
        hit = load_skill(root)
        hit = replace(hit, body=hit.body.split(patch_marker, 1)[0].rstrip())
        _snapshots.put(signature, hit)
    return relocated(hit, root)

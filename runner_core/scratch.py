"""A run that works in a worker's local scratch (`SKILL_RUNNER_WORK_DIR`) rather than in the
shared `runs/`: agent CLIs make thousands of small file operations, which a network file
system makes slow.

While the run goes, its logs/ and events.jsonl are written to the shared run directory
directly (the API serves them live); every other file stays local until the turn ends. Then
`publish` copies the local directory to `.publishing/` inside the shared one and renames each
top-level entry into place, result/ last; a file the shared directory already holds unchanged
(same size and modification time: the uploads, an earlier turn's files) is hard-linked, not
copied again. The worker records the run's status only after that, so the API never serves
half a result. A later turn of an interactive run starts with `pull`, on any worker.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from runner_core.events import EVENTS_FILE
from runner_core.in_run import run_folder, run_folder_if_there
from runner_core.own_copy import own_copy, remove_entry
from runner_core.workspace import RunPaths, create_run_dir, disk_full

STAGING = ".publishing"  # the copy being published (hidden from the run's file tree)
REPLACED = ".replaced"  # shared folders a publish replaced, removed at its end
SHARED_ONLY = frozenset({"logs", EVENTS_FILE, STAGING, REPLACED})  # never copied either way


def enter(shared: Path, local: Path, uploads: Path, resume: bool) -> None:
    """Before a turn: the shared run directory exists (for logs and events), the request's
    uploads are linked into it (so `publish` links rather than copies them), and `local` is
    fresh (a leftover of an earlier attempt on this host is removed) or, for a later turn, a
    copy of the shared directory."""
    _link_uploads(uploads, create_run_dir(shared.parent, shared.name))
    remove(local)
    if resume:
        local.parent.mkdir(parents=True, exist_ok=True)
        _copy_tree(shared, local)


def publish(local: Path, shared: Path) -> None:
    """Move the turn's files from `local` into `shared` (see the module doc), then remove
    `local`; nothing to do when `local` is gone (already published)."""
    if not local.is_dir():
        return
    staging, replaced = shared / STAGING, shared / REPLACED
    create_run_dir(shared.parent, shared.name)  # there already, unless the turn failed early
    remove(staging)  # a publish cut short before
    remove(replaced)
    try:
        _copy_tree(local, staging, link_from=shared)
    except BaseException:  # a full disk: no half copy is left in the shared directory
        remove_quietly(staging)
        raise
    for name in sorted(os.listdir(staging), key=lambda n: n == "result"):  # result/ last
        source, target = staging / name, shared / name
        if (target.is_dir() and not target.is_symlink()) or (
            source.is_dir() and os.path.lexists(target)
        ):
            replaced.mkdir(exist_ok=True)
            os.rename(target, replaced / name)
        os.replace(source, target)
        if os.path.lexists(source):  # a hard link to the very file: the rename did nothing
            os.unlink(source)
    os.rmdir(staging)
    remove(replaced)
    remove(local)


def _link_uploads(source: Path, paths: RunPaths) -> None:
    """Hard-link the request's uploads into the shared run directory (copies where links are
    not possible). Links are safe here and only here: no process of the run works in the
    shared directory (its files are the local copy's, made by copy_uploads), and every later
    reader copies (`pull`, a run reusing the workspace) or only reads (bundles)."""
    if not source.is_dir():
        return
    for folder, _dirs, files in os.walk(source):
        rel = os.path.relpath(folder, source)
        # an earlier turn's publish may have put a link of the run's at any of these folders
        dfd = run_folder(paths.root, "uploads" if rel == "." else f"uploads/{rel}")
        try:
            for name in files:
                _link_upload(os.path.join(folder, name), name, dfd)
        finally:
            os.close(dfd)


def _link_upload(item: str, name: str, dfd: int) -> None:
    """Hard-link (else copy) the upload `item` as `name` in the folder `dfd`, unless a file
    is there (a link there is replaced, never written through)."""
    try:
        if stat.S_ISREG(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
            return
        remove_entry(name, dir_fd=dfd)
    except FileNotFoundError:
        pass
    try:
        os.link(item, name, dst_dir_fd=dfd, follow_symlinks=False)
    except OSError:
        own_copy(item, name, dir_fd=dfd)


def remove(path: Path) -> None:
    """Remove a directory tree (or a file) if it is there."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def remove_quietly(path: Path) -> None:
    """`remove`, for cleanups that must not fail what they clean up after."""
    try:
        remove(path)
    except OSError:
        pass


def _copy_tree(source: Path, dest: Path, link_from: Path | None = None) -> None:
    """Copy `source` to the new folder `dest` but the SHARED_ONLY entries at its top, keeping
    symlinks and times; a file `link_from` holds unchanged at the same place (same size and
    modification time) is hard-linked from there. Errors are raised as they come (a full
    disk stays an ENOSPC OSError, not shutil.Error's list)."""
    top = os.fspath(source)
    for folder, dirs, files in os.walk(top):
        rel = os.path.relpath(folder, top)
        if folder == top:
            dirs[:] = [d for d in dirs if d not in SHARED_ONLY]
            files = [f for f in files if f not in SHARED_ONLY]
        here = os.path.normpath(os.path.join(dest, rel))
        os.mkdir(here)
        # the same folder of `link_from`, reached through no link a run left there
        same = _folder_if_there(link_from, rel) if link_from else None
        try:
            for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
                src, dst = os.path.join(folder, name), os.path.join(here, name)
                if os.path.islink(src):
                    os.symlink(os.readlink(src), dst)
                elif not (same is not None and _link_same(src, same, name, dst)):
                    shutil.copy2(src, dst)
        finally:
            if same is not None:
                os.close(same)
        shutil.copystat(folder, here)


def _folder_if_there(root: Path, rel: str) -> int | None:
    try:
        return run_folder_if_there(root, "" if rel == "." else rel)
    except OSError:
        return None


def _link_same(src: str, dfd: int, name: str, dst: str) -> bool:
    """Hard-link the file `name` of the folder `dfd` at `dst` when it is a regular file (no
    link) of `src`'s size and time."""
    try:
        have, new = os.stat(name, dir_fd=dfd, follow_symlinks=False), os.stat(src)
        if stat.S_ISREG(have.st_mode) and (have.st_size, have.st_mtime_ns) == (
            new.st_size,
            new.st_mtime_ns,
        ):
            os.link(name, dst, src_dir_fd=dfd, follow_symlinks=False)
            return True
    except OSError as exc:  # not there, or no hard links here: copied
        if disk_full(exc):
            raise
    return False

"""The run directory: uploads/ artifacts/ result/ logs/ bundle/ raw/, input.json,
and a snapshot copy of the skill so edits to skills/ never reach a run in flight."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeGuard

from runner_core.in_run import open_at, open_in_run, run_folder, write_at, write_in_run
from runner_core.own_copy import own_copy, remove_entry

RUN_SUBDIRS = ("uploads", "artifacts", "result", "logs", "bundle", "raw")
SNAPSHOT_DIR = ".skill"


def disk_full(exc: BaseException) -> TypeGuard[OSError]:
    """Is `exc` the disk (or the user's quota) running out of space?"""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


@dataclass(frozen=True)
class RunPaths:
    """Absolute paths inside one run directory; `shared`: the run's directory in the shared
    runs/ when it works in local scratch (runner_core.scratch), where its logs are written."""

    root: Path
    shared: Path | None = None

    def __getattr__(self, name: str) -> Path:
        if name in RUN_SUBDIRS:
            return self.root / name
        raise AttributeError(name)

    @property
    def logs(self) -> Path:
        return (self.shared or self.root) / "logs"

    @property
    def input_json(self) -> Path:
        return self.root / "input.json"

    @property
    def resolved_input(self) -> Path:
        return self.root / "resolved_input.json"

    @property
    def result_file(self) -> Path:
        return self.root / "result" / "result.json"

    def skill_dir(self, skill_id: str) -> Path:
        return self.root / SNAPSHOT_DIR / skill_id


def create_run_dir(runs_dir: Path, run_id: str) -> RunPaths:
    """Create the run directory and its sub-folders (idempotent; one mkdir each when new)."""
    paths = RunPaths(runs_dir / run_id)
    root = str(paths.root)
    try:
        os.mkdir(root)
    except FileExistsError:  # an earlier attempt's: a link its run left at a folder is removed
        for sub in RUN_SUBDIRS:
            os.close(run_folder(root, sub))
        return paths
    except FileNotFoundError:
        os.makedirs(root, exist_ok=True)
    for sub in RUN_SUBDIRS:
        os.mkdir(os.path.join(root, sub))
    return paths


def snapshot_skill(
    source: Path, paths: RunPaths, skill_id: str, rel_dir: str = SNAPSHOT_DIR
) -> Path:
    """Copy the skill into the run under `rel_dir` (an engine run puts it in the folder its
    CLI discovers skills in, so that copy is the snapshot); returns the copy's root."""
    dest = paths.root / rel_dir / skill_id
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source, dest, symlinks=False, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def find_snapshot(run_dir: Path, skill_id: str, rel_dirs: tuple[str, ...] = ()) -> Path | None:
    """The run's snapshot of its skill: in one of `rel_dirs` (an engine's skill folders) or in
    `.skill`; None when the run never got one."""
    for rel in (*rel_dirs, SNAPSHOT_DIR):
        path = Path(run_dir) / rel / skill_id
        if (path / "SKILL.md").is_file() or (path / "skill.json").is_file():
            return path
    return None


def install_skill_copy(snapshot: Path, paths: RunPaths, rel_dirs: tuple[str, ...]) -> list[Path]:
    """Copy the snapshot to each folder an engine CLI discovers skills in (e.g. .gemini/skills)."""
    copies = []
    for rel in rel_dirs:
        dest = paths.root / rel / snapshot.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists():
            shutil.copytree(snapshot, dest)
        copies.append(dest)
    return copies


def copy_uploads(sources: Iterable[Path], paths: RunPaths) -> None:
    """Give the run its own copy (runner_core.own_copy) of each file under `sources` (the
    request's uploads/, then the files bound from an earlier run) at its place in the run's
    uploads/; the first source to hold a path wins. Never a hard link: a skill that writes its
    input in place changes the run's copy, not the stored one. What an earlier attempt of the
    run left at those places is replaced, so a retry starts from the files as sent. Symlinks
    in a source are not followed."""
    placed: set[str] = set()  # files copied, by their path under uploads/
    folders: set[str] = set()
    _own_dir(paths.uploads)
    for source in sources:
        for folder, dirs, files in os.walk(source):
            rel = os.path.relpath(folder, source)
            if rel != ".":
                _own_dir(paths.uploads / rel)
                folders.add(rel)
            dirs[:] = [
                d
                for d in dirs
                if not os.path.islink(os.path.join(folder, d))
                and os.path.normpath(os.path.join(rel, d)) not in placed
            ]
            for name in files:
                item = os.path.normpath(os.path.join(rel, name))
                if item in placed or item in folders or os.path.islink(os.path.join(folder, name)):
                    continue
                own_copy(os.path.join(folder, name), paths.uploads / item)
                placed.add(item)


def _own_dir(path: Path) -> None:
    """`path` as a folder of the run's own (its parent is one): a symlink or file left there
    is removed first. One lstat when the folder is there (every run's uploads/)."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            return
        remove_entry(path)
    except FileNotFoundError:
        pass
    os.mkdir(path)


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (tmp + rename) so readers never see half a file."""
    write_file(path, json_bytes(data))


def write_json_in(run_dir: Path | str, rel: str, data: Any) -> None:
    """write_json of the file `rel` below `run_dir`, through no link the run planted on the
    way (runner_core.in_run)."""
    write_in_run(run_dir, rel, json_bytes(data))


def json_bytes(data: Any) -> bytes:
    """`data` as the indented UTF-8 JSON the runner writes."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=str).encode("utf-8")


def open_own(name: str | Path, flags: int, mode: int = 0o666) -> int:
    """os.open that never follows a symlink at `name`: a link a run planted where the runner
    writes (pointing out of the run), a FIFO or a folder is removed and the file made anew in
    its place (with O_CREAT). Its folder is trusted: see runner_core.in_run for the rest."""
    return open_at(None, os.fspath(name), flags, mode)


def own_folder(path: Path) -> Path:
    """`path` as a real folder: a symlink (or file) a run left in its place is removed first, so
    what the runner writes there lands in the run, not where the link points."""
    os.close(run_folder(path.parent, path.name))
    return path


def open_run_file(run_dir: Path | str, rel: str) -> BinaryIO | None:
    """The regular file `rel` ("logs/stdout.txt") of a run, opened for reading, or None when it
    is missing, no regular file (a FIFO would hold the reader for ever), or reached through a
    symlink at any of its parts: the run's directory is writable from inside its box, and a
    link planted there would have the service read any file it can (its keys, other runs)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    *folders, name = rel.split("/")
    try:
        fd = os.open(run_dir, flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for folder in folders:
            inner = os.open(folder, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        leaf = os.open(name, flags | os.O_NONBLOCK, dir_fd=fd)
    except OSError:  # ELOOP: a symlink; ENOTDIR, ENOENT
        return None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(leaf).st_mode):
        os.close(leaf)
        return None
    return os.fdopen(leaf, "rb")


def read_log(path: Path, last: int | None = None) -> str:
    """A run's log as text (its `last` bytes), never through a link the run left in its place
    ("" then, as for no file)."""
    fh = open_run_file(path.parent, path.name)
    if fh is None:
        return ""
    with fh:
        if last is not None:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - last))
        return fh.read().decode("utf-8", errors="replace")


def append_log(path: Path) -> BinaryIO:
    """`path` opened to append to, made in the run: a link (or folder link) the run left in
    its place is removed first, never written through."""
    rel = f"{path.parent.name}/{path.name}"  # logs/<name>: no link followed below the run
    fd = open_in_run(path.parent.parent, rel, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    return os.fdopen(fd, "ab")


def write_file(path: Path | str, data: bytes, *, atomic: bool = True) -> None:
    """Write `data` to `path` (its folder trusted); `atomic`: through `<path>.tmp` and a
    rename. runner_core.in_run.write_at with no folder fd."""
    write_at(None, os.fspath(path), data, atomic=atomic)


# A minimal git repository marker. CLIs that walk up from the run dir looking for skills,
# AGENTS.md or config (codex, opencode, claude) stop at a git root, so nothing above the run
# dir leaks in. git needs no more than HEAD and the `objects/` and `refs/` folders to take a
# folder for a repository (commits work in it too): four inodes, where `git init` spawns a
# process and makes ~20. GIT_MARKER is the same marker as files, for a CommandSpec.
GIT_HEAD = "ref: refs/heads/main\n"
GIT_MARKER = {".git/HEAD": GIT_HEAD, ".git/objects/.keep": "", ".git/refs/.keep": ""}


def write_git_marker(run_dir: Path) -> None:
    """Make `run_dir` a git root (idempotent): `.git/` with HEAD and empty objects/ and refs/."""
    git = os.path.join(run_dir, ".git")
    try:
        os.mkdir(git)
    except FileExistsError:
        return
    os.mkdir(os.path.join(git, "objects"))
    os.mkdir(os.path.join(git, "refs"))
    write_file(os.path.join(git, "HEAD"), GIT_HEAD.encode(), atomic=False)

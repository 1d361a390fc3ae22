"""Write below a run directory without following a link the run planted there.

A run's directory is writable by its processes (from inside the box too): any folder or file
in it may have become a symlink out of the run, a FIFO, or a folder where a file goes. The
worker walks each path from the run directory one folder at a time (O_NOFOLLOW, dir_fd), so no
link is followed on the way down; a link or non-folder where a folder goes, and a link, FIFO or
folder where a file goes, is removed and made anew in the run. The run directory itself and
the path above it are the service's and trusted.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import suppress
from pathlib import Path

from runner_core.own_copy import remove_entry

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO in the way must not hold the worker in open() until a reader comes
_FILE = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_IN_THE_WAY = (errno.ELOOP, errno.ENOTDIR)  # a symlink (O_NOFOLLOW), a file or FIFO


def run_folder(run_dir: Path | str, rel: str) -> int:
    """An fd of the folder `rel` ("result/x") below `run_dir`, made as needed; close it."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts:
        return os.open(run_dir, _DIR)
    # the first folder by its full path: the run directory above it is trusted (one open)
    fd = _own_folder(os.path.join(run_dir, parts[0]), parts[0], None)
    try:
        for part in parts[1:]:
            inner = _own_folder(part, part, fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_in_run(run_dir: Path | str, rel: str, flags: int, mode: int = 0o666) -> int:
    """os.open of the file `rel` below `run_dir`, through no link; with O_CREAT, a link,
    FIFO or folder left at its name is removed and a new file made in its place."""
    folder, _, name = rel.rpartition("/")
    dfd = run_folder(run_dir, folder)
    try:
        return open_at(dfd, name, flags, mode)
    finally:
        os.close(dfd)


def open_at(dfd: int | None, name: str, flags: int, mode: int = 0o666) -> int:
    """`open_in_run` for a `name` in the folder `dfd` (run_folder); with `dfd` None, `name`
    is a path whose folder is trusted."""
    try:
        fd = os.open(name, flags | _FILE, mode, dir_fd=dfd)
    except OSError as exc:  # ELOOP: a symlink; ENXIO: a FIFO no one reads; EISDIR: a folder
        if not flags & os.O_CREAT or exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise
        _remove_at(dfd, name)
        return os.open(name, flags | _FILE | os.O_EXCL, mode, dir_fd=dfd)
    if stat.S_ISREG(os.fstat(fd).st_mode) or not flags & os.O_CREAT:
        return fd
    os.close(fd)  # a FIFO with a reader, a device: not the file the worker means to write
    _remove_at(dfd, name)
    return os.open(name, flags | _FILE | os.O_EXCL, mode, dir_fd=dfd)


def write_in_run(run_dir: Path | str, rel: str, data: bytes, *, atomic: bool = True) -> None:
    """Write `data` to the file `rel` below `run_dir` (through `<name>.tmp` and a rename when
    `atomic`), never through a link the run left on the way."""
    folder, _, name = rel.rpartition("/")
    dfd = run_folder(run_dir, folder)
    try:
        write_at(dfd, name, data, atomic=atomic)
    finally:
        os.close(dfd)


def write_at(dfd: int | None, name: str, data: bytes, *, atomic: bool = True) -> None:
    """`write_in_run` for a `name` in the folder `dfd` (several files, one walk); with `dfd`
    None, `name` is a path whose folder is trusted. Plain os calls: a text-mode open costs
    three more system calls (fstat, isatty, lseek) per file."""
    tmp = name + ".tmp" if atomic else name
    fd = open_at(dfd, tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        if atomic:
            try:
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except IsADirectoryError:  # a folder the run made at the file's name
                _remove_at(dfd, name)
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        if atomic:  # a full disk must not leave half a file behind
            with suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
        raise


def remove_in_run(run_dir: Path | str, rel: str) -> None:
    """Remove `rel` below `run_dir` (a file, a link itself, a folder and what it holds), if
    it is there; nothing when a folder on the way is a link (what it leads to is no run's)."""
    folder, _, name = rel.rpartition("/")
    try:
        dfd = run_folder_if_there(run_dir, folder)
    except OSError:
        return
    try:
        _remove_at(dfd, name)
    finally:
        os.close(dfd)


def run_folder_if_there(run_dir: Path | str, rel: str) -> int:
    """An fd of the folder `rel` below `run_dir` when it is there as a real folder all the way
    down (OSError otherwise: ELOOP, ENOTDIR, ENOENT); nothing is made or removed."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    # the first folder by its full path (O_NOFOLLOW is about its last part): one open
    fd = os.open(os.path.join(run_dir, parts[0]) if parts else run_dir, _DIR)
    try:
        for part in parts[1:]:
            inner = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _own_folder(path: str, name: str, dfd: int | None) -> int:
    """Open the folder `name` (`path` when `dfd` is None) as a real folder: made when missing,
    a link or file in its place removed first."""
    for _attempt in range(3):  # another writer may make or remove it meanwhile
        try:
            return os.open(path if dfd is None else name, _DIR, dir_fd=dfd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno not in _IN_THE_WAY:
                raise
            if dfd is None:
                remove_entry(path)
            else:
                _remove_at(dfd, name)
        with suppress(FileExistsError):
            if dfd is None:  # the run directory itself (trusted) is made when missing
                os.makedirs(path)
            else:
                os.mkdir(name, dir_fd=dfd)
    return os.open(path if dfd is None else name, _DIR, dir_fd=dfd)


def _remove_at(dfd: int | None, name: str) -> None:
    """Remove `name` in the folder `dfd`: a file or link itself, or a folder (its contents
    removed without following any link)."""
    remove_entry(name, dir_fd=dfd)

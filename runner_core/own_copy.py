"""A run's own copy of a file it takes in (an upload, a bound file, an earlier run's workspace
file): never a hard link, so a process that writes the file in place (open "r+", an append)
changes the run's copy only, never the request's stored upload or the earlier run's artifact.

The copy costs as little as the file system allows: a reflink (FICLONE: the blocks are shared
copy-on-write, as on btrfs, XFS, bcachefs, ZFS) where it can, else a copy inside the kernel
(copy_file_range, which NFS 4.2 and CIFS do on the server, then sendfile); the data never
passes through this process."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
from contextlib import suppress
from pathlib import Path

FICLONE = 0x40049409  # _IOW(0x94, 9, int), linux/fs.h
_CHUNK = 1 << 30
# The file systems' ways of saying "not this way here": the next way is tried.
_NOT_HERE = frozenset(
    {errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EPERM}
)


def own_copy(source: Path | str, target: Path | str, *, dir_fd: int | None = None) -> None:
    """Make `target` a new file holding what `source` holds, with its mode and times (so a
    scratch run's publish still sees the upload unchanged). Whatever was at `target` (a file,
    a hard link of another file, a symlink a process planted) is removed first, never written
    through. `source` must be a regular file (a symlink is refused with ELOOP, anything else
    with EINVAL). `dir_fd`: `target` names a file in that folder."""
    remove_entry(target, dir_fd=dir_fd)
    # O_NONBLOCK: a FIFO at `source` must not hang the open (it is refused just below)
    src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(src)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(source))
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        dst = os.open(target, flags, 0o600, dir_fd=dir_fd)
        try:
            _copy_data(src, dst)
            os.fchmod(dst, stat.S_IMODE(st.st_mode))
            os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
        except BaseException:
            os.close(dst)
            with suppress(OSError):  # a full disk must not leave half a file behind
                os.unlink(target, dir_fd=dir_fd)
            raise
        os.close(dst)
    finally:
        os.close(src)


def remove_entry(path: Path | str, *, dir_fd: int | None = None) -> None:
    """Remove what is at `path` (a file, a symlink, a folder), if anything; no link is
    followed (a folder's contents are removed through fds). `dir_fd`: `path` is in it."""
    try:
        os.unlink(path, dir_fd=dir_fd)
    except FileNotFoundError:
        return
    except (IsADirectoryError, PermissionError):  # EISDIR on Linux, EPERM elsewhere
        if not stat.S_ISDIR(os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise
        shutil.rmtree(path, dir_fd=dir_fd)


def _copy_data(src: int, dst: int) -> None:
    try:
        fcntl.ioctl(dst, FICLONE, src)
        return
    except OSError as exc:
        if exc.errno not in _NOT_HERE:
            raise
    try:
        while os.copy_file_range(src, dst, _CHUNK):
            pass
        return
    except OSError as exc:
        if exc.errno not in _NOT_HERE:
            raise
    os.lseek(src, 0, os.SEEK_SET)  # sendfile from the start, whatever was copied before
    os.lseek(dst, 0, os.SEEK_SET)
    os.ftruncate(dst, 0)
    while os.sendfile(dst, src, None, _CHUNK):
        pass

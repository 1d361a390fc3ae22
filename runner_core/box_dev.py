"""A /dev made once per data directory for the boxes of script steps.

bwrap's `--dev` builds a fresh /dev for every box: a tmpfs, a bind mount per device (each one
reading the mount table again), devpts. A script step gets instead one bind of a folder made
here once, holding the same devices and links, and a private tmpfs over its `shm`. The folder
belongs to the overflow uid with mode 0555, so a box (root without capabilities) can neither
write to it nor change its mode. Making device files needs root; without, or where the data
directory's file system forbids devices, boxes keep bwrap's own /dev (`--dev`).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import stat
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

OWNER = 65534  # the overflow uid (nobody), whom no box runs as
DEVICES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8), "urandom": (1, 9)}
DEVICES["tty"] = (5, 0)
LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
    "core": "/proc/kcore",
}
FOLDERS = ("shm",)  # a box mounts its own tmpfs here


def options(dev: Path | None) -> list[str]:
    """bwrap's options for a box's /dev: the prepared folder, else (none made, or removed
    since) bwrap's own."""
    if dev is None or not os.path.isdir(dev):
        return ["--dev", "/dev"]
    return ["--dev-bind", str(dev), "/dev", "--perms", "1777", "--tmpfs", "/dev/shm"]


@functools.cache
def prepared_dev(data_dir: Path, bwrap: str) -> Path | None:
    """`<data_dir>/box/dev`, made if missing and checked once per process with `bwrap`; None
    where it cannot be made or a box cannot use it."""
    if os.geteuid() != 0:
        return None
    folder = Path(data_dir) / "box" / "dev"
    try:
        if not _complete(folder):
            _make(folder)
    except OSError as exc:
        log.warning("sandbox: no prepared /dev (%s); boxes build their own", exc)
        return None
    return folder if _usable(folder, bwrap) else None


def _complete(folder: Path) -> bool:
    """`folder` holds every device and link, sealed (an interrupted make leaves it unsealed)."""
    try:
        info = folder.lstat()
    except FileNotFoundError:
        return False
    if info.st_uid != OWNER or stat.S_IMODE(info.st_mode) != 0o555:
        return False
    try:
        for name, (major, minor) in DEVICES.items():
            node = (folder / name).lstat()
            if not stat.S_ISCHR(node.st_mode) or node.st_rdev != os.makedev(major, minor):
                return False
        return all(os.readlink(folder / name) == target for name, target in LINKS.items())
    except OSError:  # an entry missing: made again
        return False


def _make(folder: Path) -> None:
    """Build the folder beside its place, seal it, then rename it into place."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = folder.with_name(f"dev.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    for name, (major, minor) in DEVICES.items():
        os.mknod(staging / name, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        os.chmod(staging / name, 0o666)  # mknod's mode passes through the umask
    for name, target in LINKS.items():
        os.symlink(target, staging / name)
    for name in FOLDERS:
        (staging / name).mkdir(mode=0o555)
    for entry in staging.iterdir():
        os.lchown(entry, OWNER, OWNER)
    os.chown(staging, OWNER, OWNER)
    os.chmod(staging, 0o555)
    if folder.exists():  # an unsealed leftover, or one a concurrent worker just made
        if _complete(folder):
            _unseal_and_remove(staging)
            return
        _unseal_and_remove(folder)
    try:
        os.rename(staging, folder)
    except OSError:
        _unseal_and_remove(staging)
        if not _complete(folder):
            raise


def _unseal_and_remove(folder: Path) -> None:
    try:
        os.chmod(folder, 0o755)
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


def _usable(folder: Path, bwrap: str) -> bool:
    """A box on `folder` can write to /dev/null and read /dev/urandom (a file system mounted
    nodev would refuse both)."""
    probe = [bwrap, "--die-with-parent", "--unshare-pid", "--cap-drop", "ALL"]
    probe += ["--ro-bind", "/", "/", *options(folder), "--proc", "/proc", "--"]
    probe += ["sh", "-c", "echo x > /dev/null && head -c 1 /dev/urandom > /dev/null"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("sandbox: prepared /dev not checked (%s); boxes build their own", exc)
        return False
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip()
        log.warning("sandbox: prepared /dev not usable (%s); boxes build their own", why)
        return False
    return True

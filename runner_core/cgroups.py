"""A process-count limit per run process, as a cgroup v1 `pids` group.

RLIMIT_NPROC counts every process of a uid and does not bind root at all, so a fork bomb in
one run of a worker running as root would reach the whole machine. A pids group counts only
the processes (and threads) started inside it, whatever their uid. Each boxed command gets its
own group under the worker's own one (`<worker's pids cgroup>/skill-runner/<name>`), joins it
before it execs (see runner_core.sandbox), and the group is emptied and removed when the
command ends. Where no writable pids hierarchy is mounted (cgroup v2 only, a container without
it), `pids_root()` is None and the process limit falls back to RLIMIT_NPROC.
"""

from __future__ import annotations

import functools
import os
import signal
import time
import uuid
from pathlib import Path

PARENT = "skill-runner"
KILL_ROUNDS = 50  # a fork bomb refills its group while it is emptied: kill until it stays empty


@functools.cache
def pids_root() -> Path | None:
    """This process's pids cgroup folder when it can hold groups of ours, else None."""
    mount = _pids_mount()
    if mount is None:
        return None
    own = _own_group("pids")
    if own is None:
        return None
    root = mount / own.lstrip("/") / PARENT
    try:
        root.mkdir(exist_ok=True)
        probe = root / f"probe-{os.getpid()}"
        probe.mkdir()
        probe.rmdir()
    except OSError:
        return None
    return root


class PidsGroup:
    """One command's pids group: `procs` is the file a process writes its pid to, to join."""

    def __init__(self, root: Path, max_pids: int) -> None:
        self.path = root / f"run-{uuid.uuid4().hex[:16]}"
        self.path.mkdir()
        (self.path / "pids.max").write_text(str(max_pids))
        self.max_pids = max_pids

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def hit_limit(self) -> bool:
        """True once a fork or clone in the group was refused for the limit."""
        try:
            for line in (self.path / "pids.events").read_text().splitlines():
                name, _, count = line.partition(" ")
                if name == "max" and int(count) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def members(self) -> list[int]:
        try:
            return [int(p) for p in self.procs.read_text().split()]
        except (OSError, ValueError):
            return []

    def empty(self) -> None:
        """SIGKILL whatever is left in the group (also processes that left the process group)
        and wait until it is empty."""
        for _ in range(KILL_ROUNDS):
            members = self.members()
            if not members:
                break
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def close(self) -> None:
        """Empty the group, then remove it."""
        self.empty()
        for _ in range(KILL_ROUNDS):  # rmdir is refused until the killed ones are gone
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)


def _pids_mount() -> Path | None:
    """Where the cgroup v1 hierarchy holding the pids controller is mounted."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if len(extra) >= 3 and extra[0] == "cgroup" and "pids" in extra[2].split(","):
            return Path(fields[4])
    return None


def _own_group(controller: str) -> str | None:
    """This process's group in `controller`'s hierarchy, from /proc/self/cgroup."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None

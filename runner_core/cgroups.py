"""A process-count limit per run process, as a cgroup v1 `pids` group.

RLIMIT_NPROC counts every process of a uid and does not bind root at all, so a fork bomb in
one run of a worker running as root would reach the whole machine. A pids group counts only
the processes (and threads) started inside it, whatever their uid. Each worker process has a
group of its own under the worker's own one (`<worker's pids cgroup>/skill-runner/worker-<pid>`),
made once and reused by its commands one after the other (`command_group`): a boxed command
joins it before it starts (see runner_core.sandbox), and what is left in it is killed when the
command ends. A process that runs its commands one at a time (a prefork pool process) moves
itself into its group once (`hold_own_group`), so that its commands are born there: joining a
group is a write to `cgroup.procs` that waits for an RCU grace period (about 10 ms) unless
another join happened within the last few milliseconds, and a run would pay it on every
command. In a pool of threads (`hold_per_thread`), each thread that runs commands moves itself
(cgroup v1 moves a thread alone) into a group of its own at its first command. Where no
writable pids hierarchy is mounted (cgroup v2 only, a container without it), `pids_root()` is
None and the process limit falls back to RLIMIT_NPROC.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

PARENT = "skill-runner"
# threads a process holding its own group may start during a command (an egress proxy's
# connections), beyond those it has when the command begins: they count in the group too
THREAD_HEADROOM = 16
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

    def __init__(self, root: Path, max_pids: int, name: str = "") -> None:
        self.path = root / (name or f"run-{uuid.uuid4().hex[:16]}")
        self.path.mkdir(exist_ok=bool(name))
        self.reused = bool(name)
        self.busy = False
        self.holds_self = False  # this process is a member (hold_own_group)
        self.max_pids = 0
        self._refused_before = self._refused()
        self.limit(max_pids)

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def limit(self, max_pids: int) -> None:
        if self.holds_self:  # this process's own threads count here as well
            max_pids += _own_threads() + THREAD_HEADROOM
        if max_pids != self.max_pids:
            (self.path / "pids.max").write_text(str(max_pids))
            self.max_pids = max_pids

    def hold_self(self, thread: bool = False) -> None:
        """Move this process (`thread`: only the calling thread) into the group: what it
        starts is born there (no join)."""
        target = self.path / "tasks" if thread else self.procs
        who = threading.get_native_id() if thread else os.getpid()
        fd = os.open(target, os.O_WRONLY)
        try:
            os.write(fd, str(who).encode())
        finally:
            os.close(fd)
        self.holds_self = True

    def begin(self, max_pids: int) -> None:
        """Ready for the next command: empty (the last one's box may still be exiting), its
        limit set, refused forks counted from here."""
        self.path.mkdir(exist_ok=True)
        self.empty()
        self.limit(max_pids)
        self._refused_before = self._refused()

    def hit_limit(self) -> bool:
        """True once a fork or clone in the group was refused for the limit (this command)."""
        return self._refused() > self._refused_before

    def _refused(self) -> int:
        try:
            for line in (self.path / "pids.events").read_text().splitlines():
                name, _, count = line.partition(" ")
                if name == "max":
                    return int(count)
        except (OSError, ValueError):
            pass
        return 0

    def members(self) -> list[int]:
        """The processes in the group, but never this process."""
        try:
            pids = [int(p) for p in self.procs.read_text().split()]
        except (OSError, ValueError):
            return []
        return [pid for pid in pids if pid != os.getpid()]

    def kill_members(self) -> None:
        """SIGKILL what is in the group now, without waiting for it to go."""
        for pid in self.members():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def empty(self) -> None:
        """SIGKILL whatever is left in the group (also processes that left the process group)
        and wait until it is empty."""
        for delay in _backoff():
            if not self.members():
                return
            self.kill_members()
            time.sleep(delay)

    def close(self) -> None:
        """Empty the group, then remove it."""
        self.empty()
        for delay in _backoff():  # rmdir is refused until the killed ones are gone
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(delay)


_own: dict[tuple[int, Path], PidsGroup] = {}  # (os.getpid(), root) -> its reused group
_own_lock = threading.Lock()
_per_thread = False  # hold_per_thread() was called in this process
_thread_own = threading.local()  # .groups: root -> the calling thread's reused group


def hold_per_thread() -> None:
    """For a pool of threads running one command each at a time: every thread moves into a
    group of its own at its first command, and its commands are born there."""
    global _per_thread
    _per_thread = True


def hold_own_group(root: Path, max_pids: int) -> PidsGroup:
    """Move this process into its own group (for a process that runs one command at a time:
    another command at the same time would be born in the group too). Raises OSError."""
    with _own_lock:
        group = _worker_group(root, max_pids)
        if not group.holds_self:
            group.hold_self()
            group.limit(max_pids)
        return group


def command_group(root: Path, max_pids: int) -> PidsGroup:
    """The pids group for one command: this process's own (made once, then reused: no group
    made and removed per command), or a group of its own while another thread's command holds
    that one. Give it back with `end_command_group`."""
    if _per_thread:
        group = _thread_group(root, max_pids)
    else:
        with _own_lock:
            group = _worker_group(root, max_pids)
            if group.busy:
                group = PidsGroup(root, max_pids)
            group.busy = True
    if group.reused:
        group.begin(max_pids)
    return group


def _worker_group(root: Path, max_pids: int) -> PidsGroup:
    key = (os.getpid(), root)
    group = _own.get(key)
    if group is None:
        _remove_dead_workers_groups(root)
        group = _own[key] = PidsGroup(root, max_pids, f"worker-{os.getpid()}")
    return group


def _thread_group(root: Path, max_pids: int) -> PidsGroup:
    """The calling thread's own group, which it moved into at its first command (a
    thread-local: a new thread that got an old one's id never takes its group)."""
    groups = _thread_own.__dict__.setdefault("groups", {})
    group = groups.get(root)
    if group is None:
        with _own_lock:
            _remove_dead_workers_groups(root)
        name = f"worker-{os.getpid()}-t{threading.get_native_id()}"
        group = groups[root] = PidsGroup(root, max_pids, name)
        try:
            group.hold_self(thread=True)
        except OSError:  # its commands join as they start, as in a process that holds none
            pass
    group.busy = True
    return group


def _own_threads() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return threading.active_count()


def end_command_group(group: PidsGroup, wait: bool) -> None:
    """Kill what the command left in its group; with `wait`, until it is gone. A bwrap box
    needs no wait: its pid namespace ends with its first process, which ends the rest, and the
    next command's `begin` waits should any be left."""
    if wait or not group.reused:
        group.empty()
    else:
        group.kill_members()
    if not group.reused:
        group.close()
    group.busy = False


def _remove_dead_workers_groups(root: Path) -> None:
    """Groups of worker processes that ended (rmdir fails for a group still holding one)."""
    for path in root.glob("worker-*"):
        match = re.fullmatch(r"worker-(\d+)(?:-t(\d+))?", path.name)
        if match is None or _alive(int(match.group(1)), match.group(2)):
            continue
        try:
            path.rmdir()
        except OSError:
            pass


def _alive(pid: int, thread: str | None = None) -> bool:
    """Process `pid` (and its thread `thread`, when given) still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return thread is None or os.path.exists(f"/proc/{pid}/task/{thread}")


def _backoff() -> Iterator[float]:
    """Waits between tries: most groups empty within a millisecond of their command's exit (a
    box's init still exiting), a fork bomb takes rounds."""
    for attempt in range(KILL_ROUNDS):
        yield min(0.0005 * 2**attempt, 0.02)


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

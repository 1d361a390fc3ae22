"""Spawn a command in its own process group, stream its output to files, and end it cleanly.

Cancel, timeout, SIGTERM from Flower and Celery's soft time limit all end in `terminate_group`,
so no engine CLI or grandchild outlives its run (revoke(terminate=True) alone leaves orphans).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from runner_core.box_gate import BoxGate
from runner_core.cgroups import PidsGroup, command_group, end_command_group, pids_root
from runner_core.egress import EgressPlan, EgressProxy
from runner_core.engines.base import CommandSpec, ProcessResult
from runner_core.in_run import write_in_run
from runner_core.netns import NAMESPACES, entered
from runner_core.processes import terminate_group
from runner_core.run_guard import reclaim
from runner_core.sandbox import Box, box_command, limit_process, out_of_memory
from runner_core.secret_values import mask_file
from runner_core.workspace import append_log, open_run_file
from worker.execution.strays import command_started, end_strays

POLL_SEC = 0.05
WATCH_EVERY_SEC = 0.5
FIRST_WATCH_SEC = 0.1


@dataclass
class Watch:
    """How a process is watched: deadline (monotonic) and a poll returning True to cancel."""

    deadline: float | None = None
    poll: Callable[[int], bool] | None = None
    grace_sec: float = 3.0
    max_output_bytes: int = 0  # stdout + stderr beyond this: the group is killed (0: no limit)
    box: Box | None = None  # the run's sandbox and resource limits (None: none)
    # True once the run reached its budget: the tokens the process reported so far (its
    # output from the given stdout and stderr offsets) and earlier turns'
    over_budget: Callable[[ProcessResult], bool] | None = None
    # where a bwrap-boxed process may connect (runner_core.egress); None: as `box.network` says
    egress: EgressPlan | None = None
    # the run directory: once the process ended, links it planted at runner paths are removed
    run_dir: Path | None = None
    # the variables the run's request gives each of its processes (runner_core.run_env); the
    # service's own for the process win (the API refuses those names anyway)
    env: Mapping[str, str] = field(default_factory=dict)


def run_command(
    spec: CommandSpec, stdout_path: Path, stderr_path: Path, watch: Watch | None = None
) -> ProcessResult:
    """Run `spec` to completion (or until canceled/timed out); the group never outlives this."""
    watch = watch or Watch()
    if watch.env:
        spec = replace(spec, env={**watch.env, **spec.env})
    for rel, content in spec.files.items():
        if os.path.isabs(rel):
            Path(rel).parent.mkdir(parents=True, exist_ok=True)
            Path(rel).write_text(content, encoding="utf-8")
        else:  # an engine home's config: never through a link an earlier turn left there
            write_in_run(spec.cwd, rel, content.encode("utf-8"), atomic=False)
    group = _pids_group(watch.box)
    gate = BoxGate() if watch.box is not None and watch.box.bwrap is not None else None
    proxy = EgressProxy(watch.egress) if gate is not None and watch.egress is not None else None
    with contextlib.ExitStack() as held:  # ends in reverse: proxy, gate, group, namespace
        box = watch.box
        cuts = gate is not None and box is not None and (proxy is not None or not box.network)
        netns = held.enter_context(NAMESPACES.lease()) if cuts else None
        if group is not None:  # a bwrap box's pid namespace ends what it started
            held.callback(lambda: end_command_group(group, wait=gate is None or group.hit_limit()))
        if gate is not None:
            held.callback(gate.close)
        if box is not None:
            box = replace(box, netns=netns is not None)
            if proxy is not None:  # its own loopback, and the proxy as the one way out
                held.enter_context(proxy)
                box = replace(
                    box,
                    network=False,
                    egress_socket=proxy.socket_path,
                    direct_ports=tuple(proxy.plan.direct_ports()),
                )
            procs, in_group = _pids_join(group)
            spec = box_command(spec, box, procs, gate, in_group=in_group)
        result = _run(spec, stdout_path, stderr_path, watch, group, gate, netns)
    if watch.run_dir is not None:  # the group has ended: nothing of it plants links any more
        reclaim(watch.run_dir)
    if _ran_out_of_memory(result, watch.box):
        result = replace(result, limit_exceeded="memory")
    return result


def _run(
    spec: CommandSpec,
    stdout_path: Path,
    stderr_path: Path,
    watch: Watch,
    group: PidsGroup | None,
    gate: BoxGate | None = None,
    netns: int | None = None,
) -> ProcessResult:
    stdin = subprocess.PIPE if spec.stdin is not None else subprocess.DEVNULL
    started = time.time()
    with append_log(stdout_path) as out, append_log(stderr_path) as err:
        offsets = (out.tell(), err.tell())  # earlier turns' output stays before these
        try:
            with entered(netns) if netns is not None else contextlib.nullcontext():
                proc = subprocess.Popen(
                    spec.argv,
                    cwd=spec.cwd,
                    env=spec.env,
                    stdin=stdin,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                    pass_fds=gate.child_fds if gate is not None else (),
                )
            started = time.time()  # Popen returns once the command is exec'd: it has started
        except OSError as exc:
            err.write(f"cannot start {spec.argv[0]}: {exc}\n".encode())
            return ProcessResult(
                127,
                stdout_path,
                stderr_path,
                started,
                time.time(),
                stdout_from=offsets[0],
                stderr_from=offsets[1],
                cwd=spec.cwd,
            )
        box_pid = None
        if gate is not None:
            box_pid = _open_gate(proc, gate, watch.box, group, err)
        result = _watch(
            proc, spec, watch, stdout_path, stderr_path, started, group, box_pid, offsets
        )
    for path, start in ((stdout_path, offsets[0]), (stderr_path, offsets[1])):
        mask_file(path, start)  # a secret the process printed (an agent's `env`) stays out
    return replace(result, stdout_from=offsets[0], stderr_from=offsets[1], cwd=spec.cwd)


def _open_gate(
    proc: subprocess.Popen, gate: BoxGate, box: Box | None, group: PidsGroup | None, err: IO[bytes]
) -> int | None:
    """Put the box's first process under the run's limits, then let it start the command;
    returns its pid (None when bwrap ended first). The box is killed if this fails."""
    assert box is not None  # a gate is made for a box only
    try:
        pid = gate.box_pid()
        if pid is not None:
            procs, in_group = _pids_join(group)
            limit_process(pid, box.limits, procs, in_group=in_group)
            gate.open()
        return pid
    except OSError as exc:  # the box never starts its command unlimited
        err.write(f"cannot put the box under its limits: {exc}\n".encode())
        _kill_group(proc.pid)
        return None
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _watch(
    proc: subprocess.Popen,
    spec: CommandSpec,
    watch: Watch,
    stdout_path: Path,
    stderr_path: Path,
    started: float,
    group: PidsGroup | None = None,
    box_pid: int | None = None,
    offsets: tuple[int, int] = (0, 0),
) -> ProcessResult:
    pgid = proc.pid
    timed_out = canceled = exceeded = spent = False
    limited = None
    pidfd = _pidfd(proc.pid)
    command_started()
    try:
        if spec.stdin is not None:
            _feed_stdin(proc, spec.stdin)
        # The claim just set the heartbeat: a process done within FIRST_WATCH_SEC costs no
        # extra database round trip; longer ones record their pgid right after.
        next_watch = time.monotonic() + FIRST_WATCH_SEC
        if (
            watch.poll is None
            and not watch.max_output_bytes
            and group is None
            and watch.over_budget is None
        ):
            next_watch = float("inf")
        while proc.poll() is None:
            now = time.monotonic()
            if watch.deadline is not None and now >= watch.deadline:
                timed_out = True
                break
            if now >= next_watch:
                next_watch = now + WATCH_EVERY_SEC
                limit = watch.max_output_bytes
                if limit and _written(stdout_path, stderr_path) > limit:
                    exceeded = True
                    break
                if group is not None and group.hit_limit():  # a fork bomb, or close to one
                    limited = "processes"
                    break
                if watch.poll is not None and watch.poll(pgid):
                    canceled = True
                    break
                if watch.over_budget is not None and watch.over_budget(
                    _so_far(spec, stdout_path, stderr_path, started, offsets)
                ):
                    spent = True
                    break
            wait_exit(proc, pidfd, min(next_watch, watch.deadline or next_watch) - now)
    finally:
        if pidfd is not None:
            os.close(pidfd)
        # Runs on normal exit, cancel, timeout and on exceptions raised into this frame
        # (SIGTERM handler, SoftTimeLimitExceeded): the leader and every descendant go.
        terminate_group(pgid, 0 if proc.poll() is not None else watch.grace_sec, proc)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if group is not None and box_pid is None:
            group.empty()
        # bwrap's init in the box can still be exiting (its namespaces go with it): not a
        # stray; a later command's check collects it
        end_strays(watch.grace_sec, spared=() if box_pid is None else (box_pid,))
    if limited is None and group is not None and proc.returncode != 0 and group.hit_limit():
        limited = "processes"  # a refused fork it did not survive, before the watch looked
    code = None if (timed_out or canceled or exceeded or limited or spent) else proc.returncode
    return ProcessResult(
        code,
        stdout_path,
        stderr_path,
        started,
        time.time(),
        timed_out=timed_out,
        canceled=canceled,
        output_exceeded=exceeded,
        limit_exceeded=limited,
        budget_exceeded=spent,
    )


def _so_far(
    spec: CommandSpec, stdout: Path, stderr: Path, started: float, offsets: tuple[int, int]
) -> ProcessResult:
    """The running process's output so far, read as a process cut short (an adapter then
    counts the tokens of the answers it finished, from its output or its session log)."""
    return ProcessResult(
        None,
        stdout,
        stderr,
        started,
        time.time(),
        canceled=True,
        stdout_from=offsets[0],
        stderr_from=offsets[1],
        cwd=spec.cwd,
    )


def _pids_group(box: Box | None) -> PidsGroup | None:
    """A pids group for one boxed command, when the box limits processes and cgroups allow."""
    if box is None or not box.limits.processes:
        return None
    root = pids_root()
    return command_group(root, box.limits.processes) if root is not None else None


def _pids_join(group: PidsGroup | None) -> tuple[Path | None, bool]:
    """The group's cgroup.procs, and whether a command this process starts is born in it."""
    if group is None:
        return None, False
    return group.procs, group.holds_self


def _ran_out_of_memory(result: ProcessResult, box: Box | None) -> bool:
    """A boxed process with a memory limit that failed saying it ran out of memory."""
    if box is None or not box.limits.memory_bytes or result.exit_code in (0, None):
        return False
    err = open_run_file(result.stderr_path.parent, result.stderr_path.name)
    if err is None:
        return False
    try:
        with err:
            err.seek(max(result.stderr_from, err.seek(0, os.SEEK_END) - 4096))
            return out_of_memory(err.read().decode("utf-8", errors="replace"))
    except OSError:
        return False


def _written(*paths: Path) -> int:
    """Bytes in the process's output files (checked every WATCH_EVERY_SEC, so a process may
    write up to half a second's worth past the limit)."""
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            pass
    return total


def _pidfd(pid: int) -> int | None:
    """A pidfd lets the watcher sleep until the process exits instead of polling it."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def wait_exit(proc: subprocess.Popen, pidfd: int | None, timeout: float) -> None:
    """Block until `proc` exits or `timeout` (seconds, capped) passes."""
    timeout = max(0.0, min(timeout, WATCH_EVERY_SEC))
    if pidfd is not None:
        select.select([pidfd], [], [], timeout)
        return
    try:
        proc.wait(timeout=max(timeout, POLL_SEC))
    except subprocess.TimeoutExpired:
        pass


def _feed_stdin(proc: subprocess.Popen, text: str) -> None:
    assert proc.stdin is not None  # started with stdin=PIPE
    try:
        proc.stdin.write(text.encode("utf-8"))
        proc.stdin.close()
    except BrokenPipeError:
        pass

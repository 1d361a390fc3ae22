"""The box a run's processes run in: resource limits, and with bubblewrap (`bwrap`) a
filesystem and network of their own.

`box_command` turns a CommandSpec into one that starts as `bwrap GATE OPTIONS -- ARGV`: the
worker puts the box's first process under the limits before it starts ARGV
(runner_core.box_gate, `limit_process`), so nothing but bwrap is exec'd around a run's process:
- limits: RLIMIT_DATA (memory a process can map writable; not RLIMIT_AS, which Node's
  address-space reservations exceed at any sane value), RLIMIT_NOFILE, and the process count
  as a cgroup v1 pids group (runner_core.cgroups; RLIMIT_NPROC does not bind root);
- bwrap: its own pid namespace (other processes and their environments are not visible, and
  nothing it starts outlives it), no capabilities; with `fs_scope: workspace_only` the root
  read-only, a private /tmp, the data directory (database, broker socket, other runs, skill
  copies) replaced by an empty folder but for the run's own directory (read-write), the uv
  cache (for a command told to use it) and the `SKILL_RUNNER_SANDBOX_READ_PATHS`; with
  `network: off` (script steps only) a network namespace holding only its own loopback.
Without bwrap the limits alone apply, as `prlimit LIMITS -- sh -c 'join the pids group; exec
"$@"' box ARGV`. SKILL_RUNNER_SANDBOX=off turns all of it off; `auto` boxes with bwrap when it
works here and applies the limits alone when it does not.
"""

from __future__ import annotations

import functools
import logging
import os
import pwd
import re
import resource
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from runner_core.box_dev import options as dev_options
from runner_core.box_dev import prepared_dev
from runner_core.box_gate import BoxGate
from runner_core.cgroups import pids_root
from runner_core.egress import FORWARDER, PROXY_PORT, proxy_env
from runner_core.engines.base import CommandSpec
from runner_core.skills.model import Automation

REPO_ROOT = Path(__file__).resolve().parent.parent

log = logging.getLogger(__name__)

MODES = ("auto", "off")
# Where deploy/install-sandbox.sh unpacks Debian's bubblewrap (looked at before PATH).
LOCAL_BWRAP = Path(__file__).resolve().parent.parent / ".sandbox" / "usr" / "bin" / "bwrap"
# What a process that ran out of (limited) memory prints: CPython, Node/V8, glibc, C++, Rust.
_OUT_OF_MEMORY = re.compile(
    r"MemoryError|out of memory|Cannot allocate memory|bad_alloc|memory allocation of \d+ bytes"
)


@dataclass(frozen=True)
class Limits:
    """Per-process resource limits (0: none)."""

    memory_bytes: int = 0
    processes: int = 0
    open_files: int = 0


@dataclass(frozen=True)
class Box:
    """How the processes of one run are boxed."""

    limits: Limits
    bwrap: str | None = None  # None: limits only (bwrap off or not usable)
    run_dir: Path | None = None
    fs: bool = True  # workspace_only: the run directory is the only writable place
    hidden: tuple[Path, ...] = ()  # replaced by empty folders (other runs, the database)
    writable: tuple[Path, ...] = ()  # shared folders the run may write (uv's cache)
    readable: tuple[Path, ...] = ()  # folders under `hidden` or /tmp the run may read
    code: tuple[Path, ...] = ()  # the service's own files under /tmp or `private` (its venv)
    # the service user's own files: its home (engine logins, keys), its settings files (.env):
    # a folder replaced by an empty one, a file by /dev/null (bound nodev: unreadable)
    private: tuple[Path, ...] = ()
    network: bool = True  # False: no network but its own loopback
    # the run's egress proxy (runner_core.egress): its unix socket and the loopback ports the
    # box forwards to it as they are; None: no way out (network False) or the open network
    egress_socket: Path | None = None
    direct_ports: tuple[int, ...] = ()
    # script steps: the /dev made once for their boxes (runner_core.box_dev); None: bwrap's own
    dev: Path | None = None
    # started inside a network namespace lent by runner_core.netns: bwrap makes none
    netns: bool = False

    def for_engine(self) -> Box:
        """Engine CLIs talk to their model's endpoint: never cut from the network; they keep
        bwrap's own /dev, pseudo-terminals included."""
        return replace(self, network=True, dev=None)

    @property
    def cuts_network(self) -> bool:
        return self.bwrap is not None and not self.network


def plan_box(
    mode: str,
    limits: Limits,
    run_dir: Path,
    automation: Automation | None,
    hidden: tuple[Path, ...] = (),
    writable: tuple[Path, ...] = (),
    readable: tuple[Path, ...] = (),
    bwrap_setting: str = "",
    code: tuple[Path, ...] | None = None,
    data_dir: Path | None = None,
    private: tuple[Path, ...] | None = None,
) -> Box | None:
    """The box for a run's processes (None when the sandbox is off); `bwrap_setting` is
    SKILL_RUNNER_BWRAP (empty: .sandbox/ of the checkout, else PATH); `data_dir`: where the
    /dev of script boxes is made (None: each box builds its own)."""
    if mode == "off":
        return None
    automation = automation or Automation()
    bwrap = find_bwrap(bwrap_setting)
    if bwrap is None:
        return Box(limits)
    fs = automation.fs_scope == "workspace_only"
    private = private_paths() if private is None else private
    covered = (Path("/tmp"), *(path for path in private if path.is_dir()))
    return Box(
        limits,
        bwrap,
        run_dir=run_dir,
        fs=fs,
        hidden=hidden,
        writable=writable,
        readable=readable,
        code=tuple(
            path
            for path in (code or own_files())
            if any(path.is_relative_to(folder) for folder in covered)
        ),
        private=private,
        network=automation.network != "off",
        dev=prepared_dev(data_dir, bwrap) if fs and data_dir is not None else None,
    )


# The variable that marks a command filling uv's shared cache (a run's dependency step, which
# runs none of the skill's code). Any other command told of the cache reads what it holds: a
# skill's script could otherwise rewrite a package that later runs of every skill import.
FILLS_CACHE = "SKILL_RUNNER_FILLS_UV_CACHE"
_SCRATCH = re.compile(r"^builds-v\d+$")  # uv's throwaway build environments


@functools.cache
def find_bwrap(setting: str = "") -> str | None:
    """bwrap's path when it can build our box here (checked once per process), else None."""
    found = setting or (str(LOCAL_BWRAP) if LOCAL_BWRAP.is_file() else shutil.which("bwrap"))
    if not found:
        log.warning(
            "sandbox: bwrap not found (deploy/install-sandbox.sh); runs get resource limits only"
        )
        return None
    probe = [found, *_base_options(), "--unshare-net", "--ro-bind", "/", "/"]
    probe += ["--dev", "/dev", "--proc", "/proc", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("sandbox: bwrap does not start (%s); runs get resource limits only", exc)
        return None
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip()
        log.warning("sandbox: bwrap cannot box here (%s); runs get resource limits only", why)
        return None
    return found


def sandbox_status(
    mode: str, bwrap_setting: str = "", engine_network: str = "box"
) -> dict[str, object]:
    """What boxes runs on this host (for /healthz and the worker's start line); `network`: what
    an engine CLI reaches (`provider`: its provider and the skill's allowlist, through the
    run's egress proxy; `open`: everything)."""
    if mode == "off":
        return {"mode": "off", "box": None, "process_limit": None, "network": "open"}
    box = "bwrap" if find_bwrap(bwrap_setting) else None
    return {
        "mode": mode,
        "box": box,
        "process_limit": "cgroup" if pids_root() else "rlimit",
        "network": "provider" if box and engine_network == "box" else "open",
    }


def box_command(
    spec: CommandSpec,
    box: Box,
    pids_procs: Path | None,
    gate: BoxGate | None = None,
    *,
    in_group: bool = False,
) -> CommandSpec:
    """`spec` started inside `box`; `pids_procs` is the cgroup.procs file of its pids group
    (None: RLIMIT_NPROC instead, which binds only a non-root uid); `in_group`: the caller is in
    that group already, so the command is born there. A bwrap box starts behind `gate`: the
    caller applies `limit_process` to the box's first process, then opens it."""
    argv, env = list(spec.argv), spec.env
    if box.bwrap is not None:
        if gate is None:
            raise ValueError("a bwrap box starts behind a gate: its limits are applied there")
        if box.egress_socket is not None:  # the forwarder starts ARGV inside the box
            argv = [sys.executable, "-I", "-S", str(FORWARDER), str(box.egress_socket),
                    str(PROXY_PORT), *map(str, box.direct_ports), "--", *argv]  # fmt: skip
            env = {**env, **proxy_env()}
        argv = [box.bwrap, *gate.options(), *_bwrap_options(box, spec), "--", *argv]
        if box.cuts_network and box.egress_socket is None and "UV_CACHE_DIR" in env:
            env = {**env, "UV_OFFLINE": "1"}  # `uv run` without network: from its cache only
        return replace(spec, argv=argv, env=env)
    if pids_procs is not None and not in_group:
        join = f'echo $$ > {shlex.quote(str(pids_procs))} || exit 125; exec "$@"'
        argv = ["/bin/sh", "-c", join, "box", *argv]
    argv = _prlimit(box.limits, nproc=pids_procs is None) + argv
    return replace(spec, argv=argv, env=env)


def limit_process(
    pid: int, limits: Limits, pids_procs: Path | None, *, in_group: bool = False
) -> None:
    """Put process `pid` (a gated box's first process, before it starts the command) into the
    pids group (unless it was born `in_group`) and under the rlimits; what it starts inherits
    both. Raises OSError."""
    if pids_procs is not None and not in_group:
        fd = os.open(pids_procs, os.O_WRONLY)
        try:
            os.write(fd, str(pid).encode())
        finally:
            os.close(fd)
    for _name, which, value in _rlimits(limits, nproc=pids_procs is None):
        resource.prlimit(pid, which, (value, value))


def out_of_memory(stderr_tail: str) -> bool:
    """True when a failed process's last words say it ran out of memory."""
    return _OUT_OF_MEMORY.search(stderr_tail) is not None


def _prlimit(limits: Limits, nproc: bool) -> list[str]:
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return []
    options = [f"--{name}={value}" for name, _which, value in _rlimits(limits, nproc)]
    return [prlimit, *options, "--"] if options else []


def _rlimits(limits: Limits, nproc: bool) -> list[tuple[str, int, int]]:
    """(prlimit's name, resource, value) of each limit set, soft and hard alike."""
    wanted = [("data", resource.RLIMIT_DATA, limits.memory_bytes)]
    wanted.append(("nofile", resource.RLIMIT_NOFILE, limits.open_files))
    if nproc:
        wanted.append(("nproc", resource.RLIMIT_NPROC, limits.processes))
    chosen = []
    for name, which, value in wanted:
        hard = resource.getrlimit(which)[1]
        if value and hard != resource.RLIM_INFINITY:
            value = min(value, hard)  # an unprivileged worker cannot raise its hard limit
        if value:
            chosen.append((name, which, value))
    return chosen


def own_files() -> tuple[Path, ...]:
    """The service's checkout (its engine CLIs, node runners, bwrap) and its interpreter's
    environment and installation: a checkout under /tmp must stay reachable under the box's
    private /tmp, an interpreter in the service user's home (pyenv) under its hidden home."""
    return (REPO_ROOT, Path(sys.prefix), Path(sys.base_prefix))


# Where a deployment keeps the service's secrets in files (docs/operating.md): the `.env` of
# honcho and compose, the systemd units' EnvironmentFile folder
SETTINGS_FILES = (REPO_ROOT / ".env", REPO_ROOT / "deploy" / ".env", Path("/etc/skill-runner"))


def private_paths() -> tuple[Path, ...]:
    """What a box hides of the service user's files: its home (HOME and its passwd entry; not
    `/`), the settings files a deployment holds its secrets in, the `SKILL_RUNNER_CONFIG` file
    and a `.env` in the working directory. Runs have homes of their own."""
    homes = {os.environ.get("HOME", ""), os.path.expanduser("~" + _user_name())}
    found = [Path(home) for home in homes if home and Path(home).resolve() != Path("/")]
    config = os.environ.get("SKILL_RUNNER_CONFIG", "").strip()
    extra = (Path(config).expanduser(),) if config else ()
    for path in (*SETTINGS_FILES, Path.cwd() / ".env", *extra):
        if path.exists() and path not in found:
            found.append(path.absolute())
    return tuple(found)


def _user_name() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:  # a uid without a passwd entry (a container's): HOME alone
        return ""


def _base_options() -> list[str]:
    return ["--die-with-parent", "--unshare-pid", "--cap-drop", "ALL"]


def _bwrap_options(box: Box, spec: CommandSpec) -> list[str]:
    options = _base_options()
    if not box.network and not box.netns:
        options.append("--unshare-net")
    if not box.fs or box.run_dir is None:
        return [*options, "--bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    options += ["--ro-bind", "/", "/", *dev_options(box.dev), "--proc", "/proc", "--tmpfs", "/tmp"]
    folders = [path for path in box.private if path.is_dir()]
    for path in folders:
        options += ["--tmpfs", str(path)]
    for path in box.code:  # the engines and interpreters stay reachable; hidden parts follow
        options += ["--ro-bind-try", str(path), str(path)]
    for path in box.private:  # a settings file, also one in a checkout bound again just above
        if path not in folders and path.exists():
            options += ["--ro-bind", "/dev/null", str(path)]
    for path in box.hidden:
        options += ["--tmpfs", str(path)]
    for path in (*box.readable, *_find_links(spec.env)):
        options += ["--ro-bind-try", str(path), str(path)]
    for path in _told_to_use(box.writable, spec.env):
        path.mkdir(parents=True, exist_ok=True)  # made first: one made in the box would vanish
        options += ["--bind", str(path), str(path)]
        if spec.env.get(FILLS_CACHE) != "1":
            options += _sealed(path)
    if box.egress_socket is not None:  # the proxy's folder (under /tmp), at the same path
        folder = str(box.egress_socket.parent)
        options += ["--bind", folder, folder]
    run_dir = str(box.run_dir)
    options += ["--bind", run_dir, run_dir]
    for path in (*folders, *box.hidden):  # nothing written there outlives the box
        options += ["--remount-ro", str(path)]
    return [*options, "--chdir", str(spec.cwd)]


def _sealed(cache: Path) -> list[str]:
    """What a command may only read of a shared cache: each folder it holds but uv's scratch
    for builds (`uv run` writes its lock and temporary files at the top, and there)."""
    options = []
    for child in sorted(cache.iterdir()):
        if child.is_dir() and not child.is_symlink() and not _SCRATCH.match(child.name):
            options += ["--ro-bind", str(child), str(child)]
    return options


def _told_to_use(paths: tuple[Path, ...], env: dict[str, str]) -> list[Path]:
    """The shared writable folders the command's environment names (UV_CACHE_DIR): a command
    that is not told of uv's cache has no use for it, and one bind fewer starts faster."""
    values = set(env.values())
    return [path for path in paths if str(path) in values]


def _find_links(env: dict[str, str]) -> list[Path]:
    """uv's local package folders (UV_FIND_LINKS), which may sit under /tmp or the data dir."""
    paths = []
    for item in re.split(r"[\s,]+", env.get("UV_FIND_LINKS", "")):
        item = item.removeprefix("file://")
        if item and os.path.isabs(item):
            paths.append(Path(item))
    return paths

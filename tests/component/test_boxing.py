"""What the worker makes of a run's box (worker.execution.boxing): the network warning of a skill whose
network is off, and the directories a box hides. The box itself: tests/unit/test_sandbox.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_core.sandbox import Box, Limits
from runner_core.settings import load_settings

LIMITS = Limits(memory_bytes=2**30, processes=64, open_files=256)


def boxed() -> Box:
    """A box that cuts the network."""
    run = Path("/srv/data/runs/r1")
    return Box(LIMITS, bwrap="/opt/bwrap", run_dir=run, hidden=(Path("/srv/data"),), network=False)


def test_network_off_is_reported_where_it_was_not_enforced():
    from runner_core.skills.loader import load_skill
    from tests.helpers import TEST_SKILLS
    from worker.execution.boxing import network_warning

    script, prompt = load_skill(TEST_SKILLS / "box-probe"), load_skill(TEST_SKILLS / "echo-prompt")
    assert network_warning(boxed(), script, None) is None  # cut in the box
    assert "sandbox is off" in network_warning(None, script, None)["message"]
    assert "bubblewrap" in network_warning(Box(LIMITS), script, None)["message"]
    # an engine in a bwrap box reaches its provider only: enforced, unless the operator
    # keeps engines on the open network
    assert network_warning(boxed(), prompt, "codex") is None
    warning = network_warning(boxed(), prompt, "codex", engine_network="open")
    assert warning["code"] == "NETWORK_NOT_ENFORCED" and "codex" in warning["message"]
    assert "SKILL_RUNNER_ENGINE_NETWORK" in warning["message"]
    assert warning["details"] == {"network": "off", "entrypoint": "prompt", "engine": "codex"}


def test_a_box_hides_the_data_dir_and_a_work_dir_of_its_own(tmp_path):
    from worker.execution.boxing import hidden_dirs

    data = load_settings({"SKILL_RUNNER_DATA_DIR": str(tmp_path / "data")})
    assert hidden_dirs(data) == (tmp_path / "data",)  # runs/ is inside it
    work = load_settings(
        {
            "SKILL_RUNNER_DATA_DIR": str(tmp_path / "data"),
            "SKILL_RUNNER_WORK_DIR": str(tmp_path / "local"),
        }
    )
    assert hidden_dirs(work) == (tmp_path / "data", tmp_path / "local")


def gated_box(tmp_path: Path):
    """A real bwrap box (network off, workspace_only) for a run directory under tmp_path."""
    from runner_core.sandbox import find_bwrap, plan_box
    from runner_core.skills.model import Automation

    if find_bwrap() is None:
        pytest.fail("bubblewrap must work here: deploy/install-sandbox.sh installs it")
    run = tmp_path / "data" / "runs" / "r1"
    run.mkdir(parents=True)
    return run, plan_box("auto", LIMITS, run, Automation(), hidden=(tmp_path / "data",))


def test_a_boxed_command_runs_under_the_limits_set_at_its_gate(tmp_path):
    from runner_core.cgroups import pids_root
    from runner_core.engines.base import CommandSpec
    from worker.execution.supervisor import Watch, run_command

    run, box = gated_box(tmp_path)
    probe = "cat /proc/self/limits; grep pids /proc/self/cgroup; echo pid $$"
    spec = CommandSpec(["/bin/sh", "-c", probe], run, {"PATH": "/usr/bin:/bin"})
    result = run_command(spec, run / "out.txt", run / "err.txt", Watch(box=box))
    assert result.exit_code == 0, (run / "err.txt").read_text()
    lines = (run / "out.txt").read_text().splitlines()
    soft = {line[:26].strip(): line[26:].split()[0] for line in lines if line.startswith("Max ")}
    assert soft["Max data size"] == str(LIMITS.memory_bytes)
    assert soft["Max open files"] == str(LIMITS.open_files)
    if pids_root() is not None:  # the pids group counts processes, not RLIMIT_NPROC
        assert [line for line in lines if "pids:/" in line and "/skill-runner/worker-" in line]
    else:
        assert soft["Max processes"] == str(LIMITS.processes)
    assert lines[-1] == "pid 2"  # its own pid namespace: 1 is the box's init


def test_a_box_that_cannot_be_limited_never_starts_its_command(tmp_path, monkeypatch):
    from runner_core.engines.base import CommandSpec
    from worker.execution import supervisor

    def refuse(*_args, **_kwargs):
        raise PermissionError("no")

    monkeypatch.setattr(supervisor, "limit_process", refuse)
    run, box = gated_box(tmp_path)
    spec = CommandSpec(["/usr/bin/touch", "started"], run, {"PATH": "/usr/bin:/bin"})
    watch = supervisor.Watch(box=box)
    result = supervisor.run_command(spec, run / "out.txt", run / "err.txt", watch)
    assert result.exit_code != 0 and not (run / "started").exists()
    assert "cannot put the box under its limits" in (run / "err.txt").read_text()


def test_an_operator_can_forbid_network_on():
    import dataclasses

    from runner_core.skills.loader import load_skill
    from tests.helpers import TEST_SKILLS
    from worker.execution.boxing import automation_of, network_warning

    pkg = load_skill(TEST_SKILLS / "box-probe")
    manifest = pkg.loaded_manifest
    wide = dataclasses.replace(
        manifest, automation=dataclasses.replace(manifest.automation, network="on")
    )
    pkg = dataclasses.replace(pkg, manifest=wide)
    assert automation_of(pkg).network == "on"
    assert automation_of(pkg, "forbid").network == "off"
    assert network_warning(boxed(), pkg, None) is None  # allowed: open, as asked
    warning = network_warning(boxed(), pkg, None, network_on="forbid")
    assert (
        warning["code"] == "NETWORK_RESTRICTED" and "SKILL_RUNNER_NETWORK_ON" in warning["message"]
    )


HOLDER = """
import json, os, sys
from pathlib import Path
from runner_core.cgroups import hold_own_group, pids_root
from runner_core.engines.base import CommandSpec
from runner_core.sandbox import Limits, plan_box
from runner_core.skills.model import Automation
from worker.execution.supervisor import Watch, run_command

run = Path(sys.argv[1])
held = hold_own_group(pids_root(), 24)
box = plan_box("auto", Limits(2**30, 24, 256), run, Automation(), hidden=(run.parent,))
env = {"PATH": "/usr/bin:/bin"}
ran = {}
for name, script in {
    "cgroup": "grep pids /proc/self/cgroup",
    "bomb": "for i in $(seq 60); do sleep 5 & done; wait",
    "after": "echo ok",
}.items():
    spec = CommandSpec(["/bin/sh", "-c", script], run, env)
    result = run_command(spec, run / f"{name}.out", run / f"{name}.err", Watch(box=box))
    ran[name] = [result.exit_code, result.limit_exceeded, (run / f"{name}.out").read_text()]
ran["holder"] = open("/proc/self/cgroup").read()
held.empty()  # what the next command's begin does: kill what is left, wait until it is gone
ran["left"] = held.members()
ran["holder_in_group"] = str(os.getpid()) in held.procs.read_text().split()
print(json.dumps(ran))
"""


def test_a_pool_process_holding_its_pids_group_has_its_commands_born_there_and_limited(tmp_path):
    """What a prefork pool process does (hold_own_group at its start), in a process of its own:
    its boxed commands are born in its group (no join), the process limit still ends a fork
    bomb, the holder is never killed with what a command left, and it goes on."""
    import json

    from runner_core.cgroups import pids_root
    from tests.helpers import run_python

    if pids_root() is None:
        pytest.skip("no writable cgroup v1 pids hierarchy here: process limits use RLIMIT_NPROC")
    run, _box = gated_box(tmp_path)
    done = run_python(HOLDER, str(run), timeout=120)
    assert done.returncode == 0, done.stderr
    ran = json.loads(done.stdout)
    group = next(line for line in ran["holder"].splitlines() if ":pids:" in line).split(":")[2]
    assert group.endswith("/skill-runner/worker-" + group.rsplit("-", 1)[1])
    assert ran["cgroup"][0] == 0 and ran["cgroup"][2].strip().endswith(group)
    assert ran["bomb"][1] == "processes"  # refused forks: the limit holds
    assert ran["after"][:2] == [0, None] and ran["after"][2] == "ok\n"
    assert ran["left"] == [] and ran["holder_in_group"]  # emptied, but for the holder


def test_a_box_reads_nothing_of_the_service_users_home_nor_its_env_file(tmp_path, monkeypatch):
    """Outside /tmp (the box's /tmp is its own already), as a deployment's home and checkout
    are: an engine login in the home and the `.env` honcho reads are out of reach, while the
    interpreter (pyenv's, in the real home, here) still runs."""
    import shutil
    import sys
    import tempfile

    from runner_core.engines.base import CommandSpec
    from worker.execution.supervisor import Watch, run_command

    outside = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        home, app = outside / "home", outside / "app"
        (home / ".codex").mkdir(parents=True)
        (home / ".codex" / "auth.json").write_text('{"key": "sk-HOME"}')
        app.mkdir()
        (app / ".env").write_text("OPENAI_API_KEY=sk-DOTENV\n")
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.chdir(app)
        run, box = gated_box(tmp_path)
        probe = (
            f"cat {home}/.codex/auth.json {app}/.env; ls -A {home}; "
            f"{sys.executable} -c 'print(\"python runs\")'"
        )
        spec = CommandSpec(["/bin/sh", "-c", probe], run, {"PATH": "/usr/bin:/bin"})
        run_command(spec, run / "out.txt", run / "err.txt", Watch(box=box))
        out, err = (run / "out.txt").read_text(), (run / "err.txt").read_text()
        assert "sk-" not in out, out
        assert out.splitlines() == ["python runs"], (out, err)
        assert "auth.json: No such file" in err
        assert (app / ".env").read_text() == "OPENAI_API_KEY=sk-DOTENV\n"  # outside, untouched
    finally:
        shutil.rmtree(outside)

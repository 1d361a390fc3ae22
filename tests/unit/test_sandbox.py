"""The box a run's process is started in (runner_core.sandbox): the command it becomes, the
limits, and the settings that shape it. Real boxes are run by tests/integration/test_sandbox.py
and tests/engines/test_sandbox_engines.py."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from runner_core.box_gate import BoxGate
from runner_core.cgroups import (
    THREAD_HEADROOM,
    PidsGroup,
    command_group,
    end_command_group,
    hold_own_group,
)
from runner_core.engines.base import CommandSpec
from runner_core.sandbox import Box, Limits, box_command, out_of_memory, plan_box
from runner_core.settings import SettingsError, load_settings
from runner_core.skills.model import Automation

RUN = Path("/srv/data/runs/r1")
SPEC = CommandSpec(argv=["python", "probe.py"], cwd=RUN / ".skill" / "probe", env={"A": "1"})
LIMITS = Limits(memory_bytes=2**30, processes=64, open_files=256)


def boxed(**fields) -> Box:
    values = {
        "limits": LIMITS,
        "bwrap": "/opt/bwrap",
        "run_dir": RUN,
        "hidden": (Path("/srv/data"),),
        "network": False,
    }
    return Box(**{**values, **fields})


def pairs(argv: list[str], option: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == option]


@pytest.fixture
def gate():
    made = BoxGate()
    yield made
    made.close()


def test_a_workspace_only_box_hides_the_data_dir_and_binds_the_run_dir_last(tmp_path, gate):
    uv_cache = tmp_path / "uv-cache"
    spec = CommandSpec(SPEC.argv, SPEC.cwd, {"UV_CACHE_DIR": str(uv_cache)})
    argv = box_command(spec, boxed(writable=(uv_cache,)), None, gate).argv
    assert uv_cache.is_dir()  # made before the box: one made inside would vanish with it
    assert argv[0] == "/opt/bwrap"  # nothing exec'd before bwrap: the gate applies the limits
    assert argv[-3:] == ["--", "python", "probe.py"]
    assert argv[argv.index("--ro-bind") : argv.index("--ro-bind") + 3] == ["--ro-bind", "/", "/"]
    assert pairs(argv, "--tmpfs") == ["/tmp", "/srv/data"]
    assert pairs(argv, "--bind") == [str(uv_cache), str(RUN)]
    assert pairs(argv, "--remount-ro") == ["/srv/data"]
    assert argv.index("--bind") > argv.index("--tmpfs")  # over the hidden folder
    assert pairs(argv, "--chdir") == [str(SPEC.cwd)]
    assert "--unshare-net" in argv and "--unshare-pid" in argv
    assert pairs(argv, "--cap-drop") == ["ALL"]


def test_a_command_not_told_of_uvs_cache_does_not_get_it_bound(tmp_path, gate):
    uv_cache = tmp_path / "uv-cache"
    argv = box_command(SPEC, boxed(writable=(uv_cache,)), None, gate).argv
    assert pairs(argv, "--bind") == [str(RUN)] and not uv_cache.exists()


def test_a_bwrap_box_waits_at_its_gate_and_has_no_limits_in_its_argv(gate):
    argv = box_command(SPEC, boxed(), Path("/cg/run-1/cgroup.procs"), gate).argv
    info, block = pairs(argv, "--info-fd"), pairs(argv, "--block-fd")
    assert [int(info[0]), int(block[0])] == list(gate.child_fds[:2])
    assert not [a for a in argv if a.endswith("prlimit") or a == "/bin/sh"]
    with pytest.raises(ValueError, match="gate"):
        box_command(SPEC, boxed(), None)  # a bwrap box never starts without its limits


def test_a_box_started_in_a_lent_network_namespace_makes_none(gate):
    argv = box_command(SPEC, replace(boxed(), netns=True), None, gate).argv
    assert "--unshare-net" not in argv and "--unshare-pid" in argv


def test_an_engine_keeps_the_network_and_the_same_filesystem(gate):
    argv = box_command(SPEC, boxed().for_engine(), None, gate).argv
    assert "--unshare-net" not in argv and "--unshare-pid" in argv
    assert pairs(argv, "--bind")[-1] == str(RUN)


def test_fs_scope_other_than_workspace_only_binds_the_root_writable(gate):
    argv = box_command(SPEC, boxed(fs=False), None, gate).argv
    assert pairs(argv, "--bind") == ["/"] and "--tmpfs" not in argv


def test_limits_alone_come_first_and_the_pids_group_is_joined_before_the_command():
    argv = box_command(SPEC, Box(LIMITS), Path("/cg/run-1/cgroup.procs")).argv
    assert argv[0].endswith("prlimit")
    assert f"--data={2**30}" in argv and "--nofile=256" in argv
    assert not [a for a in argv if a.startswith("--nproc")]  # the pids group counts processes
    shell = argv.index("/bin/sh")
    assert "/cg/run-1/cgroup.procs" in argv[shell + 2] and 'exec "$@"' in argv[shell + 2]
    assert argv[shell + 4 :] == ["python", "probe.py"]


def test_a_command_born_in_its_pids_group_joins_nothing_and_has_no_rlimit_nproc():
    argv = box_command(SPEC, Box(LIMITS), Path("/cg/w/cgroup.procs"), in_group=True).argv
    assert argv[0].endswith("prlimit") and "/bin/sh" not in argv
    assert not [a for a in argv if a.startswith("--nproc")]
    assert argv[-2:] == ["python", "probe.py"]


def test_without_a_pids_group_the_process_limit_is_rlimit_nproc():
    argv = box_command(SPEC, Box(LIMITS), None).argv
    assert "--nproc=64" in argv and "/bin/sh" not in argv
    assert argv[-2:] == ["python", "probe.py"]


def test_uv_runs_offline_without_network_and_sees_its_local_wheels(gate):
    spec = CommandSpec(
        argv=["uv", "run"],
        cwd=RUN,
        env={"UV_CACHE_DIR": "/srv/data/uv-cache", "UV_FIND_LINKS": "/tmp/wheels"},
    )
    boxed_spec = box_command(spec, boxed(), None, gate)
    assert boxed_spec.env["UV_OFFLINE"] == "1"
    assert "/tmp/wheels" in pairs(boxed_spec.argv, "--ro-bind-try")
    assert "UV_OFFLINE" not in box_command(spec, boxed().for_engine(), None, gate).env


def test_sandbox_off_means_no_box():
    assert plan_box("off", LIMITS, RUN, Automation()) is None


@pytest.mark.parametrize(
    "words",
    [
        "Traceback ...\nMemoryError\n",
        "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
        "OSError: [Errno 12] Cannot allocate memory",
        "memory allocation of 1073741824 bytes failed",
    ],
)
def test_out_of_memory_words_are_recognised(words):
    assert out_of_memory(words)


def test_other_failures_are_not_out_of_memory():
    assert not out_of_memory("ValueError: bad input\n")


def test_a_pids_group_reports_a_refused_fork(tmp_path):
    group = PidsGroup(tmp_path, 32)
    assert (group.path / "pids.max").read_text() == "32"
    (group.path / "pids.events").write_text("max 0\n")
    assert not group.hit_limit()
    (group.path / "pids.events").write_text("max 3\n")
    assert group.hit_limit()


def test_a_worker_processs_group_is_reused_and_counts_refusals_per_command(tmp_path):
    first = command_group(tmp_path, 32)
    assert first.path.name.startswith("worker-")
    (first.path / "pids.events").write_text("max 3\n")  # the last command's fork bomb
    assert first.hit_limit()
    end_command_group(first, wait=True)
    again = command_group(tmp_path, 16)
    assert again is first and not again.hit_limit()  # refusals counted from its begin
    assert (again.path / "pids.max").read_text() == "16"
    beside = command_group(tmp_path, 16)  # another thread's command while it is held
    assert beside is not first and beside.path.name.startswith("run-")
    (beside.path / "pids.max").unlink()  # a plain folder here: cgroupfs removes its files
    end_command_group(beside, wait=False)
    end_command_group(again, wait=False)
    assert not beside.path.exists() and first.path.is_dir()


def test_sandbox_settings_defaults_and_a_bad_mode(tmp_path):
    settings = load_settings({"SKILL_RUNNER_DATA_DIR": str(tmp_path)})
    assert settings.sandbox == "auto" and settings.run_memory_max == 4 * 1024**3
    assert settings.run_processes_max == 1024 and settings.run_open_files_max == 4096
    with pytest.raises(SettingsError, match="SKILL_RUNNER_SANDBOX"):
        load_settings({"SKILL_RUNNER_DATA_DIR": str(tmp_path), "SKILL_RUNNER_SANDBOX": "on"})


def test_the_services_own_files_under_tmp_stay_reachable_and_hidden_parts_stay_hidden():
    checkout = Path("/tmp/clone/main")  # a checkout under /tmp: its CLIs, venv and data dir
    data = checkout / "data"
    box = plan_box(
        "auto",
        LIMITS,
        data / "runs" / "r1",
        Automation(),
        hidden=(data,),
        code=(checkout, Path("/opt/venv")),
        bwrap_setting="/bin/true",  # any runnable binary: only the plan is looked at
        private=(),
    )
    assert box is not None and box.code == (checkout,)  # outside /tmp: the root bind holds it
    gate = BoxGate()
    options = box_command(SPEC, box, None, gate).argv
    gate.close()
    tmpfs = [i for i, arg in enumerate(options) if arg == "--tmpfs"]
    code_bind = options.index(str(checkout)) - 1
    assert options[code_bind] == "--ro-bind-try"
    # after the private /tmp (else it would cover the checkout), before the data dir is hidden
    assert options[tmpfs[0] + 1] == "/tmp" and tmpfs[0] < code_bind < tmpfs[1]
    assert options[tmpfs[1] + 1] == str(data)


def test_a_process_holding_its_group_is_never_its_member_to_kill_and_its_threads_count(tmp_path):
    (tmp_path / f"worker-{os.getpid()}").mkdir()
    (tmp_path / f"worker-{os.getpid()}" / "cgroup.procs").write_text("")  # as cgroupfs has it
    held = hold_own_group(tmp_path, 32)
    assert held.holds_self and held.path.name == f"worker-{os.getpid()}"
    assert held.procs.read_text() == str(os.getpid())  # moved in (a plain file here)
    assert held.members() == []  # never killed with what a command left behind
    limit = int((held.path / "pids.max").read_text())
    assert 32 + THREAD_HEADROOM < limit < 32 + THREAD_HEADROOM + 200  # + its own threads
    group = command_group(tmp_path, 32)
    assert group is held and group.holds_self  # its commands are born in it
    end_command_group(group, wait=True)
    assert hold_own_group(tmp_path, 32) is held  # once per process


def test_in_a_pool_of_threads_each_thread_holds_a_group_of_its_own(tmp_path, monkeypatch):
    import threading

    from runner_core import cgroups

    monkeypatch.setattr(cgroups, "_per_thread", False)
    cgroups.hold_per_thread()
    groups: dict[int, cgroups.PidsGroup] = {}

    def one_command() -> None:
        tid = threading.get_native_id()
        folder = tmp_path / f"worker-{os.getpid()}-t{tid}"
        folder.mkdir()
        (folder / "tasks").write_text("")  # as cgroupfs has it
        group = command_group(tmp_path, 32)
        groups[tid] = group
        end_command_group(group, wait=True)
        assert command_group(tmp_path, 32) is group  # reused by this thread's next command
        end_command_group(group, wait=True)

    threads = [threading.Thread(target=one_command) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(groups) == 2 and len({id(g) for g in groups.values()}) == 2
    for tid, group in groups.items():
        assert group.holds_self and (group.path / "tasks").read_text() == str(tid)
    # the groups of threads that ended are removed with the next group made
    (tmp_path / f"worker-{os.getpid()}-t999999999").mkdir()
    cgroups._remove_dead_workers_groups(tmp_path)
    assert not (tmp_path / f"worker-{os.getpid()}-t999999999").exists()


def test_the_service_users_home_is_emptied_its_code_bound_again_and_settings_files_blanked(
    tmp_path,
):
    home, env_file = tmp_path / "home", tmp_path / "app" / ".env"
    (home / ".pyenv").mkdir(parents=True)
    env_file.parent.mkdir()
    env_file.write_text("OPENAI_API_KEY=sk-x\n")
    box = plan_box(
        "auto",
        LIMITS,
        RUN,
        Automation(),
        hidden=(Path("/srv/data"),),
        code=(tmp_path / "app", home / ".pyenv", Path("/opt/venv")),
        bwrap_setting="/bin/true",
        private=(home, env_file),
    )
    assert box is not None and box.code == (tmp_path / "app", home / ".pyenv")
    gate = BoxGate()
    argv = box_command(SPEC, box, None, gate).argv
    gate.close()
    assert pairs(argv, "--tmpfs") == ["/tmp", str(home), "/srv/data"]
    assert argv.index(str(home)) < argv.index(str(home / ".pyenv"))  # the interpreter, again
    blank = argv.index(str(env_file))
    assert argv[blank - 2 : blank] == ["--ro-bind", "/dev/null"]
    assert blank > argv.index(str(tmp_path / "app"))  # after the checkout is bound again
    assert pairs(argv, "--remount-ro") == [str(home), "/srv/data"]


def test_private_paths_are_the_home_and_the_settings_files_a_deployment_keeps(
    tmp_path, monkeypatch
):
    from runner_core.sandbox import private_paths

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKILL_RUNNER_CONFIG", str(tmp_path / "skill-runner.yaml"))
    (tmp_path / "skill-runner.yaml").write_text("LOG_LEVEL: INFO\n")
    (tmp_path / ".env").write_text("A=1\n")
    monkeypatch.chdir(tmp_path)
    found = private_paths()
    assert tmp_path / "home" in found and Path("/") not in found
    assert tmp_path / ".env" in found and tmp_path / "skill-runner.yaml" in found


def test_a_command_reads_uvs_cache_and_only_the_dependency_step_fills_it(tmp_path, gate):
    from runner_core.sandbox import FILLS_CACHE

    cache = tmp_path / "uv-cache"
    for name in ("archive-v0", "wheels-v8", "builds-v0"):
        (cache / name).mkdir(parents=True)
    told = CommandSpec(SPEC.argv, SPEC.cwd, {"UV_CACHE_DIR": str(cache)})
    argv = box_command(told, boxed(writable=(cache,)), None, gate).argv
    assert pairs(argv, "--bind") == [str(cache), str(RUN)]  # its lock and temporary files
    sealed = [str(cache / "archive-v0"), str(cache / "wheels-v8")]  # not uv's build scratch
    assert [p for p in pairs(argv, "--ro-bind") if p.startswith(str(cache))] == sealed
    filling = CommandSpec(SPEC.argv, SPEC.cwd, {**told.env, FILLS_CACHE: "1"})
    argv = box_command(filling, boxed(writable=(cache,)), None, gate).argv
    assert not [p for p in pairs(argv, "--ro-bind") if p.startswith(str(cache))]

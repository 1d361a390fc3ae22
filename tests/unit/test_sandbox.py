"""The box a run's process is started in (runner_core.sandbox): the command it becomes, the
limits, and the settings that shape it. Real boxes are run by tests/integration/test_sandbox.py
and tests/engines/test_sandbox_engines.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_core.cgroups import PidsGroup
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


def test_a_workspace_only_box_hides_the_data_dir_and_binds_the_run_dir_last(tmp_path):
    uv_cache = tmp_path / "uv-cache"
    argv = box_command(SPEC, boxed(writable=(uv_cache,)), None).argv
    assert uv_cache.is_dir()  # made before the box: one made inside would vanish with it
    bwrap = argv.index("/opt/bwrap")
    assert argv[-3:] == ["--", "python", "probe.py"]
    options = argv[bwrap:]
    assert options[options.index("--ro-bind") : options.index("--ro-bind") + 3] == [
        "--ro-bind",
        "/",
        "/",
    ]
    assert pairs(options, "--tmpfs") == ["/tmp", "/srv/data"]
    assert pairs(options, "--bind") == [str(uv_cache), str(RUN)]
    assert pairs(options, "--remount-ro") == ["/srv/data"]
    assert options.index("--bind") > options.index("--tmpfs")  # over the hidden folder
    assert pairs(options, "--chdir") == [str(SPEC.cwd)]
    assert "--unshare-net" in options and "--unshare-pid" in options
    assert pairs(options, "--cap-drop") == ["ALL"]


def test_an_engine_keeps_the_network_and_the_same_filesystem():
    argv = box_command(SPEC, boxed().for_engine(), None).argv
    assert "--unshare-net" not in argv and "--unshare-pid" in argv
    assert pairs(argv, "--bind")[-1] == str(RUN)


def test_fs_scope_other_than_workspace_only_binds_the_root_writable():
    argv = box_command(SPEC, boxed(fs=False), None).argv
    assert pairs(argv, "--bind") == ["/"] and "--tmpfs" not in argv


def test_limits_come_first_and_the_pids_group_is_joined_before_bwrap():
    argv = box_command(SPEC, boxed(), Path("/cg/run-1/cgroup.procs")).argv
    assert argv[0].endswith("prlimit")
    assert f"--data={2**30}" in argv and "--nofile=256" in argv
    assert not [a for a in argv if a.startswith("--nproc")]  # the pids group counts processes
    shell = argv.index("/bin/sh")
    assert "/cg/run-1/cgroup.procs" in argv[shell + 2] and 'exec "$@"' in argv[shell + 2]
    assert argv[shell + 4] == "/opt/bwrap"


def test_without_a_pids_group_the_process_limit_is_rlimit_nproc():
    argv = box_command(SPEC, Box(LIMITS), None).argv
    assert "--nproc=64" in argv and "/bin/sh" not in argv
    assert argv[-2:] == ["python", "probe.py"]


def test_uv_runs_offline_without_network_and_sees_its_local_wheels():
    spec = CommandSpec(
        argv=["uv", "run"],
        cwd=RUN,
        env={"UV_CACHE_DIR": "/srv/data/uv-cache", "UV_FIND_LINKS": "/tmp/wheels"},
    )
    boxed_spec = box_command(spec, boxed(), None)
    assert boxed_spec.env["UV_OFFLINE"] == "1"
    assert "/tmp/wheels" in pairs(boxed_spec.argv, "--ro-bind-try")
    assert "UV_OFFLINE" not in box_command(spec, boxed().for_engine(), None).env


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
    )
    assert box is not None and box.code == (checkout,)  # outside /tmp: the root bind holds it
    options = box_command(SPEC, box, None).argv
    tmpfs = [i for i, arg in enumerate(options) if arg == "--tmpfs"]
    code_bind = options.index(str(checkout)) - 1
    assert options[code_bind] == "--ro-bind-try"
    # after the private /tmp (else it would cover the checkout), before the data dir is hidden
    assert options[tmpfs[0] + 1] == "/tmp" and tmpfs[0] < code_bind < tmpfs[1]
    assert options[tmpfs[1] + 1] == str(data)

"""What the worker makes of a run's box (worker.execution.boxing): the network warning of a skill whose
network is off, and the directories a box hides. The box itself: tests/unit/test_sandbox.py."""

from __future__ import annotations

from pathlib import Path

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
    warning = network_warning(boxed(), prompt, "codex")
    assert warning["code"] == "NETWORK_NOT_ENFORCED" and "codex" in warning["message"]
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

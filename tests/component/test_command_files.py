"""The files a command is started with (an engine home's config, the dependency profile) are
written in the run: a later turn's config never goes through a link an earlier turn's agent
left at its home or at the file (worker.execution.supervisor)."""

from __future__ import annotations

import os
import sys

from runner_core.engines.base import CommandSpec
from worker.execution.supervisor import run_command


def test_a_turns_config_files_are_written_in_the_run_not_through_links(tmp_path):
    run, outside = tmp_path / "run", tmp_path / "outside"
    (run / "logs").mkdir(parents=True)
    outside.mkdir()
    (outside / "settings.json").write_text("untouched")
    os.symlink(outside, run / ".home")  # the home an earlier turn replaced
    (run / ".codex-home").mkdir()
    os.symlink(outside / "settings.json", run / ".codex-home" / "schema.json")
    files = {".home/.gemini/settings.json": '{"a": 1}', ".codex-home/schema.json": "{}"}
    spec = CommandSpec(argv=[sys.executable, "-c", "pass"], cwd=run, env={}, files=files)
    result = run_command(spec, run / "logs" / "stdout.txt", run / "logs" / "stderr.txt")
    assert result.exit_code == 0
    assert sorted(p.name for p in outside.iterdir()) == ["settings.json"]
    assert (outside / "settings.json").read_text() == "untouched"
    assert (run / ".home/.gemini/settings.json").read_text() == '{"a": 1}'
    assert not (run / ".codex-home/schema.json").is_symlink()

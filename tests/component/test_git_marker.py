"""The git marker of a run directory, as git itself reads it (runner_core.workspace)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from runner_core.workspace import write_git_marker


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_marker_makes_the_run_dir_a_git_root(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    (run_dir / "sub").mkdir(parents=True)
    write_git_marker(run_dir)
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=run_dir / "sub",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(top).resolve() == run_dir.resolve()
    assert not list(run_dir.glob(".git/**/.keep"))
    assert sorted(p.name for p in (run_dir / ".git").iterdir()) == ["HEAD", "objects", "refs"]
    write_git_marker(run_dir)  # idempotent
    subprocess.run(["git", "status"], cwd=run_dir, capture_output=True, check=True)

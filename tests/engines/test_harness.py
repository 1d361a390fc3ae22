"""The harness's own rules: a missing CLI fails under CI and skips elsewhere."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.engines.harness import make_run_dir, require_binary


@dataclass(frozen=True)
class FakeAdapter:
    name: str = "nothing"
    binary: str = "no-such-agent-cli-zqx"
    skill_dirs: tuple[str, ...] = (".agents/skills", ".claude/skills")


def test_missing_cli_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no-such-agent-cli-zqx CLI not installed"):
        require_binary(FakeAdapter())  # type: ignore[arg-type]


def test_missing_cli_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="deploy/install-engines.sh"):
        require_binary(FakeAdapter())  # type: ignore[arg-type]


def test_run_dir_is_a_git_repo_with_the_skill_in_every_skill_dir(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, FakeAdapter())  # type: ignore[arg-type]
    assert (run_dir / ".git").is_dir()
    for rel in FakeAdapter.skill_dirs:
        assert (run_dir / rel / "probe-skill" / "SKILL.md").is_file()

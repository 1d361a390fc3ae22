"""How a path an agent wrote in an artifact manifest becomes a run-relative one."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_core.artifact_manifest import run_relative

RUN = Path("/data/runs/r1")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("result/files.json", "result/files.json"),
        ("./artifacts//a.txt", "artifacts/a.txt"),
        ("artifacts\\win\\a.txt", "artifacts/win/a.txt"),
        ("/data/runs/r1/out/b.txt", "out/b.txt"),
        ("/data/runs/r1/./out/../out/b.txt", "out/b.txt"),
        ("/data/runs/r2/out/b.txt", None),  # another run
        ("/etc/hostname", None),
        ("../r2/out/b.txt", None),
        (".codex-home/auth.json", None),  # hidden: the engine's home
        ("artifacts/opencode.json", None),  # an engine config
        ("", None),
        ("   ", None),
        (".", None),
        ("a\x00b", None),
        (7, None),
        (None, None),
    ],
)
def test_run_relative(value, expected):
    assert run_relative(RUN, value) == expected

from __future__ import annotations

from pathlib import Path

import pytest

from runner_core.workspace import (
    create_run_dir,
    find_snapshot,
    install_skill_copy,
    snapshot_skill,
)


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    root = tmp_path / "skills" / "demo"
    (root / "assets").mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: demo\n---\n")
    (root / "assets" / "runner.json").write_text("{}")
    return root


def test_snapshot_goes_where_asked_and_is_found_there(tmp_path: Path, skill: Path) -> None:
    paths = create_run_dir(tmp_path / "runs", "r1")
    copy = snapshot_skill(skill, paths, "demo", ".agents/skills")
    assert copy == paths.root / ".agents/skills/demo" and (copy / "assets/runner.json").is_file()
    assert find_snapshot(paths.root, "demo", (".agents/skills",)) == copy
    assert find_snapshot(paths.root, "demo") is None  # not in .skill
    # an engine folder that already holds the snapshot is not copied again
    assert install_skill_copy(copy, paths, (".agents/skills",)) == [copy]


def test_script_snapshot_lives_in_dot_skill(tmp_path: Path, skill: Path) -> None:
    paths = create_run_dir(tmp_path / "runs", "r2")
    copy = snapshot_skill(skill, paths, "demo")
    assert copy == paths.root / ".skill" / "demo"
    assert find_snapshot(paths.root, "demo", (".gemini/skills",)) == copy


def test_a_write_that_fails_leaves_neither_half_a_file_nor_its_temp(tmp_path) -> None:
    import errno
    import os

    from runner_core.workspace import disk_full, write_json

    target = tmp_path / "result.json"
    os.symlink("/dev/full", tmp_path / "result.json.tmp")  # every write there: ENOSPC
    with pytest.raises(OSError) as caught:
        write_json(target, {"a": 1})
    assert caught.value.errno == errno.ENOSPC and disk_full(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    write_json(target, {"a": 1})  # the next write goes through
    assert target.read_text() == '{\n  "a": 1\n}'
    assert not disk_full(PermissionError(errno.EACCES, "denied")) and not disk_full(ValueError())

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from runner_core.results import read_result, stderr_tail, write_result
from runner_core.workspace import (
    RunPaths,
    append_log,
    create_run_dir,
    find_snapshot,
    install_skill_copy,
    open_run_file,
    read_log,
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


def test_a_write_that_fails_leaves_neither_half_a_file_nor_its_temp(tmp_path, monkeypatch) -> None:
    import errno

    from runner_core import workspace
    from runner_core.workspace import disk_full, write_json

    target = tmp_path / "result.json"

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(workspace.os, "write", full)
        with pytest.raises(OSError) as caught:
            write_json(target, {"a": 1})
    assert caught.value.errno == errno.ENOSPC and disk_full(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    write_json(target, {"a": 1})  # the next write goes through
    assert target.read_text() == '{\n  "a": 1\n}'
    assert not disk_full(PermissionError(errno.EACCES, "denied")) and not disk_full(ValueError())


@pytest.mark.parametrize("atomic", [True, False])
def test_a_write_replaces_a_link_planted_at_its_name(tmp_path, atomic) -> None:
    """A run may plant a symlink where the runner writes (the file or its `.tmp`): the runner
    writes a file of its own there, never through the link to what it points at."""
    import os

    from runner_core.workspace import write_file

    victim = tmp_path / "outside.txt"
    victim.write_text("untouched")
    target = tmp_path / "run" / "validation.json"
    target.parent.mkdir()
    os.symlink(victim, Path(f"{target}.tmp") if atomic else target)
    write_file(target, b"{}", atomic=atomic)
    assert victim.read_text() == "untouched"
    assert not target.is_symlink() and target.read_text() == "{}"


def test_open_run_file_reads_regular_files_only_and_through_no_link(tmp_path):
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "logs" / "stdout.txt").write_text("mine")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stderr.txt").write_text("secret")
    with open_run_file(run, "logs/stdout.txt") as fh:
        assert fh.read() == b"mine"
    os.symlink(outside / "stderr.txt", run / "logs" / "stderr.txt")
    assert open_run_file(run, "logs/stderr.txt") is None
    assert stderr_tail(RunPaths(run)) == ""  # a failed run's error quotes its stderr
    os.mkfifo(run / "events.jsonl")
    assert open_run_file(run, "events.jsonl") is None  # no wait for a writer
    os.rename(run / "logs", run / "old")
    os.symlink(outside, run / "logs")
    assert open_run_file(run, "logs/stderr.txt") is None
    assert open_run_file(run, "none/x.txt") is None


def test_the_result_is_written_in_the_run_not_through_a_link_it_left(tmp_path):
    run, outside = tmp_path / "run", tmp_path / "outside"
    run.mkdir()
    outside.mkdir()
    os.symlink(outside, run / "result")
    write_result(RunPaths(run), {"status": "succeeded"})
    assert list(outside.iterdir()) == []
    assert not (run / "result").is_symlink()
    assert read_result(RunPaths(run)) == {"status": "succeeded"}


def test_logs_are_appended_and_read_in_the_run_never_through_a_link(tmp_path):
    run, outside = tmp_path / "run", tmp_path / "outside"
    (run / "logs").mkdir(parents=True)
    outside.mkdir()
    (outside / "key.txt").write_text("secret")
    os.symlink(outside / "key.txt", run / "logs" / "stdout.txt")
    assert read_log(run / "logs" / "stdout.txt") == ""
    with append_log(run / "logs" / "stdout.txt") as fh:  # the next turn's output
        fh.write(b"turn 2")
    assert (outside / "key.txt").read_text() == "secret"
    assert read_log(run / "logs" / "stdout.txt") == "turn 2"
    assert read_log(run / "logs" / "stdout.txt", last=2) == " 2"
    os.rename(run / "logs", run / "old")
    os.symlink(outside, run / "logs")
    with append_log(run / "logs" / "key.txt") as fh:
        fh.write(b"more")
    assert (outside / "key.txt").read_text() == "secret"
    assert not (run / "logs").is_symlink()


def test_an_existing_run_directory_gets_real_folders_back_for_links_left_there(tmp_path):
    run, outside = tmp_path / "runs" / "r1", tmp_path / "outside"
    outside.mkdir()
    create_run_dir(run.parent, run.name)
    shutil.rmtree(run / "raw")
    os.symlink(outside / "missing", run / "raw")  # a dangling link failed the retry before
    create_run_dir(run.parent, run.name)
    assert (run / "raw").is_dir() and not (run / "raw").is_symlink()

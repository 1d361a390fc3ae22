"""Local scratch (runner_core.scratch): a run's files published to the shared run directory and
pulled back for a later turn, on the real file system."""

from __future__ import annotations

import errno
import os
import shutil

import pytest

from runner_core import scratch
from runner_core.settings import load_settings
from runner_core.workspace import RunPaths, create_run_dir


@pytest.fixture
def dirs(tmp_path):
    """(local run dir, shared run dir, request uploads) as a worker's first turn sees them."""
    local, shared, uploads = tmp_path / "work" / "r1", tmp_path / "runs" / "r1", tmp_path / "up"
    uploads.mkdir()
    (uploads / "input.txt").write_text("upload")
    scratch.enter(shared, local, uploads, resume=False)
    create_run_dir(local.parent, local.name)
    shutil.copy2(uploads / "input.txt", local / "uploads" / "input.txt")  # as a copy across disks
    return local, shared, uploads


def test_enter_makes_the_shared_directory_with_logs_and_linked_uploads(dirs):
    local, shared, uploads = dirs
    assert (shared / "logs").is_dir() and (local / "uploads").is_dir()
    assert os.path.samefile(shared / "uploads" / "input.txt", uploads / "input.txt")


def test_logs_are_written_in_the_shared_directory_while_the_rest_is_local(dirs):
    local, shared, _ = dirs
    paths = RunPaths(local, shared)
    assert paths.logs == shared / "logs" and paths.artifacts == local / "artifacts"
    assert paths.result_file == local / "result" / "result.json"
    assert RunPaths(local).logs == local / "logs"  # no scratch: everything in place


def test_publish_moves_the_files_links_unchanged_ones_and_leaves_logs_and_events(dirs):
    local, shared, uploads = dirs
    (shared / "logs" / "stdout.txt").write_text("live output")
    (shared / "events.jsonl").write_text('{"seq": 1}\n')
    (local / "logs" / "stdout.txt").write_text("never copied over the shared log")
    (local / "artifacts" / "out.txt").write_text("made by the run")
    (local / "result" / "result.json").write_text('{"status": "succeeded"}')
    (local / ".codex-home" / "sessions").mkdir(parents=True)
    (local / ".codex-home" / "sessions" / "s.jsonl").write_text("session")
    os.symlink("artifacts/out.txt", local / "latest")
    scratch.publish(local, shared)
    assert not local.exists()  # nothing left in scratch
    assert (shared / "artifacts" / "out.txt").read_text() == "made by the run"
    assert (shared / "result" / "result.json").is_file()
    assert (shared / ".codex-home" / "sessions" / "s.jsonl").read_text() == "session"
    assert os.readlink(shared / "latest") == "artifacts/out.txt"
    assert (shared / "logs" / "stdout.txt").read_text() == "live output"
    assert (shared / "events.jsonl").read_text() == '{"seq": 1}\n'
    # the upload is the request's own file, linked rather than copied a second time
    assert os.path.samefile(shared / "uploads" / "input.txt", uploads / "input.txt")
    assert sorted(os.listdir(shared)) == [
        ".codex-home", "artifacts", "bundle", "events.jsonl", "latest", "logs", "raw",
        "result", "uploads",
    ]  # fmt: skip


def test_a_later_turn_pulls_the_shared_files_and_its_publish_replaces_the_old_ones(dirs):
    local, shared, uploads = dirs
    (local / "artifacts" / "draft.txt").write_text("turn 1")
    (local / "input.json").write_text("{}")  # unchanged by the next turn
    (local / ".codex-home").mkdir()
    (local / ".codex-home" / "session.jsonl").write_text("turn 1\n")
    scratch.publish(local, shared)
    (shared / "logs" / "stdout.txt").write_text("turn 1 output")
    (shared / "events.jsonl").write_text("{}\n")
    session = shared / ".codex-home" / "session.jsonl"

    scratch.enter(shared, local, uploads, resume=True)  # the next turn, on any worker
    assert (local / "artifacts" / "draft.txt").read_text() == "turn 1"
    assert not (local / "logs").exists() and not (local / "events.jsonl").exists()
    assert (local / "uploads" / "input.txt").read_text() == "upload"
    (local / "artifacts" / "draft.txt").unlink()
    (local / "artifacts" / "final.txt").write_text("turn 2")
    (local / "result" / "result.json").write_text("{}")
    with (local / ".codex-home" / "session.jsonl").open("a") as fh:
        fh.write("turn 2\n")
    unchanged = shared / "uploads" / "input.txt"
    scratch.publish(local, shared)
    assert os.listdir(shared / "artifacts") == ["final.txt"]  # the folder is the turn's own
    assert session.read_text() == "turn 1\nturn 2\n"
    assert os.path.samefile(shared / "uploads" / "input.txt", unchanged)  # linked, not copied
    assert (shared / "input.json").read_text() == "{}"
    assert (shared / "logs" / "stdout.txt").read_text() == "turn 1 output"
    assert not (shared / scratch.STAGING).exists() and not (shared / scratch.REPLACED).exists()


def test_a_publish_cut_short_is_redone_whole_by_the_next(dirs):
    local, shared, _ = dirs
    (local / "artifacts" / "out.txt").write_text("done")
    (shared / scratch.STAGING / "artifacts").mkdir(parents=True)  # left by a killed process
    (shared / scratch.STAGING / "artifacts" / "half.txt").write_text("half")
    scratch.publish(local, shared)
    assert os.listdir(shared / "artifacts") == ["out.txt"]
    assert not (shared / scratch.STAGING).exists()
    scratch.publish(local, shared)  # already published: nothing to do


def test_a_full_disk_while_publishing_is_an_enospc_error_and_keeps_the_local_files(
    dirs, monkeypatch
):
    local, shared, _ = dirs
    (local / "artifacts" / "out.txt").write_text("done")

    def full(src, dst, **_kw):
        raise OSError(errno.ENOSPC, "No space left on device", dst)

    monkeypatch.setattr(shutil, "copy2", full)
    with pytest.raises(OSError) as caught:
        scratch.publish(local, shared)
    assert caught.value.errno == errno.ENOSPC
    assert (local / "artifacts" / "out.txt").is_file()
    assert not (shared / "artifacts" / "out.txt").exists()  # nothing half-moved into place
    assert not (shared / scratch.STAGING).exists()


def test_the_setting_puts_runs_the_run_pool_and_skill_copies_in_scratch(tmp_path):
    env = {"SKILL_RUNNER_DATA_DIR": str(tmp_path / "data")}
    default = load_settings(env)
    assert default.work_dir is None and default.work_runs_dir == default.runs_dir
    assert default.run_pool_dir == tmp_path / "data" / "run-pool"
    local = load_settings({**env, "SKILL_RUNNER_WORK_DIR": str(tmp_path / "scratch")})
    assert local.runs_dir == tmp_path / "data" / "runs"  # what the API serves stays shared
    assert local.work_runs_dir == tmp_path / "scratch" / "runs"
    assert local.run_pool_dir == tmp_path / "scratch" / "run-pool"  # renamed into scratch
    assert local.skill_copies_dir == tmp_path / "scratch" / "skill-copies"  # linked from there


def test_a_later_turn_links_no_upload_through_a_folder_link_an_earlier_turn_published(
    dirs, tmp_path
):
    _local, shared, uploads = dirs
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(shared / "uploads")
    os.symlink(outside, shared / "uploads")  # as a publish leaves a link the run made
    scratch.enter(shared, tmp_path / "work" / "r1", uploads, resume=True)
    assert list(outside.iterdir()) == []
    assert not (shared / "uploads").is_symlink()
    assert os.path.samefile(shared / "uploads" / "input.txt", uploads / "input.txt")


def test_publish_links_no_file_of_the_shared_directory_reached_through_a_link(dirs, tmp_path):
    """A file unchanged since the last publish is hard-linked from the shared directory, but
    never from behind a link the run left there (it would bring that file into the run)."""
    local, shared, _ = dirs
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "key.txt").write_text("the service's key")
    os.symlink(outside, shared / "data")  # published by an earlier turn
    (local / "data").mkdir()
    shutil.copy2(outside / "key.txt", local / "data" / "key.txt")  # same size and time
    (local / "data" / "key.txt").write_text("the service's key")
    os.utime(local / "data" / "key.txt", ns=(0, os.stat(outside / "key.txt").st_mtime_ns))
    scratch.publish(local, shared)
    assert not os.path.samefile(shared / "data" / "key.txt", outside / "key.txt")

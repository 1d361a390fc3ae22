"""runner_core.in_run: what the worker writes below a run directory goes into the run, whatever
link, FIFO or folder the run left on the way."""

from __future__ import annotations

import os
import threading

import pytest

from runner_core.in_run import (
    open_in_run,
    remove_in_run,
    run_folder,
    run_folder_if_there,
    write_in_run,
)


@pytest.fixture
def dirs(tmp_path):
    run, outside = tmp_path / "run", tmp_path / "outside"
    run.mkdir()
    outside.mkdir()
    return run, outside


@pytest.mark.parametrize("depth", ["result", "result/x", "result/x/y"])
def test_a_folder_link_at_any_depth_is_replaced_by_a_real_folder(dirs, depth):
    run, outside = dirs
    (run / depth).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, run / depth)
    write_in_run(run, f"{depth}/result.json", b"{}")
    assert list(outside.iterdir()) == []
    assert not (run / depth).is_symlink() and (run / depth / "result.json").read_bytes() == b"{}"


def test_a_file_where_a_folder_goes_is_replaced(dirs):
    run, _ = dirs
    (run / "raw").write_text("a file")
    write_in_run(run, "raw/out.txt", b"x", atomic=False)
    assert (run / "raw/out.txt").read_bytes() == b"x"


@pytest.mark.parametrize("atomic", [True, False])
def test_a_link_at_the_file_or_its_tmp_is_replaced_not_written_through(dirs, atomic):
    run, outside = dirs
    (outside / "victim").write_text("untouched")
    (run / "result").mkdir()
    os.symlink(outside / "victim", run / "result/out.json")
    os.symlink(outside / "victim", run / "result/out.json.tmp")
    write_in_run(run, "result/out.json", b"new", atomic=atomic)
    assert (outside / "victim").read_text() == "untouched"
    assert (run / "result/out.json").read_bytes() == b"new"
    assert not (run / "result/out.json").is_symlink()


@pytest.mark.timeout(10, method="thread")
@pytest.mark.parametrize("name", ["out.json", "out.json.tmp"])
def test_a_fifo_in_the_way_never_holds_the_writer(dirs, name):
    run, _ = dirs
    os.mkfifo(run / name)
    write_in_run(run, "out.json", b"{}")
    assert (run / "out.json").read_bytes() == b"{}"


@pytest.mark.timeout(10, method="thread")
def test_a_fifo_someone_reads_is_replaced_too(dirs):
    run, _ = dirs
    os.mkfifo(run / "log.txt")
    reader = threading.Thread(target=lambda: open(run / "log.txt", "rb").close(), daemon=True)
    reader.start()
    fd = open_in_run(run, "log.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.close(fd)
    assert (run / "log.txt").is_file()


def test_a_folder_at_the_file_s_name_is_replaced(dirs):
    run, _ = dirs
    (run / "manifest.json" / "inner").mkdir(parents=True)
    write_in_run(run, "manifest.json", b"{}")
    assert (run / "manifest.json").read_bytes() == b"{}"


def test_remove_follows_no_folder_link(dirs):
    run, outside = dirs
    (outside / "calls").mkdir()
    (outside / "calls" / "keep").write_text("x")
    os.symlink(outside, run / "linked")
    remove_in_run(run, "linked/calls")
    assert (outside / "calls" / "keep").exists()
    remove_in_run(run, "linked")  # the link itself goes
    assert not os.path.lexists(run / "linked") and (outside / "calls" / "keep").exists()


def test_folder_if_there_refuses_a_link_on_the_way(dirs):
    run, outside = dirs
    (run / "calls").symlink_to(outside)
    with pytest.raises(OSError):
        run_folder_if_there(run, "calls")
    fd = run_folder(run, "calls")  # made the run's own
    os.close(fd)
    assert (run / "calls").is_dir() and not (run / "calls").is_symlink()

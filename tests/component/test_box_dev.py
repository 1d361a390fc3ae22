"""The /dev made once for script boxes (runner_core/box_dev.py): its devices work in a box,
nothing in it can be changed from a box, each box has its own /dev/shm, and a folder left
unsealed is made again."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from runner_core import box_dev
from runner_core.engines.base import CommandSpec
from runner_core.sandbox import Limits, find_bwrap, plan_box
from runner_core.skills.model import Automation
from worker.execution.supervisor import Watch, run_command

LIMITS = Limits(memory_bytes=2**30, processes=64, open_files=256)
PROBE = """
echo x > /dev/null && echo null ok
test "$(head -c 8 /dev/urandom | wc -c)" = 8 && echo urandom ok
echo mine > /dev/shm/note && cat /dev/shm/note
ls /dev/shm
touch /dev/planted 2>/dev/null && echo planted
chmod 777 /dev 2>/dev/null && echo opened
rm -f /dev/null 2>/dev/null; test -c /dev/null && echo null kept
"""


@pytest.fixture
def bwrap() -> str:
    if os.geteuid() != 0:
        pytest.skip("device files are made as root only (elsewhere boxes keep bwrap's /dev)")
    found = find_bwrap()
    if found is None:
        pytest.fail("bubblewrap must work here: deploy/install-sandbox.sh installs it")
    box_dev.prepared_dev.cache_clear()
    return found


def boxed_run(data: Path, name: str, script: str) -> list[str]:
    run = data / "runs" / name
    run.mkdir(parents=True)
    box = plan_box("auto", LIMITS, run, Automation(), hidden=(data,), data_dir=data)
    assert box is not None and box.dev == data / "box" / "dev"
    spec = CommandSpec(["/bin/sh", "-c", script], run, {"PATH": "/usr/bin:/bin"})
    result = run_command(spec, run / "out.txt", run / "err.txt", Watch(box=box))
    assert result.exit_code == 0, (run / "err.txt").read_text()
    return (run / "out.txt").read_text().splitlines()


def test_a_script_box_uses_the_devices_and_changes_nothing(tmp_path, bwrap):
    data = tmp_path / "data"
    assert boxed_run(data, "r1", PROBE) == [
        "null ok",
        "urandom ok",
        "mine",
        "note",
        "null kept",
    ]
    # the next box has a /dev/shm of its own: the first one's note is gone
    assert boxed_run(data, "r2", "ls -A /dev/shm; echo end") == ["end"]
    folder = data / "box" / "dev"
    assert sorted(os.listdir(folder)) == sorted([*box_dev.DEVICES, *box_dev.LINKS, "shm"])
    info = folder.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (box_dev.OWNER, 0o555)


def test_engines_keep_bwraps_own_dev(tmp_path, bwrap):
    run = tmp_path / "data" / "runs" / "r1"
    run.mkdir(parents=True)
    box = plan_box("auto", LIMITS, run, Automation(), data_dir=tmp_path / "data")
    assert box is not None and box.dev is not None and box.for_engine().dev is None


def test_the_folder_is_made_once_and_an_unsealed_one_again(tmp_path, bwrap):
    data = tmp_path / "data"
    folder = box_dev.prepared_dev(data, bwrap)
    assert folder == data / "box" / "dev"
    made = folder.stat().st_ino
    box_dev.prepared_dev.cache_clear()
    assert box_dev.prepared_dev(data, bwrap) == folder and folder.stat().st_ino == made
    os.chmod(folder, 0o755)  # as a make cut short would leave it: not sealed
    (folder / "stray").write_text("x")
    box_dev.prepared_dev.cache_clear()
    assert box_dev.prepared_dev(data, bwrap) == folder
    assert not (folder / "stray").exists() and stat.S_IMODE(folder.stat().st_mode) == 0o555
    os.unlink(folder / "urandom")  # a sealed folder missing a device is made again too
    box_dev.prepared_dev.cache_clear()
    assert box_dev.prepared_dev(data, bwrap) == folder and (folder / "urandom").is_char_device()


def test_without_a_usable_folder_boxes_build_their_own(tmp_path, bwrap, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise PermissionError("mknod refused")

    monkeypatch.setattr(box_dev.os, "mknod", refuse)
    assert box_dev.prepared_dev(tmp_path / "data", bwrap) is None
    assert box_dev.options(None) == ["--dev", "/dev"]


def test_a_folder_removed_while_the_worker_runs_leaves_boxes_their_own(tmp_path, bwrap):
    data = tmp_path / "data"
    assert boxed_run(data, "r1", "touch /dev/planted 2>/dev/null || echo sealed") == ["sealed"]
    os.chmod(data / "box" / "dev", 0o755)
    shutil.rmtree(data / "box")  # an operator clearing the data directory
    assert boxed_run(data, "r2", "echo x > /dev/null && echo null ok") == ["null ok"]

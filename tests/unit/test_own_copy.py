"""runner_core.own_copy and copy_uploads: a run's inputs are its own files, never hard links of
the request's stored uploads, so a write in place reaches the run's copy only."""

from __future__ import annotations

import errno
import os

import pytest

from runner_core import own_copy as own_copy_module
from runner_core.own_copy import own_copy
from runner_core.workspace import RunPaths, copy_uploads, create_run_dir


def write_in_place(path, text: str) -> None:
    """What a skill does that rewrites its input through the same file (no new file)."""
    with open(path, "r+") as fh:
        fh.write(text)


def test_a_write_in_place_to_the_copy_leaves_the_source_unchanged(tmp_path):
    source, target = tmp_path / "stored.txt", tmp_path / "run.txt"
    source.write_text("original")
    os.chmod(source, 0o640)
    os.utime(source, ns=(1_000_000_000, 2_000_000_000))
    own_copy(source, target)
    assert not os.path.samefile(source, target)
    st = target.stat()
    assert (st.st_mode & 0o777, st.st_mtime_ns) == (0o640, 2_000_000_000)  # kept for publish
    write_in_place(target, "CHANGED!")
    assert source.read_text() == "original" and target.read_text() == "CHANGED!"


def test_what_was_at_the_target_is_replaced_never_written_through(tmp_path):
    source, victim = tmp_path / "new.txt", tmp_path / "victim.txt"
    source.write_text("new")
    victim.write_text("keep me")
    linked, planted, folder = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    os.link(victim, linked)  # e.g. a hard link an older worker made to the stored upload
    os.symlink(victim, planted)
    (folder / "sub").mkdir(parents=True)
    for target in (linked, planted, folder):
        own_copy(source, target)
        assert target.is_file() and not target.is_symlink() and target.read_text() == "new"
    assert victim.read_text() == "keep me"


def test_a_symlink_or_a_fifo_as_source_is_refused(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("x")
    os.symlink(real, tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")  # opening it for reading must not hang
    with pytest.raises(OSError) as link_error:
        own_copy(tmp_path / "link", tmp_path / "out1")
    with pytest.raises(OSError) as fifo_error:
        own_copy(tmp_path / "fifo", tmp_path / "out2")
    assert (link_error.value.errno, fifo_error.value.errno) == (errno.ELOOP, errno.EINVAL)


@pytest.mark.parametrize("refused", ["clone", "clone_and_range"])
def test_a_file_system_without_reflinks_gets_a_kernel_copy(tmp_path, monkeypatch, refused):
    def no_clone(*_args):
        raise OSError(errno.EOPNOTSUPP, "no reflinks here")

    def no_range(*_args):
        raise OSError(errno.EXDEV, "no copy_file_range here")

    monkeypatch.setattr(own_copy_module.fcntl, "ioctl", no_clone)
    if refused == "clone_and_range":
        monkeypatch.setattr(own_copy_module.os, "copy_file_range", no_range)
    source = tmp_path / "big.bin"
    data = os.urandom(3 * 1024 * 1024 + 7)
    source.write_bytes(data)
    own_copy(source, tmp_path / "copy.bin")
    assert (tmp_path / "copy.bin").read_bytes() == data


def test_a_full_disk_is_raised_and_leaves_no_half_copy(tmp_path, monkeypatch):
    def full(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(own_copy_module.fcntl, "ioctl", full)
    (tmp_path / "in.txt").write_text("x")
    with pytest.raises(OSError) as error:
        own_copy(tmp_path / "in.txt", tmp_path / "out.txt")
    assert error.value.errno == errno.ENOSPC and not (tmp_path / "out.txt").exists()


def uploads_of(root) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_copy_uploads_gives_the_run_its_own_files_and_a_retry_the_originals(tmp_path):
    request = tmp_path / "request"
    (request / "uploads" / "docs").mkdir(parents=True)
    (request / "uploads" / "docs" / "paper.txt").write_text("as sent")
    (request / "bound" / "inputs").mkdir(parents=True)
    (request / "bound" / "inputs" / "note.txt").write_text("bound")
    (request / "bound" / "docs").mkdir()
    (request / "bound" / "docs" / "paper.txt").write_text("the upload wins")
    paths = create_run_dir(tmp_path / "runs", "r1")
    sources = (request / "uploads", request / "bound")
    copy_uploads(sources, paths)
    expected = {"docs/paper.txt": "as sent", "inputs/note.txt": "bound"}
    assert uploads_of(paths.uploads) == expected
    write_in_place(paths.uploads / "docs" / "paper.txt", "CHANGED")
    write_in_place(paths.uploads / "inputs" / "note.txt", "CHANGED")
    assert uploads_of(request) == {
        "uploads/docs/paper.txt": "as sent",
        "bound/inputs/note.txt": "bound",
        "bound/docs/paper.txt": "the upload wins",
    }
    # the next attempt of the run, in the same directory, starts from the files as sent
    copy_uploads(sources, paths)
    assert uploads_of(paths.uploads) == expected


def test_copy_uploads_does_not_write_through_links_an_attempt_left(tmp_path):
    uploads, outside = tmp_path / "stored", tmp_path / "outside"
    (uploads / "docs").mkdir(parents=True)
    (uploads / "docs" / "a.txt").write_text("as sent")
    outside.mkdir()
    (outside / "a.txt").write_text("outside")
    paths = RunPaths(tmp_path / "run")
    paths.root.mkdir()
    os.symlink(outside, paths.root / "uploads")  # left by an earlier attempt's process
    copy_uploads((uploads, tmp_path / "no-bound-files"), paths)
    assert not paths.uploads.is_symlink()
    assert uploads_of(paths.uploads) == {"docs/a.txt": "as sent"}
    assert (outside / "a.txt").read_text() == "outside"

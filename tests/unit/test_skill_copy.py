"""Run snapshots linked from a read-only copy per skill version (runner_core.skill_copy)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from runner_core import skill_copy
from runner_core.skill_copy import SkillCopies, installed_signatures
from runner_core.skills.memo import tree_signature
from runner_core.workspace import create_run_dir, snapshot_skill


def make_skill(root: Path) -> Path:
    (root / "assets").mkdir(parents=True)
    (root / "scripts" / "lib").mkdir(parents=True)
    (root / "__pycache__").mkdir()
    (root / "SKILL.md").write_text("---\nname: demo\n---\nbody ünïcode\n", encoding="utf-8")
    (root / "assets" / "runner.json").write_text('{"a": 1}')
    (root / "scripts" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(root / "scripts" / "run.sh", 0o755)
    (root / "scripts" / "lib" / "data.bin").write_bytes(bytes(range(256)) * 10)
    (root / "__pycache__" / "x.pyc").write_bytes(b"cache")
    return root


def tree(root: Path) -> dict[str, tuple[bool, bytes | None, bool]]:
    """relative path -> (is dir, content, executable)"""
    out = {}
    for path in sorted(root.rglob("*")):
        mode = path.stat().st_mode
        out[path.relative_to(root).as_posix()] = (
            path.is_dir(),
            None if path.is_dir() else path.read_bytes(),
            bool(mode & stat.S_IXUSR),
        )
    return out


@pytest.fixture
def skill(tmp_path):
    return make_skill(tmp_path / "skills" / "demo")


def link_snapshot(copies: SkillCopies, source: Path, dest: Path, signature=None) -> bool:
    return copies.snapshot(source, "demo", signature or tree_signature(source), dest)


def test_linked_snapshot_matches_a_copy_and_shares_read_only_files(tmp_path, skill):
    copies = SkillCopies(tmp_path / "copies")
    linked = tmp_path / "runs" / "a" / ".agents" / "skills" / "demo"
    assert link_snapshot(copies, skill, linked)
    copied = snapshot_skill(skill, create_run_dir(tmp_path / "runs", "b"), "demo")
    assert tree(linked) == tree(copied)
    assert "__pycache__" not in tree(linked) and tree(linked)["scripts/run.sh"][2]
    second = tmp_path / "runs" / "c" / ".skill" / "demo"
    assert link_snapshot(copies, skill, second)
    a, b = (linked / "SKILL.md").stat(), (second / "SKILL.md").stat()
    assert a.st_ino == b.st_ino and a.st_nlink == 3  # master + two runs
    assert a.st_mode & 0o222 == 0  # read-only: a skill cannot write into a shared file
    assert (skill / "SKILL.md").stat().st_ino != a.st_ino  # never the installed files
    (linked / "scripts" / "new.txt").write_text("mine")  # the folders are the run's own
    assert not (second / "scripts" / "new.txt").exists()


def test_editing_the_skill_reaches_neither_old_snapshots_nor_its_version(tmp_path, skill):
    copies = SkillCopies(tmp_path / "copies")
    old_sig = tree_signature(skill)
    first = tmp_path / "r1" / ".skill" / "demo"
    assert link_snapshot(copies, skill, first, old_sig)
    (skill / "SKILL.md").write_text("---\nname: demo\n---\nedited\n")
    assert b"edited" not in (first / "SKILL.md").read_bytes()
    # a run still holding the old signature gets the old files, from the old copy
    again = tmp_path / "r2" / ".skill" / "demo"
    assert link_snapshot(copies, skill, again, old_sig)
    assert b"edited" not in (again / "SKILL.md").read_bytes()
    new = tmp_path / "r3" / ".skill" / "demo"
    assert link_snapshot(copies, skill, new)
    assert (new / "SKILL.md").read_text().endswith("edited\n")
    assert len(os.listdir(tmp_path / "copies")) == 1  # the old version's copy is gone
    assert b"edited" not in (first / "SKILL.md").read_bytes()  # runs keep their links


def test_an_unknown_signature_gets_no_snapshot(tmp_path, skill):
    copies = SkillCopies(tmp_path / "copies")
    stale = tree_signature(skill)
    (skill / "assets" / "runner.json").write_text('{"a": 2}')
    dest = tmp_path / "r" / ".skill" / "demo"
    assert not link_snapshot(copies, skill, dest, stale)  # the caller copies instead
    assert not dest.exists()


def test_a_copy_written_to_is_rebuilt_before_the_next_link(tmp_path, skill):
    copies = SkillCopies(tmp_path / "copies")
    first = tmp_path / "r1" / ".skill" / "demo"
    assert link_snapshot(copies, skill, first)
    target = first / "assets" / "runner.json"
    os.chmod(target, 0o644)  # as root could, or a skill that chmods first
    target.write_text('{"a": "tampered"}')
    second = tmp_path / "r2" / ".skill" / "demo"
    assert link_snapshot(copies, skill, second)
    assert (second / "assets" / "runner.json").read_text() == '{"a": 1}'


def test_link_limit_rebuilds_and_other_link_errors_fall_back(tmp_path, skill, monkeypatch):
    copies = SkillCopies(tmp_path / "copies")
    assert link_snapshot(copies, skill, tmp_path / "r0" / "demo")
    real_link, calls = os.link, []

    def limited(src, dst):
        calls.append(src)
        if len(calls) == 1:
            raise OSError(errno.EMLINK, "Too many links")
        return real_link(src, dst)

    monkeypatch.setattr(skill_copy.os, "link", limited)
    dest = tmp_path / "r1" / "demo"
    assert link_snapshot(copies, skill, dest)
    assert tree(dest) == tree(tmp_path / "r0" / "demo")
    assert (dest / "SKILL.md").stat().st_nlink == 2  # a fresh copy: itself + this run

    def cross_device(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(skill_copy.os, "link", cross_device)
    dest = tmp_path / "r2" / "demo"
    assert not link_snapshot(copies, skill, dest)
    assert not dest.exists()


def test_processes_share_one_copy_and_survive_its_removal(tmp_path, skill):
    first, other = SkillCopies(tmp_path / "copies"), SkillCopies(tmp_path / "copies")
    assert link_snapshot(first, skill, tmp_path / "r1" / "demo")
    (name,) = os.listdir(tmp_path / "copies")
    inode = (tmp_path / "copies" / name).stat().st_ino
    assert link_snapshot(other, skill, tmp_path / "r2" / "demo")  # loaded, not rebuilt
    assert (tmp_path / "copies" / name).stat().st_ino == inode
    assert other.prune({}) == 1  # the skill is gone (e.g. the sweep of another process)
    assert link_snapshot(first, skill, tmp_path / "r3" / "demo")  # rebuilt on demand
    assert (tmp_path / "r3" / "demo" / "SKILL.md").read_text() == (skill / "SKILL.md").read_text()


def test_prune_keeps_current_versions_and_live_builds(tmp_path, skill):
    copies = SkillCopies(tmp_path / "copies")
    assert link_snapshot(copies, skill, tmp_path / "r1" / "demo")
    dead = tmp_path / "copies" / f"{skill_copy.BUILDING}dead"
    live = tmp_path / "copies" / f"{skill_copy.BUILDING}live"
    dead.mkdir()
    live.mkdir()
    old = dead.stat().st_mtime - skill_copy.STALE_BUILD_SEC - 10
    os.utime(dead, (old, old))
    current = installed_signatures(tmp_path / "skills")
    assert set(current) == {"demo"}
    assert copies.prune(current) == 1  # only the dead build
    names = os.listdir(tmp_path / "copies")
    assert f"{skill_copy.BUILDING}live" in names and len(names) == 2
    (skill / "SKILL.md").write_text("changed")
    assert copies.prune(installed_signatures(tmp_path / "skills")) == 1
    assert os.listdir(tmp_path / "copies") == [f"{skill_copy.BUILDING}live"]

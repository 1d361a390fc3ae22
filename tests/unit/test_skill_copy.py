"""The in-memory skill copy behind run snapshots: same tree as a disk copy, tied to a signature."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from runner_core import skill_copy
from runner_core.skill_copy import cached_copy, read_copy
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
        rel = path.relative_to(root).as_posix()
        mode = path.stat().st_mode
        out[rel] = (path.is_dir(), None if path.is_dir() else path.read_bytes(),
                    bool(mode & stat.S_IXUSR))
    return out


def test_memory_snapshot_equals_disk_snapshot(tmp_path):
    source = make_skill(tmp_path / "skill")
    disk = create_run_dir(tmp_path / "runs", "disk")
    memory = create_run_dir(tmp_path / "runs", "memory")
    copy = cached_copy(source, tree_signature(source))
    assert copy is not None
    from_disk = snapshot_skill(source, disk, "demo", ".agents/skills")
    from_memory = snapshot_skill(source, memory, "demo", ".agents/skills", copy)
    assert from_memory == memory.root / ".agents" / "skills" / "demo"
    assert tree(from_memory) == tree(from_disk)
    assert "__pycache__" not in tree(from_memory)
    assert tree(from_memory)["scripts/run.sh"][2] is True  # the exec bit survives


def test_a_copy_is_read_once_per_signature_and_keeps_its_version(tmp_path):
    source = make_skill(tmp_path / "skill")
    old_sig = tree_signature(source)
    old = cached_copy(source, old_sig)
    assert cached_copy(source, old_sig) is old  # the second run reads nothing
    (source / "SKILL.md").write_text("---\nname: demo\n---\nedited\n")
    new_sig = tree_signature(source)
    assert new_sig != old_sig
    new = cached_copy(source, new_sig)
    assert new is not None and new is not old
    files = {rel: data for rel, _mode, data in new.files}
    assert files["SKILL.md"].endswith(b"edited\n")
    old_files = {rel: data for rel, _mode, data in old.files}
    assert b"edited" not in old_files["SKILL.md"]


def test_a_stale_signature_gets_no_copy(tmp_path):
    source = make_skill(tmp_path / "skill")
    stale = tree_signature(source)
    (source / "assets" / "runner.json").write_text('{"a": 2}')
    assert cached_copy(source, stale) is None


def test_large_or_linked_skills_are_copied_from_disk(tmp_path, monkeypatch):
    source = make_skill(tmp_path / "skill")
    assert read_copy(source, max_bytes=100) is None
    monkeypatch.setattr(skill_copy, "MAX_BYTES", 100)
    assert cached_copy(source, tree_signature(source)) is None
    linked = make_skill(tmp_path / "linked")
    (linked / "link.md").symlink_to(linked / "SKILL.md")
    assert read_copy(linked) is None
    paths = create_run_dir(tmp_path / "runs", "r")
    copied = snapshot_skill(linked, paths, "demo")  # no copy given: from disk, link followed
    assert (copied / "link.md").read_text() == (linked / "SKILL.md").read_text()

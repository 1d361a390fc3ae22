"""Memoized skill loading: reused while files are unchanged, reloaded on any change."""

from __future__ import annotations

import json
import os
import shutil

from runner_core.settings import REPO_ROOT
from runner_core.skills.memo import (
    load_skill_cached,
    load_snapshot_cached,
    relocated,
    tree_signature,
)


def copy_demo(tmp_path):
    dest = tmp_path / "demo-prime-number"
    shutil.copytree(REPO_ROOT / "skills" / "demo-prime-number", dest)
    return dest


def test_unchanged_skill_is_not_reloaded(tmp_path):
    root = copy_demo(tmp_path)
    assert load_skill_cached(root) is load_skill_cached(root)


def test_edited_file_is_seen_at_once(tmp_path):
    root = copy_demo(tmp_path)
    first = load_skill_cached(root)
    runner = root / "assets" / "runner.json"
    data = json.loads(runner.read_text())
    data["version"] = "1.0.1"
    runner.write_text(json.dumps(data))
    os.utime(runner, ns=(1, 1))  # even an edit that keeps an old mtime changes the size
    assert load_skill_cached(root).version == "1.0.1" != first.version


def test_swapped_directory_changes_the_signature(tmp_path):
    root = copy_demo(tmp_path)
    before = tree_signature(root)
    shutil.move(str(root), str(tmp_path / "old"))
    shutil.copytree(tmp_path / "old", root)
    assert tree_signature(root) != before


def test_bytecode_caches_do_not_invalidate(tmp_path):
    root = copy_demo(tmp_path)
    before = tree_signature(root)
    (root / "scripts" / "__pycache__").mkdir()
    (root / "scripts" / "__pycache__" / "run.cpython-311.pyc").write_bytes(b"x")
    assert tree_signature(root) == before


def test_relocated_package_reads_from_the_copy(tmp_path):
    root = copy_demo(tmp_path)
    pkg = load_skill_cached(root)
    copy = tmp_path / "copy"
    assert relocated(pkg, copy).root == copy and pkg.root == root


MARKER = "<!-- patched -->"


def linked_snapshot(source, dest, run_name):
    """A run's snapshot as the worker makes it: files linked from one read-only copy, SKILL.md
    replaced by a patched copy naming the run."""
    for path in source.rglob("*"):
        target = dest / path.relative_to(source)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(path, target)
    md = dest / "SKILL.md"
    text = md.read_text()
    md.unlink()
    md.write_text(f"{text}\n{MARKER}\nWrite the result to /runs/{run_name}/result.json\n")
    return dest


def test_snapshots_of_one_version_are_validated_once(tmp_path):
    source = copy_demo(tmp_path)
    first = load_snapshot_cached(linked_snapshot(source, tmp_path / "a" / source.name, "a"), MARKER)
    second_root = linked_snapshot(source, tmp_path / "b" / source.name, "b")
    second = load_snapshot_cached(second_root, MARKER)
    assert second.root == second_root and second.manifest is first.manifest  # not reloaded
    assert MARKER not in second.body and "/runs/" not in second.body  # the skill's own body
    assert second.health == "ok" and second.id == source.name


def test_a_snapshot_with_other_files_is_loaded_afresh(tmp_path):
    source = copy_demo(tmp_path)
    first = load_snapshot_cached(linked_snapshot(source, tmp_path / "a" / source.name, "a"), MARKER)
    changed = linked_snapshot(source, tmp_path / "b" / source.name, "b")
    runner = changed / "assets" / "runner.json"
    data = json.loads(runner.read_text())
    data["version"] = "9.9.9"
    runner.unlink()  # a new file, as a newer version's copy has
    runner.write_text(json.dumps(data))
    assert load_snapshot_cached(changed, MARKER).version == "9.9.9" != first.version

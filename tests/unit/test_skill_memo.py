"""Memoized skill loading: reused while files are unchanged, reloaded on any change."""

from __future__ import annotations

import json
import os
import shutil

from runner_core.settings import REPO_ROOT
from runner_core.skills.memo import load_skill_cached, relocated, tree_signature


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

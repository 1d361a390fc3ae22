"""Run directories made ahead of time: take, fill, stale signatures, dead builds."""

from __future__ import annotations

import os
import time
from pathlib import Path

from runner_core import run_pool
from runner_core.run_pool import BUILDING, RunDirPool, pool_key


def builder(marker: str, calls: list[Path] | None = None):
    def build(path: Path) -> bool:
        (path / "logs").mkdir(parents=True)
        (path / "marker.txt").write_text(marker)
        if calls is not None:
            calls.append(path)
        return True

    return build


def test_key_depends_on_skill_kind_and_signature():
    sig = (("SKILL.md", 1, 10, 100),)
    key = pool_key("demo", "script", sig)
    assert key.startswith("demo.")
    assert key == pool_key("demo", "script", sig)
    assert key != pool_key("demo", "engine", sig)
    assert key != pool_key("demo", "script", (("SKILL.md", 1, 11, 100),))
    assert key != pool_key("other", "script", sig)


def test_take_from_an_empty_pool_is_false(tmp_path):
    pool = RunDirPool(tmp_path / "pool", 2)
    assert pool.take("demo.a.b", tmp_path / "runs" / "r1") is False
    assert not (tmp_path / "runs" / "r1").exists()


def test_fill_then_take_moves_a_ready_directory(tmp_path):
    pool = RunDirPool(tmp_path / "pool", 2)
    assert pool.fill("demo.a.b", builder("v1")) == 2
    assert pool.ready("demo.a.b") == 2
    dest = tmp_path / "runs" / "r1"
    assert pool.take("demo.a.b", dest) is True
    assert (dest / "marker.txt").read_text() == "v1" and (dest / "logs").is_dir()
    assert pool.ready("demo.a.b") == 1
    assert pool.fill("demo.a.b", builder("v1")) == 1  # tops up to the size only
    assert pool.ready("demo.a.b") == 2


def test_take_never_overwrites_a_run_directory_with_content(tmp_path):
    pool = RunDirPool(tmp_path / "pool", 1)
    pool.fill("demo.a.b", builder("v1"))
    dest = tmp_path / "runs" / "r1"
    dest.mkdir(parents=True)
    (dest / "result.json").write_text("{}")  # e.g. a retried run
    assert pool.take("demo.a.b", dest) is False
    assert os.listdir(dest) == ["result.json"]
    assert pool.ready("demo.a.b") == 1


def test_each_ready_directory_is_taken_once(tmp_path):
    pool = RunDirPool(tmp_path / "pool", 1)
    pool.fill("demo.a.b", builder("v1"))
    assert pool.take("demo.a.b", tmp_path / "r1") is True
    assert pool.take("demo.a.b", tmp_path / "r2") is False
    assert not (tmp_path / "r2").exists()


def test_a_build_that_saw_the_skill_change_is_discarded(tmp_path):
    pool = RunDirPool(tmp_path / "pool", 2)
    assert pool.fill("demo.a.b", lambda path: builder("x")(path) and False) == 0
    assert pool.ready("demo.a.b") == 0
    assert os.listdir(tmp_path / "pool" / "demo.a.b") == []


def test_a_failing_build_leaves_nothing_half_made(tmp_path):
    pool = RunDirPool(tmp_path / "pool", 1)

    def broken(path: Path) -> bool:
        path.mkdir()
        (path / "half").write_text("x")
        raise OSError("disk full")

    try:
        pool.fill("demo.a.b", broken)
    except OSError:
        pass
    assert os.listdir(tmp_path / "pool" / "demo.a.b") == []


def test_fill_removes_other_signatures_of_the_same_skill_and_kind(tmp_path):
    pool = RunDirPool(tmp_path / "pool", 1)
    old = pool_key("demo", "script", ("v1",))
    new = pool_key("demo", "script", ("v2",))
    other_kind = pool_key("demo", "engine", ("v1",))
    other_skill = pool_key("demo-two", "script", ("v1",))
    for key in (old, other_kind, other_skill):
        pool.fill(key, builder("old"))
    pool.fill(new, builder("new"))
    assert sorted(os.listdir(tmp_path / "pool")) == sorted([new, other_kind, other_skill])


def test_dead_builds_are_removed_and_live_ones_kept(tmp_path, monkeypatch):
    pool = RunDirPool(tmp_path / "pool", 1)
    folder = tmp_path / "pool" / "demo.a.b"
    dead, live = folder / f"{BUILDING}dead", folder / f"{BUILDING}live"
    dead.mkdir(parents=True)
    live.mkdir()
    old = time.time() - run_pool.STALE_BUILD_SEC - 10
    os.utime(dead, (old, old))
    pool.fill("demo.a.b", builder("v1"))
    assert pool.ready("demo.a.b") == 1  # a build in progress is never counted or taken
    assert pool.prune_idle(3600) == 0  # the sweep: the key is in use, its dead build goes
    names = os.listdir(folder)
    assert f"{BUILDING}dead" not in names and f"{BUILDING}live" in names
    assert pool.ready("demo.a.b") == 1


def test_size_zero_turns_the_pool_off(tmp_path):
    calls: list[Path] = []
    pool = RunDirPool(tmp_path / "pool", 0)
    assert pool.fill("demo.a.b", builder("v1", calls)) == 0 and calls == []
    assert pool.take("demo.a.b", tmp_path / "r1") is False


def test_keys_left_idle_are_pruned(tmp_path):
    pool = RunDirPool(tmp_path / "pool", 1)
    pool.fill("gone.a.b", builder("v1"))
    pool.fill("live.a.b", builder("v1"))
    old = time.time() - 3600
    os.utime(tmp_path / "pool" / "gone.a.b", (old, old))
    assert pool.prune_idle(1800) == 1
    assert os.listdir(tmp_path / "pool") == ["live.a.b"]
    assert RunDirPool(tmp_path / "missing", 1).prune_idle(1) == 0

"""The engines of a composite (runner_core.openevo.engines): the llm skills it reaches through
nested composites, the engines all of them run on, and the warning for a model nothing uses."""

from __future__ import annotations

import json
from pathlib import Path

from runner_core.engines import RUNNABLE_ENGINES
from runner_core.openevo.engines import (
    LlmStep,
    common_engines,
    engine_options,
    model_ignored,
    steps_refusing,
)
from runner_core.skills import SkillRegistry

IO = {"input": {"type": "object", "properties": {}}, "output": {"type": "object"}}


def write(root: Path, name: str, mode: str, calls: list[str] = ()) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    spec = {"name": name, "description": "d", "category": "c", "mode": mode, **IO}
    if mode == "composite":
        spec["calls"] = list(calls)
        spec["pipeline"] = [{"step": c, "skill": c, "input": {}} for c in calls]
    (folder / "skill.json").write_text(json.dumps(spec))
    if mode == "llm":
        (folder / "prompt.md").write_text("Answer.")
    elif mode == "code":
        (folder / "index.py").write_text("def execute(i, c):\n    return {}\n")


def test_the_registry_gives_a_composite_the_engines_of_the_llm_skills_it_reaches(tmp_path):
    write(tmp_path, "tool", "code")
    write(tmp_path, "ask", "llm")
    write(tmp_path, "inner", "composite", ["tool", "ask"])
    write(tmp_path, "outer", "composite", ["inner", "tool", "ask"])
    write(tmp_path, "plain", "composite", ["tool"])
    registry = SkillRegistry(tmp_path)
    outer = registry.get("outer")
    assert outer.health == "ok", outer.errors
    assert [s.skill for s in outer.llm_steps] == ["ask"]  # reached twice, listed once
    assert outer.effective_engines == list(RUNNABLE_ENGINES)
    plain = {p.id: p for p in registry.list()}["plain"]
    assert (plain.llm_steps, plain.effective_engines) == ([], [])
    assert registry.get("tool").llm_steps is None  # only composites are looked at


def test_the_engines_all_steps_run_on_and_the_steps_refusing_one():
    steps = [
        LlmStep("a", Path("a"), ("codex", "claude", "qwen")),
        LlmStep("b", Path("b"), ("qwen", "claude")),
    ]
    assert common_engines(steps) == ["claude", "qwen"]  # in the first step's order
    assert common_engines([]) == []
    assert steps_refusing(steps, "codex") == ["b"]
    assert steps_refusing(steps, "claude") == []


def test_only_the_engine_options_go_to_the_steps():
    options = {"claude_config": {"a": 1}, "repair_rounds": 2, "timeout_sec": 5, "debug": True}
    assert engine_options(options) == {"claude_config": {"a": 1}, "repair_rounds": 2}
    assert engine_options(None) == {}


def test_a_model_is_ignored_only_where_no_engine_runs():
    warning = model_ignored(None, {"model": "m", "engine": None})
    assert warning["code"] == "MODEL_IGNORED" and warning["details"] == {"model": "m"}
    assert model_ignored("codex", {"model": "m"}) is None  # the run's engine uses it
    assert model_ignored(None, {"model": "m", "engine": "claude"}) is None  # its llm steps do
    assert model_ignored(None, {"model": None}) is None
    assert model_ignored(None, None) is None

"""The queue a run is sent to, and the task names both sides send and register."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

from runner_core import queues
from runner_core.queues import (
    ADVANCE_COMPOSITE,
    AUTO_REPLY,
    DELIVER_WEBHOOK,
    EXECUTE_RUN,
    RUN_QUEUES,
    SCRIPT_QUEUE,
    SWEEP,
    queue_for,
)
from runner_core.settings import REPO_ROOT
from runner_core.skills import SkillPackage
from runner_core.skills.model import Automation, Entrypoint, RunnerManifest


def package(entrypoint_type: str | None) -> SkillPackage:
    """A skill of that entrypoint type (None: its runner.json did not parse)."""
    manifest = RunnerManifest(
        id="demo",
        version="1.0.0",
        engines=("codex",),
        unsupported_engines=(),
        execution_modes=("auto",),
        entrypoint=Entrypoint(type=entrypoint_type or "prompt"),
        schemas={},
        artifacts=(),
        automation=Automation(),
        normalizer=None,
        fallback=None,
        runtime=None,
    )
    pkg = SkillPackage("demo", Path("/skills/demo"), manifest=manifest)
    return replace(pkg, manifest=None) if entrypoint_type is None else pkg


def test_engine_runs_go_to_their_engines_queue():
    for kind in ("prompt", "hybrid", "composite"):
        assert queue_for(package(kind), "codex") == "runs.codex"


def test_script_skills_share_the_script_queue_whatever_the_engine():
    assert queue_for(package("script"), "codex") == SCRIPT_QUEUE


def test_a_run_without_an_engine_goes_to_the_script_queue():
    assert queue_for(package("prompt"), None) == SCRIPT_QUEUE


def test_a_package_without_a_manifest_goes_to_the_script_queue():
    assert queue_for(package(None), "codex") == SCRIPT_QUEUE


def test_every_chosen_queue_is_one_the_workers_consume():
    assert queue_for(package("prompt"), "gemini") in RUN_QUEUES


def test_task_names_are_the_ones_in_flight_and_in_flower():
    # renaming one strands the messages queued under the old name
    assert queues.EXECUTE_RUN == "worker.tasks.execute_run"
    assert queues.AUTO_REPLY == "worker.tasks.auto_reply"
    assert queues.SWEEP == "worker.tasks.sweep"
    assert queues.DELIVER_WEBHOOK == "worker.tasks.deliver_webhook"
    assert queues.ADVANCE_COMPOSITE == "worker.composite.advance"


def test_no_task_name_is_spelled_out_outside_runner_core():
    spelled = [
        f"{path.relative_to(REPO_ROOT)}:{node.lineno}"
        for package_dir in ("api", "worker")
        for path in sorted((REPO_ROOT / package_dir).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in (EXECUTE_RUN, AUTO_REPLY, SWEEP, DELIVER_WEBHOOK, ADVANCE_COMPOSITE)
    ]
    assert spelled == []

"""The engines of a composite: the llm skills it reaches through its steps (nested composites
followed) and the engines every one of them runs on, the ones a job of the composite may name.
Code steps run no engine and take no part."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runner_core.engines import RETIRED
from runner_core.error_codes import ErrorCode
from runner_core.results import run_warning

if TYPE_CHECKING:  # runner_core.skills imports this module (through the registry's graph)
    from runner_core.skills.model import SkillPackage

ENGINE_ENTRYPOINTS = ("prompt", "hybrid")


@dataclass(frozen=True, slots=True)
class LlmStep:
    """An llm skill a composite reaches: its name, folder and the engines it runs on."""

    skill: str
    root: Path
    engines: tuple[str, ...]


def is_composite(pkg: SkillPackage) -> bool:
    return pkg.openevo is not None and pkg.openevo.mode == "composite"


def runs_on_engine(pkg: SkillPackage) -> bool:
    """A skill whose run is an engine CLI's turn (an llm skill, a prompt or hybrid skill)."""
    return pkg.manifest is not None and pkg.manifest.entrypoint.type in ENGINE_ENTRYPOINTS


def default_engine(pkg: SkillPackage) -> str | None:
    """The engine a run of `pkg` gets when none is named: its first engine not retired, as a
    job's is chosen (api.jobs.validate)."""
    return next((e for e in pkg.effective_engines if e not in RETIRED), None)


def llm_steps(pkg: SkillPackage, lookup: Callable[[str], SkillPackage | None]) -> list[LlmStep]:
    """The llm skills `pkg` calls, directly or through the composites it calls, each once in
    the order first reached; `lookup` finds an installed skill by name (None: none)."""
    found: list[LlmStep] = []
    seen = {pkg.id}
    todo = list(pkg.openevo.callees()) if pkg.openevo is not None else []
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        callee = lookup(name)
        if callee is None:
            continue
        if runs_on_engine(callee):
            engines = tuple(e for e in callee.effective_engines if e not in RETIRED)
            found.append(LlmStep(name, callee.root, engines))
        elif callee.openevo is not None:
            todo += callee.openevo.callees()
    return found


def common_engines(steps: list[LlmStep]) -> list[str]:
    """The engines every step runs on, in the first step's order ([] without steps)."""
    if not steps:
        return []
    return [e for e in steps[0].engines if all(e in s.engines for s in steps[1:])]


def steps_refusing(steps: list[LlmStep], engine: str) -> list[str]:
    """The names of the steps that do not run on `engine`."""
    return [s.skill for s in steps if engine not in s.engines]


def engine_options(options: dict | None) -> dict:
    """The runtime options of a composite's request that its llm steps' runs take: each
    `<engine>_config` and `repair_rounds` (the others are the composite's own)."""
    return {
        k: v for k, v in (options or {}).items() if k.endswith("_config") or k == "repair_rounds"
    }


def model_ignored(engine: str | None, payload: dict | None) -> dict | None:
    """The run warning MODEL_IGNORED when the request named a model and nothing in the run
    uses one: no engine for the run itself, none for its steps (a script skill, a composite
    without llm steps); None otherwise."""
    payload = payload or {}
    model = payload.get("model")
    if not model or engine or payload.get("engine"):
        return None
    return run_warning(
        ErrorCode.MODEL_IGNORED,
        f"model '{model}' was ignored: the skill runs no engine (no llm step)",
        {"model": model},
    )

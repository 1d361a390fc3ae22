"""Which box a run's processes get (runner_core.sandbox), and the warning a run records when
its skill's `automation.network` could not be enforced."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from runner_core.error_codes import ErrorCode
from runner_core.results import run_warning
from runner_core.sandbox import Box, Limits, plan_box
from runner_core.settings import Settings
from runner_core.skills import SkillPackage
from runner_core.skills.model import Automation
from worker.execution.contexts import EntryContext
from worker.execution.dependencies import install_dependencies
from worker.execution.script import uv_cache_dir


def automation_of(pkg: SkillPackage | None, network_on: str = "allow") -> Automation:
    """The skill's automation block (defaults when it has none); with `network_on` "forbid"
    (SKILL_RUNNER_NETWORK_ON) a skill's `network: on` is taken as `off`."""
    manifest = pkg.manifest if pkg is not None else None
    automation = manifest.automation if manifest is not None else Automation()
    if automation.network == "on" and network_on == "forbid":
        return replace(automation, network="off")
    return automation


def run_box(settings: Settings, run_dir: Path, pkg: SkillPackage | None) -> Box | None:
    """The box of a run's script steps (engine CLIs get `Box.for_engine()`); None when
    SKILL_RUNNER_SANDBOX=off."""
    limits = Limits(
        memory_bytes=settings.run_memory_max,
        processes=settings.run_processes_max,
        open_files=settings.run_open_files_max,
    )
    uv_cache = uv_cache_dir(settings.data_dir)
    return plan_box(
        settings.sandbox,
        limits,
        run_dir,
        automation_of(pkg, settings.network_on),
        hidden=hidden_dirs(settings),
        writable=(uv_cache,),
        readable=settings.sandbox_read_paths,
        bwrap_setting=settings.sandbox_bwrap,
        data_dir=settings.data_dir,
    )


def hidden_dirs(settings: Settings) -> tuple[Path, ...]:
    """What a box replaces by an empty folder: the data directory and the folders other runs
    work in (SKILL_RUNNER_WORK_DIR), outermost first, none inside another."""
    candidates = [settings.data_dir, settings.runs_dir]
    if settings.work_dir is not None:
        candidates.append(settings.work_dir)
    hidden: list[Path] = []
    for path in sorted(set(candidates), key=lambda p: (len(p.parts), str(p))):
        if not any(path.is_relative_to(outer) for outer in hidden):
            hidden.append(path)
    return tuple(hidden)


def fetch_dependencies(entry: EntryContext) -> None:
    """A script with runtime.dependencies: uv fetches them first (with network, as for an
    engine), so the script's own `uv run` works offline from the cache in a box without
    network, and deps uv cannot provide fail the run DEPENDENCIES_UNAVAILABLE however it is
    boxed (not SKILL_SCRIPT_FAILED, as if the script had run)."""
    runtime = entry.pkg.loaded_manifest.runtime
    if runtime and runtime.dependencies:
        install_dependencies(entry, runtime, uv_cache_dir(entry.settings.data_dir))


def boxes_engine(box: Box | None) -> bool:
    """True when an engine CLI runs in a bwrap box whose filesystem is the run's own."""
    return box is not None and box.bwrap is not None and box.fs


def network_warning(
    box: Box | None,
    pkg: SkillPackage,
    engine: str | None,
    engine_network: str = "box",
    network_on: str = "allow",
) -> dict[str, Any] | None:
    """NETWORK_NOT_ENFORCED when the skill asks for `network: off` (or an allowlist) and part
    of the run had more network anyway: no usable bwrap, the sandbox turned off, or engines
    kept on the open network by the operator (SKILL_RUNNER_ENGINE_NETWORK=open). Where it is
    enforced, `off` for an engine means its provider only (runner_core.egress)."""
    wanted = automation_of(pkg).network
    if wanted == "on" and network_on == "forbid":
        return run_warning(
            ErrorCode.NETWORK_RESTRICTED,
            "automation.network is 'on' but this service forbids it "
            "(SKILL_RUNNER_NETWORK_ON=forbid): the run was boxed as 'off'",
            {"network": wanted, "engine": engine},
        )
    if wanted not in ("off", "allowlist"):
        return None
    kind = pkg.loaded_manifest.entrypoint.type
    if kind == "composite":
        return None  # its steps are runs of their own, each with its warning
    if box is None:
        why = "the sandbox is off (SKILL_RUNNER_SANDBOX=off)"
    elif box.bwrap is None:
        why = "bubblewrap is not usable on this host"
    elif engine is not None and kind != "script" and engine_network == "open":
        why = f"the engine CLI ({engine}) keeps the whole network (SKILL_RUNNER_ENGINE_NETWORK)"
    else:
        return None
    return run_warning(
        ErrorCode.NETWORK_NOT_ENFORCED,
        f"automation.network is '{wanted}' but was not enforced: {why}",
        {"network": wanted, "entrypoint": kind, "engine": engine},
    )

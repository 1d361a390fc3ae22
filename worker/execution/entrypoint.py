"""Which entrypoint runs a skill: its script, the engine, or both (hybrid)."""

from __future__ import annotations

from worker.execution.boxing import fetch_dependencies
from worker.execution.contexts import EntryContext, EntryResult
from worker.execution.engine import run_engine
from worker.execution.hybrid import run_hybrid
from worker.execution.script import run_script
from worker.execution.turns import Resume


def run_entrypoint(entry: EntryContext, resume: Resume | None = None) -> EntryResult:
    """Run the skill by its `entrypoint.type`: script, hybrid, or prompt (the engine alone);
    `resume` continues an interactive run's engine session."""
    kind = entry.pkg.loaded_manifest.entrypoint.type
    if kind == "script":
        fetch_dependencies(entry)  # before a box without network
        return run_script(entry)
    if kind == "hybrid":
        return run_hybrid(entry, resume)
    return run_engine(entry, resume)

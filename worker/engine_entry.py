"""Prompt and hybrid entrypoints: render the prompt and drive the selected engine CLI."""
from __future__ import annotations

from typing import Any


def run_engine(executor, pkg) -> tuple[str | None, Any]:
    """Run the skill through its engine; returns (final text, envelope)."""
    from worker.executor import RunFailed
    raise RunFailed("ENGINE_UNAVAILABLE",
                    f"prompt entrypoints through engine '{executor.run.engine}' are not available yet")

"""Queue names: one per engine plus one for script skills, so one engine's flood of runs
cannot starve the others."""

from __future__ import annotations

from runner_core.engines import SUPPORTED_ENGINES

SCRIPT_QUEUE = "runs.script"
MAINTENANCE_QUEUE = "maintenance"
RUN_QUEUES = [SCRIPT_QUEUE] + [f"runs.{engine}" for engine in SUPPORTED_ENGINES]


def queue_for(engine: str | None, entrypoint_type: str) -> str:
    """The queue of a run: script skills share one; prompt/hybrid runs go to their engine's."""
    if entrypoint_type == "script" or not engine:
        return SCRIPT_QUEUE
    return f"runs.{engine}"


def task_label(skill_id: str, engine: str | None, request_id: str | None) -> dict[str, str]:
    """How a run's execute_run message shows in Flower (its kwargs column) and the worker's
    log: Celery's `kwargsrepr`. The name stays `worker.tasks.execute_run` (a `shadow` name
    would only replace it in some of Flower's events, so a run would change names)."""
    shown = {"skill": skill_id, "engine": engine or "script", "request_id": request_id}
    return {"kwargsrepr": repr(shown)}

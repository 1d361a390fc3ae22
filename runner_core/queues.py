"""What the API and the worker agree on about messages: the task names, the queues (one per
engine plus one for script skills, so one engine's flood of runs cannot starve the others), the
queue of a run and how its message is labelled."""

from __future__ import annotations

from typing import Final

from runner_core.engines import SUPPORTED_ENGINES
from runner_core.skills import SkillPackage

# Celery task names: messages in flight and Flower's filters carry them, so they never change
# (the worker registers its tasks under these; the API sends them by name).
EXECUTE_RUN: Final = "worker.tasks.execute_run"  # args [run_id]
AUTO_REPLY: Final = "worker.tasks.auto_reply"  # args [run_id, interaction_id]
SWEEP: Final = "worker.tasks.sweep"
DELIVER_WEBHOOK: Final = "worker.tasks.deliver_webhook"  # args [request_id, event]
ADVANCE_COMPOSITE: Final = "worker.composite.advance"  # args [parent_run_id]
UPGRADE_ENGINE: Final = "worker.engine_upgrades.upgrade_engine"  # args [upgrade_id]
RUN_TASKS: Final = (EXECUTE_RUN, AUTO_REPLY)  # the tasks whose first argument is a run id

SCRIPT_QUEUE = "runs.script"
MAINTENANCE_QUEUE = "maintenance"  # the sweep and engine upgrades
# callback deliveries: a receiver that does not answer holds a slot of this queue's workers,
# never the sweep's (or a run's, where a worker is given its own queues)
WEBHOOK_QUEUE = "webhooks"
RUN_QUEUES = [SCRIPT_QUEUE] + [f"runs.{engine}" for engine in SUPPORTED_ENGINES]
QUEUES = RUN_QUEUES + [MAINTENANCE_QUEUE, WEBHOOK_QUEUE]  # what a worker without -Q consumes
ADVANCE_QUEUE = SCRIPT_QUEUE  # a composite's `advance` holds no process: any worker takes it


def queue_for(pkg: SkillPackage, engine: str | None) -> str:
    """The queue of a run of `pkg` on `engine`: script skills (and a package whose runner.json
    did not parse) share one; prompt/hybrid/composite runs go to their engine's."""
    entrypoint_type = pkg.manifest.entrypoint.type if pkg.manifest else "script"
    if entrypoint_type == "script" or not engine:
        return SCRIPT_QUEUE
    return f"runs.{engine}"


def task_label(skill_id: str, engine: str | None, request_id: str | None) -> dict[str, str]:
    """How a run's execute_run message shows in Flower (its kwargs column) and the worker's
    log: Celery's `kwargsrepr`. The name stays EXECUTE_RUN (a `shadow` name would only replace
    it in some of Flower's events, so a run would change names)."""
    shown = {"skill": skill_id, "engine": engine or "script", "request_id": request_id}
    return {"kwargsrepr": repr(shown)}

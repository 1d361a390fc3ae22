"""Which box the services the bench starts put their runs in: the service's default on this
machine (SKILL_RUNNER_SANDBOX=auto: bwrap when it works here), unless the bench's own
environment says otherwise. Every figure's output names it; figures that explain a number
by the box also run a second service with SKILL_RUNNER_SANDBOX=off beside the first."""

from __future__ import annotations

import os

from runner_core.sandbox import find_bwrap, sandbox_status

OFF = {"SKILL_RUNNER_SANDBOX": "off"}


def boxed_by_default() -> bool:
    """True when the services the bench starts run every process in a bwrap box."""
    mode = os.environ.get("SKILL_RUNNER_SANDBOX", "auto")
    return mode != "off" and find_bwrap(os.environ.get("SKILL_RUNNER_BWRAP", "")) is not None


def describe() -> str:
    """One line for the bench's output."""
    mode = os.environ.get("SKILL_RUNNER_SANDBOX", "auto")
    status = sandbox_status(mode, os.environ.get("SKILL_RUNNER_BWRAP", ""))
    where = "set in the environment" if "SKILL_RUNNER_SANDBOX" in os.environ else "the default"
    if status["box"]:
        box = f"bwrap box, process limit by {status['process_limit']}"
    elif mode == "off":
        box = "no box"
    else:
        box = f"no bwrap here: resource limits only ({status['process_limit']})"
    return f"services run with SKILL_RUNNER_SANDBOX={mode} ({where}): {box}"

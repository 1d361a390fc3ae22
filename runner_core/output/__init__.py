"""The output chain: make an engine's output valid against a skill's output schema.

`run_output_chain` is the entry point; the worker injects the N1-N3 callables.
"""

from __future__ import annotations

from runner_core.output.chain import OutputOutcome, run_output_chain
from runner_core.output.commands import (
    NormalizeRequest,
    RepairFunction,
    RepairReply,
    RepairRequest,
    SkillCommand,
)
from runner_core.output.record import WARNING_CODES

__all__ = [
    "NormalizeRequest",
    "OutputOutcome",
    "RepairFunction",
    "RepairReply",
    "RepairRequest",
    "SkillCommand",
    "WARNING_CODES",
    "run_output_chain",
]

"""A composite's output checked against its output schema (worker.composite.workflow)."""

from __future__ import annotations

from pathlib import Path

from runner_core.skills import SkillPackage
from worker.composite.workflow import _checked


def test_output_too_deep_for_a_recursive_schema_fails_the_run_not_the_worker():
    lists = {"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}
    pkg = SkillPackage(id="deep", root=Path("."), output_schema={**lists, "$ref": "#/$defs/n"})
    data: list = []
    for _ in range(900):
        data = [data]
    status, error = _checked(pkg, data)
    assert status == "failed" and error is not None
    assert error["code"] == "OUTPUT_VALIDATION_FAILED"
    assert "nests too deeply" in error["details"]["validation_errors"][0]


def test_output_whose_pattern_backtracks_for_ever_fails_the_run_with_a_time_limit():
    text = {"type": "string", "pattern": "(a|a)*$"}
    schema = {"type": "object", "properties": {"text": text}}
    pkg = SkillPackage(id="slow", root=Path("."), output_schema=schema)
    status, error = _checked(pkg, {"text": "a" * 40 + "!"})
    assert status == "failed" and error is not None
    assert error["code"] == "OUTPUT_VALIDATION_FAILED"
    (message,) = error["details"]["validation_errors"]
    assert "took longer than 0.1 s to match" in message

"""demo-echo's output follows the spec's example catalogue (seed 003 §13): `{text, length,
normalized: bool, warnings}`, with the normalized text as an optional extra."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "skills/demo-echo/assets/output.schema.json").read_text()
)
SPEC_SHAPE = {"text": " Hi ", "length": 4, "normalized": True, "warnings": ["edges"]}


def errors(answer: dict) -> list[str]:
    return [e.message for e in Draft202012Validator(SCHEMA).iter_errors(answer)]


def test_an_answer_in_the_specs_shape_is_valid() -> None:
    assert errors(SPEC_SHAPE) == []
    assert errors({**SPEC_SHAPE, "normalized_text": "hi"}) == []


def test_normalized_is_a_boolean_not_the_text() -> None:
    assert errors({**SPEC_SHAPE, "normalized": "hi"}) == ["'hi' is not of type 'boolean'"]
    assert errors({k: v for k, v in SPEC_SHAPE.items() if k != "normalized"})

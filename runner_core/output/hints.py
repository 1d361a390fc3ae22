"""What a skill author can act on when no output passed the schema (seed 003 §7): the likeliest
cause in one sentence, and one line per problem (which field, what the schema wanted, what came)."""

from __future__ import annotations

import json
from typing import Any

_SHOWN = 5  # problems spelled out; the rest are counted


def failure_hints(errors: list[dict[str, Any]], raw_output_path: str) -> dict[str, Any]:
    """{likely_cause, hints}: `hints` names each problem, `likely_cause` what to look at first."""
    hints = [_hint(e) for e in errors[:_SHOWN]]
    if len(errors) > _SHOWN:
        hints.append(f"... and {len(errors) - _SHOWN} more (result/validation.json lists them all)")
    return {"likely_cause": _cause(errors, raw_output_path), "hints": hints}


def summary(errors: list[dict[str, Any]]) -> str:
    """The first problem in a few words, for the error message (UI, events, the result)."""
    if not errors:
        return ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f": {_hint(errors[0])}{more}"


def _hint(error: dict[str, Any]) -> str:
    where, kind = error.get("path", "$"), error.get("validator")
    expected, got = error.get("expected"), error.get("got")
    if kind == "required" and isinstance(got, dict) and isinstance(expected, list):
        missing = [k for k in expected if k not in got]
        return f"{where}: missing required field(s) {', '.join(missing)}"
    if kind == "additionalProperties" and isinstance(got, dict):
        return f"{where}: {error['message']} (the schema allows no other fields)"
    if kind == "type":
        return f"{where}: should be {_words(expected)}, got {_type_of(got)} {_short(got)}"
    if kind in ("enum", "const"):
        return f"{where}: should be one of {_short(expected)}, got {_short(got)}"
    if kind == "parse":
        return f"{where}: {error['message']}"
    return f"{where}: {error['message']}"


def _cause(errors: list[dict[str, Any]], raw_output_path: str) -> str:
    kinds = {e.get("validator") for e in errors}
    if kinds <= {"parse"}:
        return (
            f"No JSON came back: the agent's answer ({raw_output_path}) holds no JSON value. "
            "Check that SKILL.md asks it to end with the JSON object (or write the result file), "
            "and read its answer for an error or a refusal."
        )
    if any(e.get("path") == "$" and e.get("validator") == "type" for e in errors):
        return (
            f"The answer is not the shape the schema wants at its top level; compare "
            f"{raw_output_path} with assets/output.schema.json."
        )
    if kinds <= {"required"}:
        return (
            "Fields the schema requires are missing: SKILL.md may not name them, or name them "
            "differently than assets/output.schema.json."
        )
    return (
        "The answer's fields differ from assets/output.schema.json (names, types or allowed "
        f"values); the answer as it came is in {raw_output_path}."
    )


def _words(expected: Any) -> str:
    return " or ".join(expected) if isinstance(expected, list) else str(expected)


def _type_of(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."

"""A skill's schema `$ref` resolves only inside the schema: nothing is read from a file or URL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner_core.inputs import schema_errors
from runner_core.output.validate import build_validator, collect_errors
from runner_core.skills.schemas import check_skill_schema


def referring(ref: str) -> dict:
    return {"type": "object", "properties": {"p": {"$ref": ref}}}


@pytest.fixture
def host_file(tmp_path: Path) -> str:
    """A JSON file of the host a package must not read: its value would be echoed back."""
    path = tmp_path / "secret.json"
    path.write_text(json.dumps({"type": "string", "const": "TOPSECRET"}))
    return f"file://{path}"


def test_input_validation_reads_no_file_a_ref_names(host_file: str) -> None:
    errors = schema_errors(referring(host_file), {"p": 1})
    assert "TOPSECRET" not in json.dumps(errors)
    assert [e["validator"] for e in errors] == ["$ref"]
    assert "does not resolve" in errors[0]["message"]


def test_input_validation_fetches_no_url() -> None:
    # Port 9 (discard) on loopback: fetched, it would be a connection error, a 500 in the API
    errors = schema_errors(referring("http://127.0.0.1:9/x.json"), {"p": 1})
    assert [e["validator"] for e in errors] == ["$ref"]


def test_output_validation_reads_no_file_a_ref_names(host_file: str) -> None:
    errors = collect_errors(build_validator(referring(host_file)), {"p": 1})
    assert "TOPSECRET" not in json.dumps(errors)
    assert [e["validator"] for e in errors] == ["$ref"]


def test_local_refs_still_resolve() -> None:
    schema = {**referring("#/$defs/n"), "$defs": {"n": {"type": "integer"}}}
    assert schema_errors(schema, {"p": 1}) == []
    assert [e["validator"] for e in schema_errors(schema, {"p": "x"})] == ["type"]


@pytest.mark.parametrize(
    "ref", ["file:///etc/passwd", "https://example.com/s.json", "other.json#/a", "/etc/x.json"]
)
def test_a_package_schema_with_a_ref_to_another_document_is_refused(ref: str) -> None:
    check = check_skill_schema("parameter", "assets/parameter.schema.json", referring(ref))
    assert check.errors == [
        f"assets/parameter.schema.json: $ref {ref!r} points outside the schema; only refs "
        "inside it (#/$defs/...) resolve, nothing is fetched"
    ]


def test_a_ref_to_an_id_the_schema_declares_is_taken() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "type": "object",
        "properties": {"p": {"$ref": "addr.json"}},
        "$defs": {"a": {"$id": "addr.json", "type": "string"}},
    }
    assert check_skill_schema("parameter", "p.json", schema).errors == []
    assert schema_errors(schema, {"p": "x"}) == []
    assert [e["validator"] for e in schema_errors(schema, {"p": 1})] == ["type"]


def test_refs_that_fan_out_end_the_validation_at_its_time(monkeypatch) -> None:
    import runner_core.schema_ref_time as ref_time

    monkeypatch.setattr(ref_time, "REF_SECONDS", 0.2)
    # each definition names the next twice: 2**20 steps for any value (2**30: hours)
    defs = {
        f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
        for i in range(20)
    }
    schema = {**referring("#/$defs/d0"), "$defs": {**defs, "d20": {"type": "string"}}}
    errors = schema_errors(schema, {"p": "x"})
    assert [e["validator"] for e in errors] == ["$ref"]
    assert "following the schema's $refs" in errors[0]["message"]
    output = collect_errors(build_validator(schema), {"p": "x"})
    assert [e["validator"] for e in output] == ["$ref"]

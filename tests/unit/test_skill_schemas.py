"""The schema pre-check: one valid and one invalid fixture per rule, and the message it gives."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner_core.settings import REPO_ROOT
from runner_core.skills import load_skill
from runner_core.skills.loader import unquoted_colon_in_description
from runner_core.skills.schemas import check_skill_schema

DEMO = REPO_ROOT / "skills" / "demo-prime-number"


def one_field(spec: dict) -> dict:
    return {"type": "object", "properties": {"f": {"type": "string", **spec}}}


# (rule, kind, valid field, invalid field, expected message)
FIELD_RULES = [
    (
        "x-input-source",
        "input",
        {"x-input-source": "inline"},
        {"x-input-source": "url"},
        "properties.f: x-input-source must be 'file' or 'inline', got 'url'",
    ),
    (
        "extensions type",
        "input",
        {"extensions": [".txt", ".tar.gz"]},
        {"extensions": ".txt"},
        "properties.f: extensions must be a list of strings starting with '.'",
    ),
    (
        "extensions dot",
        "input",
        {"extensions": [".md"]},
        {"extensions": [".md", "csv"]},
        "properties.f: extensions must be a list of strings starting with '.' (e.g. \".txt\"), "
        "got ['.md', 'csv']",
    ),
    (
        "x-type",
        "output",
        {"x-type": "artifact"},
        {"x-type": "folder"},
        "properties.f: x-type must be 'artifact', 'file' or 'artifact-manifest', got 'folder'",
    ),
    (
        "x-type of Skill-Runner",
        "output",
        {"x-type": "artifact-manifest", "x-role": "listing"},
        {"x-type": "manifest"},
        "properties.f: x-type must be 'artifact', 'file' or 'artifact-manifest', got 'manifest'",
    ),
    (
        "x-role",
        "output",
        {"x-type": "artifact", "x-role": "report"},
        {"x-type": "artifact", "x-role": ""},
        "properties.f: x-role must be a non-empty string",
    ),
    (
        "x-filename slash",
        "output",
        {"x-type": "artifact", "x-filename": "digest.md"},
        {"x-type": "artifact", "x-filename": "sub/digest.md"},
        "properties.f: x-filename must be a plain file name (no '/' or '..'), got 'sub/digest.md'",
    ),
    (
        "x-filename dotdot",
        "output",
        {"x-type": "artifact", "x-filename": "..notes.md"},
        {"x-type": "artifact", "x-filename": ".."},
        "properties.f: x-filename must be a plain file name (no '/' or '..'), got '..'",
    ),
]


@pytest.mark.parametrize(
    "rule,kind,valid,invalid,message", FIELD_RULES, ids=[r[0] for r in FIELD_RULES]
)
def test_extension_rule(rule, kind, valid, invalid, message):
    assert check_skill_schema(kind, "s.json", one_field(valid)).errors == []
    errors = check_skill_schema(kind, "s.json", one_field(invalid)).errors
    assert len(errors) == 1 and errors[0].startswith(f"s.json: {message}"), errors


def test_schema_must_describe_an_object():
    assert check_skill_schema("parameter", "p.json", {"type": "object"}).errors == []
    errors = check_skill_schema("parameter", "p.json", {"type": "array"}).errors
    assert errors == ['p.json: the schema must describe an object ("type": "object")']


def test_schema_must_be_valid_json_schema():
    assert check_skill_schema("input", "i.json", one_field({})).errors == []
    errors = check_skill_schema("input", "i.json", one_field({"minLength": "three"})).errors
    assert errors == [
        "i.json: not a valid JSON Schema: properties.f.minLength: 'three' is not of type 'integer'"
    ]


def test_schema_is_checked_against_its_declared_draft():
    # A numeric exclusiveMinimum is valid from draft 6 on, but draft 4 wants a boolean.
    schema = {
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": 0}},
    }
    assert check_skill_schema("parameter", "p.json", schema).errors == []
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", **schema}
    errors = check_skill_schema("parameter", "p.json", draft4).errors
    assert errors == [
        "p.json: not a valid JSON Schema: properties.n.exclusiveMinimum: 0 is not of type 'boolean'"
    ]


def test_unknown_declared_draft_is_an_error():
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
    assert check_skill_schema("output", "o.json", draft7).errors == []
    unknown = {"$schema": "https://example.org/my-schema", "type": "object"}
    assert check_skill_schema("output", "o.json", unknown).errors == [
        "o.json: unknown $schema 'https://example.org/my-schema'; use a JSON Schema draft URI"
    ]


def test_every_problem_of_a_schema_is_listed():
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-input-source": "stdin"},
            "b": {"type": "string", "extensions": ["txt"]},
            "c": {"type": "strin"},
        },
    }
    errors = check_skill_schema("input", "i.json", schema).errors
    assert len(errors) == 3
    assert any("properties.c.type" in e for e in errors)


def test_keywords_without_effect_are_warnings():
    inline = check_skill_schema(
        "input", "i.json", one_field({"x-input-source": "inline", "extensions": [".txt"]})
    )
    assert inline.errors == [] and inline.warnings == [
        "i.json: properties.f: extensions only apply to file inputs"
    ]
    output = check_skill_schema("output", "o.json", one_field({"x-role": "report"}))
    assert output.warnings == ['o.json: properties.f: x-role ignored without "x-type": "artifact"']


def ref_field(definition: dict, **beside) -> dict:
    return {
        "type": "object",
        "properties": {"f": {"$ref": "#/$defs/f", **beside}},
        "$defs": {"f": {"type": "string", **definition}},
    }


def test_a_property_written_as_a_ref_is_checked_with_its_definition():
    """The runner reads a $ref'd field's keywords in its definition: they are checked there,
    and keywords beside the $ref count the definition's x-type."""
    bad = check_skill_schema(
        "output", "o.json", ref_field({"x-type": "artifact", "x-filename": ".."})
    )
    assert bad.errors == [
        "o.json: properties.f: x-filename must be a plain file name (no '/' or '..'), got '..'"
    ]
    beside = check_skill_schema(
        "output", "o.json", ref_field({"x-type": "artifact"}, **{"x-role": "report"})
    )
    assert beside.errors == [] and beside.warnings == []


@pytest.mark.parametrize(
    "line,flagged",
    [
        ('description: "Does X: when Y"', False),
        ("description: 'see a:b'", False),
        ("description: >\n  folded: text", False),
        ("description: Find primes up to a bound", False),
        ("description: see a:b", True),
        ("description: Does X: when Y", True),
    ],
)
def test_unquoted_colon_in_description(line, flagged):
    assert unquoted_colon_in_description(f"---\nname: x\n{line}\n---\nbody\n") is flagged


@pytest.fixture
def skill(tmp_path) -> Path:
    dest = tmp_path / "demo-prime-number"
    shutil.copytree(DEMO, dest)
    return dest


def test_loader_puts_schema_errors_in_the_package(skill):
    path = skill / "assets" / "output.schema.json"
    schema = json.loads(path.read_text())
    schema["properties"]["report"]["x-filename"] = "../primes.md"
    path.write_text(json.dumps(schema))
    pkg = load_skill(skill, strict=True)
    assert pkg.health == "invalid"
    assert pkg.errors == [
        "assets/output.schema.json: properties.report: x-filename must be a plain "
        "file name (no '/' or '..'), got '../primes.md'"
    ]


def test_loader_warns_about_a_colon_codex_cannot_parse(skill):
    md = skill / "SKILL.md"
    md.write_text(
        md.read_text()
        .replace(
            'description: "Find the prime numbers',
            "description: Primes a:b. Find the prime numbers",
        )
        .replace('end to end."', "end to end.")
    )
    pkg = load_skill(skill, strict=True)
    assert pkg.health == "ok", pkg.errors
    assert any("unquoted ':'" in w and "codex" in w for w in pkg.warnings)

"""Each engine's own structured-output flag, for real against the fake LLM: the request
carries the skill's schema in the engine's form, the answer is the structured one, a resumed
turn sends the schema again, and `native_schema: false` leaves it to the output chain."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from fake_llm import Script
from fake_llm.schema import sent_schema
from fake_llm.strict import strict_problem
from runner_core.engines import get_adapter
from runner_core.engines.native_schema import STRICT, TOOL, native_schema
from tests.engines.harness import PROBE_COMMAND, ScenarioResult

Scenario = Callable[..., ScenarioResult]
DIALECTS = {"codex": STRICT, "claude": TOOL, "qwen": TOOL}
SCHEMA = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["ok"]},
        "engine": {"type": "string", "minLength": 1},
        "report": {"type": "string", "x-type": "artifact", "x-filename": "r.md"},
    },
    "required": ["status", "engine", "report"],
    "additionalProperties": False,
}
ANSWER = {"status": "ok", "engine": "fake", "report": "artifacts/r.md"}
OFF = '{"off_schema": true}'


@pytest.fixture
def schema_path(tmp_path: Path) -> Path:
    path = tmp_path / "output.schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def model_requests(run: ScenarioResult) -> list[dict]:
    """The bodies of the run's model calls (not token counts or model lists)."""
    paths = ("/v1/responses", "/v1/messages", "/v1/chat/completions")
    return [
        r.body
        for r in run.requests
        if r.method == "POST" and r.path in paths and isinstance(r.body, dict)
    ]


def schemas_sent(run: ScenarioResult) -> list[dict | None]:
    """The schema each model call of the run carried, in order (None: none). Side calls
    without tools (a title, a summary) are left out."""
    return [sent_schema(body) for body in model_requests(run) if body.get("tools")]


@pytest.mark.parametrize("engine", DIALECTS)
def test_the_request_carries_the_converted_schema_and_the_answer_is_structured(
    engine: str, scenario: Scenario, schema_path: Path
) -> None:
    script = Script(command=PROBE_COMMAND, final_text=json.dumps(ANSWER))
    run = scenario(get_adapter(engine), script, output_schema_path=schema_path)
    assert run.output.error is None, run.stderr[-2000:]
    expected = native_schema(SCHEMA, DIALECTS[engine])
    sent = schemas_sent(run)
    assert sent and all(schema == expected for schema in sent), sent
    assert run.output.tool_calls, "the shell tool ran before the answer"
    assert run.output.parsed_json == ANSWER
    if engine == "codex":  # OpenAI strict mode: hence the strict form
        assert model_requests(run)[-1]["text"]["format"]["strict"] is True
    else:  # the answer came through the CLI's schema tool
        key = "structured_output" if engine == "claude" else "structured_result"
        assert run.output.envelope[key] == ANSWER


@pytest.mark.parametrize("engine", DIALECTS)
def test_a_resumed_turn_sends_the_schema_again(
    engine: str, scenario: Scenario, schema_path: Path
) -> None:
    adapter = get_adapter(engine)
    script = Script(tool=False, final_text=json.dumps(ANSWER))
    first = scenario(adapter, script, output_schema_path=schema_path)
    assert first.output.error is None, first.stderr[-2000:]
    second = scenario(
        adapter,
        script,
        prompt="Answer again.",
        run_dir=first.run_dir,
        session_id=first.output.session_id,
        output_schema_path=schema_path,
    )
    assert second.output.error is None, second.stderr[-2000:]
    assert second.output.session_id == first.output.session_id
    assert "Answer again." in second.request_text
    assert schemas_sent(second)[-1] == native_schema(SCHEMA, DIALECTS[engine])
    assert second.output.parsed_json == ANSWER


@pytest.mark.parametrize("engine", DIALECTS)
def test_native_schema_false_sends_no_schema_and_the_model_may_answer_off_it(
    engine: str, scenario: Scenario, schema_path: Path
) -> None:
    script = Script(tool=False, final_text=json.dumps(ANSWER), off_schema_rate=1.0)
    run = scenario(
        get_adapter(engine),
        script,
        config={"native_schema": False},
        output_schema_path=schema_path,
    )
    assert run.output.error is None, run.stderr[-2000:]
    assert all(schema is None for schema in schemas_sent(run))
    assert run.output.parsed_json == json.loads(OFF)  # left to the output chain


def test_codex_provider_decodes_on_schema_even_from_a_sloppy_model(
    scenario: Scenario, schema_path: Path
) -> None:
    script = Script(tool=False, final_text=json.dumps(ANSWER), off_schema_rate=1.0)
    run = scenario(get_adapter("codex"), script, output_schema_path=schema_path)
    assert run.output.error is None, run.stderr[-2000:]
    assert run.output.parsed_json == ANSWER


@pytest.mark.parametrize("engine", ["claude", "qwen"])
def test_the_cli_refuses_an_off_schema_answer_and_the_model_answers_again(
    engine: str, scenario: Scenario, schema_path: Path
) -> None:
    # off schema until the CLI's own check has refused it once ("... required property ...")
    script = Script(
        tool=False,
        final_text=OFF,
        when=({"contains": "must have required property", "final_text": json.dumps(ANSWER)},),
    )
    run = scenario(get_adapter(engine), script, output_schema_path=schema_path)
    assert run.output.error is None, run.stderr[-2000:]
    assert run.output.parsed_json == ANSWER
    assert len(schemas_sent(run)) >= 2  # the refusal and the second answer: one turn


# a skill's schema with what strict mode makes hard: $defs, a $ref with keywords beside it (an
# artifact, a description), nested objects, arrays of objects, optional fields, enums
RICH_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "path": {"type": "string"},
        "level": {"enum": ["low", "high"]},
        "finding": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 1},
                "level": {"$ref": "#/$defs/level", "description": "how bad"},
                "line": {"type": "integer"},
                "note": {"type": ["string", "null"]},
            },
            "required": ["title", "level"],
        },
    },
    "properties": {
        "report": {"$ref": "#/$defs/path", "x-type": "artifact", "x-filename": "r.md"},
        "findings": {"type": "array", "items": {"$ref": "#/$defs/finding"}},
        "meta": {
            "type": "object",
            "properties": {"by": {"type": "string"}, "at": {"type": "string", "format": "date"}},
            "required": ["by"],
        },
        "mode": {"type": "string", "enum": ["quick", "deep"]},
        "summary": {"type": "string"},
    },
    "required": ["report", "findings", "meta"],
    "additionalProperties": False,
}
# the model's answer in the strict form: every property written, null where it means absent
RICH_STRICT_ANSWER = {
    "report": "artifacts/r.md",
    "findings": [
        {"title": "a", "level": "low", "line": None, "note": None},
        {"title": "b", "level": "high", "line": 3, "note": "kept"},
    ],
    "meta": {"by": "fake", "at": None},
    "mode": None,
    "summary": None,
}
RICH_ANSWER = {
    "report": "artifacts/r.md",
    "findings": [
        {"title": "a", "level": "low", "note": None},  # note allows null: it stays
        {"title": "b", "level": "high", "line": 3, "note": "kept"},
    ],
    "meta": {"by": "fake"},
}


def test_codex_strict_form_of_a_rich_schema_is_accepted_and_its_nulls_map_back(
    scenario: Scenario, tmp_path: Path
) -> None:
    path = tmp_path / "rich.schema.json"
    path.write_text(json.dumps(RICH_SCHEMA))
    script = Script(tool=False, final_text=json.dumps(RICH_STRICT_ANSWER))
    run = scenario(get_adapter("codex"), script, output_schema_path=path)
    # the fake provider refuses, like OpenAI, a strict schema it cannot enforce (400)
    assert run.output.error is None, (run.output.error, run.stderr[-2000:])
    sent = schemas_sent(run)[-1]
    assert sent == native_schema(RICH_SCHEMA, STRICT)
    assert strict_problem(sent) is None
    assert run.output.parsed_json == RICH_ANSWER
    assert json.loads(run.output.final_text or "") == RICH_ANSWER
    jsonschema.validate(RICH_ANSWER, RICH_SCHEMA)


REF_SCHEMA = {
    "type": "object",
    "definitions": {"path": {"type": "string"}, "state": {"type": "string", "enum": ["ok"]}},
    "properties": {
        "report": {"$ref": "#/definitions/path", "x-type": "artifact", "x-filename": "r.md"},
        "status": {"$ref": "#/definitions/state", "description": "always ok"},
        "engine": {"type": "string"},
    },
    "required": ["report", "status", "engine"],
}


def test_codex_ref_with_keywords_beside_it_reaches_the_provider_alone(
    scenario: Scenario, tmp_path: Path
) -> None:
    path = tmp_path / "ref.schema.json"
    path.write_text(json.dumps(REF_SCHEMA))
    script = Script(tool=False, final_text=json.dumps(ANSWER))
    run = scenario(get_adapter("codex"), script, output_schema_path=path)
    assert run.output.error is None, (run.output.error, run.stderr[-2000:])
    sent = schemas_sent(run)[-1]
    assert sent is not None and strict_problem(sent) is None
    assert sent["properties"]["report"] == {"$ref": "#/definitions/path"}
    assert sent["properties"]["status"] == {"$ref": "#/definitions/state"}
    assert run.output.parsed_json == ANSWER


@pytest.mark.parametrize("engine", ["claude", "qwen"])
def test_the_tool_form_of_a_rich_schema_takes_its_answer(
    engine: str, scenario: Scenario, tmp_path: Path
) -> None:
    path = tmp_path / "rich.schema.json"
    path.write_text(json.dumps(RICH_SCHEMA))
    script = Script(tool=False, final_text=json.dumps(RICH_ANSWER))
    run = scenario(get_adapter(engine), script, output_schema_path=path)
    assert run.output.error is None, (run.output.error, run.stderr[-2000:])
    sent, expected = schemas_sent(run)[-1], native_schema(RICH_SCHEMA, TOOL)
    assert sent is not None and expected is not None
    # (qwen leaves the top level's additionalProperties out of the tool it offers)
    assert (sent["properties"], sent["$defs"]) == (expected["properties"], expected["$defs"])
    assert run.output.parsed_json == RICH_ANSWER

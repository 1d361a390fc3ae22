"""Each engine's own structured-output flag, for real against the fake LLM: the request
carries the skill's schema in the engine's form, the answer is the structured one, a resumed
turn sends the schema again, and `native_schema: false` leaves it to the output chain."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from fake_llm import Script
from fake_llm.schema import sent_schema
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
